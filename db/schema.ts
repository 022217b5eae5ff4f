import { sql } from "drizzle-orm";
import {
  bigint,
  bigserial,
  boolean,
  date,
  index,
  integer,
  jsonb,
  pgTable,
  primaryKey,
  text,
  timestamp,
  uniqueIndex,
  uuid,
} from "drizzle-orm/pg-core";

const createdAt = () => timestamp({ withTimezone: true, mode: "date" }).notNull().defaultNow();

/** A tenant is one publisher. */
export const tenants = pgTable("tenants", {
  id: text().primaryKey(),
  isDefault: boolean().notNull().default(false),
  /** Upstream identity provider: issuer (`iss`) and JWKS URL; null when none is connected. */
  idpIssuer: text(),
  idpJwksUrl: text(),
  /** Origin (`https://id.news.example`) of the links this tenant's mail carries; null: see docs/security.md. */
  publicUrl: text(),
  createdAt: createdAt(),
});

/** Host names that select a tenant; the default tenant answers every other host. */
export const tenantHosts = pgTable("tenant_hosts", {
  host: text().primaryKey(),
  tenantId: text()
    .notNull()
    .references(() => tenants.id, { onDelete: "cascade" }),
});

/**
 * Per-tenant settings of an outside service (src/outside): one row per (tenant, service), the
 * JSON settings sealed with a key derived from SVC_SECRET (secrets are read back to call the
 * service, so they are encrypted rather than hashed; `env:NAME` references keep them out entirely).
 */
export const tenantServices = pgTable(
  "tenant_services",
  {
    tenantId: text()
      .notNull()
      .references(() => tenants.id, { onDelete: "cascade" }),
    service: text().notNull(),
    config: text().notNull(),
    updatedAt: timestamp({ withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.service] })],
);

export const sites = pgTable(
  "sites",
  {
    tenantId: text()
      .notNull()
      .references(() => tenants.id, { onDelete: "cascade" }),
    id: text().notNull(),
    disabled: boolean().notNull().default(false),
    liveVersion: integer(),
    previewVersion: integer(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.id] })],
);

/** Every deployed or staged site document, versioned per site. */
export const siteDocuments = pgTable(
  "site_documents",
  {
    tenantId: text().notNull(),
    siteId: text().notNull(),
    version: integer().notNull(),
    stage: text({ enum: ["live", "preview"] }).notNull(),
    /** The validated document, as data: what compiles, and what diffs compare. */
    document: jsonb().notNull(),
    /** The document as its author wrote it (text, key order); null for versions stored before 0015. */
    source: text(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.siteId, t.version] })],
);

/**
 * Each site's content-signing keys, outside the document history: a document names its keys by id
 * only, so no version, diff or history shows a secret, and a rollback cannot bring back a secret
 * that was rotated away. `secret` is sealed (AES-256-GCM under SVC_SECRET, purpose
 * `content-key`); `rotated_at` is when it was last replaced (null: never).
 */
export const contentKeys = pgTable(
  "content_keys",
  {
    tenantId: text().notNull(),
    siteId: text().notNull(),
    keyId: text().notNull(),
    secret: text().notNull(),
    createdAt: createdAt(),
    rotatedAt: timestamp({ withTimezone: true, mode: "date" }),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.siteId, t.keyId] })],
);

export const apiKeys = pgTable(
  "api_keys",
  {
    id: uuid().primaryKey(),
    tenantId: text().notNull(),
    siteId: text().notNull(),
    name: text().notNull(),
    /** `svc_` plus six characters: what listings show. */
    prefix: text().notNull(),
    /** SHA-256 (hex) of the key value; the value itself is never stored. */
    hash: text().notNull(),
    permissions: text().array().notNull().default(sql`'{}'::text[]`),
    expiresAt: timestamp({ withTimezone: true, mode: "date" }),
    revokedAt: timestamp({ withTimezone: true, mode: "date" }),
    requestCount: bigint({ mode: "number" }).notNull().default(0),
    lastUsedOn: date({ mode: "string" }),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("api_keys_hash_idx").on(t.hash), index("api_keys_site_idx").on(t.tenantId, t.siteId)],
);

export const users = pgTable(
  "users",
  {
    id: uuid().primaryKey(),
    tenantId: text().notNull(),
    email: text().notNull(),
    emailVerified: boolean().notNull().default(false),
    name: text(),
    firstName: text(),
    lastName: text(),
    image: text(),
    traits: jsonb().notNull().default({}),
    /** When the upstream last recorded an address change (strictly-newer rule). */
    emailChangedAt: timestamp({ withTimezone: true, mode: "date" }),
    erasedAt: timestamp({ withTimezone: true, mode: "date" }),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("users_tenant_email_idx").on(t.tenantId, t.email)],
);

/** Service sessions. The token is opaque and random; only its SHA-256 is stored. */
export const sessions = pgTable(
  "sessions",
  {
    id: uuid().primaryKey(),
    tenantId: text().notNull(),
    userId: uuid()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    tokenHash: text().notNull(),
    expiresAt: timestamp({ withTimezone: true, mode: "date" }).notNull(),
    activeOrganizationId: uuid(),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("sessions_token_idx").on(t.tokenHash), index("sessions_user_idx").on(t.userId)],
);

/** Magic-link sign-in tokens: hashed, short-lived, consumed once. */
export const magicLinks = pgTable(
  "magic_links",
  {
    id: uuid().primaryKey(),
    tenantId: text().notNull(),
    siteId: text().notNull(),
    email: text().notNull(),
    tokenHash: text().notNull(),
    expiresAt: timestamp({ withTimezone: true, mode: "date" }).notNull(),
    consumedAt: timestamp({ withTimezone: true, mode: "date" }),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("magic_links_token_idx").on(t.tokenHash)],
);

/** Mail waiting to be sent (and a record of what was). Bodies are blanked once sent. */
export const mailOutbox = pgTable(
  "mail_outbox",
  {
    id: bigserial({ mode: "number" }).primaryKey(),
    tenantId: text().notNull(),
    recipient: text().notNull(),
    subject: text().notNull(),
    text: text().notNull(),
    html: text(),
    /** Extra headers (List-Unsubscribe of newsletter mail), sealed JSON; null: none. */
    headers: text(),
    status: text({ enum: ["pending", "sending", "sent", "failed"] })
      .notNull()
      .default("pending"),
    attempts: integer().notNull().default(0),
    nextAttemptAt: timestamp({ withTimezone: true, mode: "date" }).notNull().defaultNow(),
    lastError: text(),
    sentAt: timestamp({ withTimezone: true, mode: "date" }),
    createdAt: createdAt(),
  },
  (t) => [index("mail_outbox_pending_idx").on(t.status, t.nextAttemptAt)],
);

/** Which user an upstream identity provider's `sub` is bound to. */
export const upstreamSubjects = pgTable(
  "upstream_subjects",
  {
    tenantId: text().notNull(),
    subject: text().notNull(),
    userId: uuid()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.subject] }), index("upstream_subjects_user_idx").on(t.userId)],
);

/** Durable record of an upstream change refused because it collided with another user. */
export const identityConflicts = pgTable("identity_conflicts", {
  id: uuid().primaryKey(),
  tenantId: text().notNull(),
  kind: text({ enum: ["email", "subject"] }).notNull(),
  userId: uuid().notNull(),
  collidingUserId: uuid().notNull(),
  value: text().notNull(),
  createdAt: createdAt(),
});

export const grants = pgTable(
  "grants",
  {
    tenantId: text().notNull(),
    userId: uuid()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    grant: text().notNull(),
    expiresAt: timestamp({ withTimezone: true, mode: "date" }),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.userId, t.grant] })],
);

/**
 * One meter of one site in one period: the key its counters are stored under, so a counter row
 * carries a 4-byte id instead of the four key columns: smaller rows and indexes, and about a
 * third less of PGlite's work per written row (8–11 against 13–16 µs, measured on PGlite alone).
 */
export const meterKeys = pgTable(
  "meter_keys",
  {
    id: integer().primaryKey().generatedAlwaysAsIdentity(),
    tenantId: text().notNull(),
    siteId: text().notNull(),
    meter: text().notNull(),
    period: text().notNull(),
  },
  (t) => [uniqueIndex("meter_keys_tenant_site_meter_period").on(t.tenantId, t.siteId, t.meter, t.period)],
);

/**
 * Count meters: one row per (meter key, subject). No foreign key to `meter_keys`: the flush
 * creates the key in the same transaction, and a per-row check would cost the write path.
 * Filled to 70% (migration 0002), so an update usually stays on its page without a new index entry.
 */
export const meterCounts = pgTable(
  "meter_counts",
  {
    meterId: integer().notNull(),
    subject: text().notNull(),
    count: integer().notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.meterId, t.subject] })],
);

/** Members of seen-set meters: an article counts once per (meter key, subject). */
export const meterSeen = pgTable(
  "meter_seen",
  {
    meterId: integer().notNull(),
    subject: text().notNull(),
    item: text().notNull(),
  },
  (t) => [primaryKey({ columns: [t.meterId, t.subject, t.item] })],
);

/** Organizations (the `/v1/org` kind): tenant-wide, like users. Created by an operator. */
export const organizations = pgTable(
  "organizations",
  {
    id: uuid().primaryKey(),
    tenantId: text().notNull(),
    name: text().notNull(),
    /** Set at creation, never changed through the API. */
    slug: text().notNull(),
    logo: text(),
    createdAt: createdAt(),
  },
  (t) => [uniqueIndex("organizations_tenant_slug_idx").on(t.tenantId, t.slug)],
);

/** A user's seat in an organization; `role` is an open set (known: owner, admin, member). */
export const memberships = pgTable(
  "memberships",
  {
    id: uuid().primaryKey(),
    tenantId: text().notNull(),
    organizationId: uuid()
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    userId: uuid()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    role: text().notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex("memberships_org_user_idx").on(t.organizationId, t.userId),
    index("memberships_user_idx").on(t.tenantId, t.userId),
  ],
);

/** Invitations to a seat; at most one pending per (organization, address): a re-invite supersedes. */
export const invitations = pgTable(
  "invitations",
  {
    id: uuid().primaryKey(),
    tenantId: text().notNull(),
    organizationId: uuid()
      .notNull()
      .references(() => organizations.id, { onDelete: "cascade" }),
    email: text().notNull(),
    role: text().notNull(),
    status: text({ enum: ["pending", "accepted", "rejected", "canceled"] })
      .notNull()
      .default("pending"),
    inviterId: uuid(),
    expiresAt: timestamp({ withTimezone: true, mode: "date" }).notNull(),
    createdAt: createdAt(),
  },
  (t) => [
    uniqueIndex("invitations_pending_idx").on(t.organizationId, t.email).where(sql`status = 'pending'`),
    index("invitations_org_idx").on(t.organizationId, t.createdAt),
  ],
);

/**
 * The organization's latest streaming row per (site, user, pipeline): `window_end` in epoch
 * milliseconds and the declared columns as one JSON object (a null member is a cleared column).
 * Written by one statement per batch that never puts an older window over a newer one.
 */
export const streamingValues = pgTable(
  "streaming_values",
  {
    tenantId: text().notNull(),
    siteId: text().notNull(),
    userId: uuid().notNull(),
    pipeline: text().notNull(),
    windowEnd: bigint({ mode: "number" }).notNull(),
    values: jsonb().notNull(),
    updatedAt: timestamp({ withTimezone: true, mode: "date" }).notNull().defaultNow(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.siteId, t.userId, t.pipeline] })],
);

/**
 * Keyed decide's rate windows across processes (src/counters/quota-leases.ts): how much of a
 * key's window every process together has claimed. A process claims a chunk with one upsert that
 * never passes the limit, then spends it in memory. `last_grant` is what the latest claim got
 * (computed from the row before it, so RETURNING can answer it). Rows of past windows are pruned.
 */
export const rateLeases = pgTable(
  "rate_leases",
  {
    keyId: text().notNull(),
    windowStart: bigint({ mode: "number" }).notNull(),
    used: integer().notNull(),
    lastGrant: integer().notNull(),
    /** The window's length: a store prunes only its own length's rows (10 s decide, 60 s checkout). */
    windowMs: integer().notNull().default(10_000),
  },
  (t) => [primaryKey({ columns: [t.keyId, t.windowStart] })],
);

/**
 * The interventions stream's per-key cap across processes (src/interventions/stream-slots.ts):
 * how many streams of a key each process (`holder`, a random id per start) holds open. A process
 * renews its rows at every heartbeat; a row not renewed for three heartbeats (a process gone) no
 * longer counts and is deleted.
 */
export const streamSlots = pgTable(
  "stream_slots",
  {
    keyId: text().notNull(),
    holder: text().notNull(),
    opened: integer().notNull(),
    seenAt: timestamp({ withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.keyId, t.holder] })],
);

/** Change feed that tells every process to reload a site, a key, a user's grants or tenants. */
export const changeLog = pgTable("change_log", {
  id: bigserial({ mode: "number" }).primaryKey(),
  topic: text({ enum: ["tenant", "site", "key", "grants", "traits", "gift", "streaming", "newsletters"] }).notNull(),
  tenantId: text().notNull(),
  subject: text().notNull(),
  createdAt: createdAt(),
});

/**
 * Gift links minted by a site's readers (src/gifts). The token carries what never changes
 * (gift id, gifter, article, expiry) under the service's HMAC; this row keeps it for attribution
 * and revocation. Redemptions are members of the `$gift` seen counter (meter_seen, subject = id).
 */
export const giftLinks = pgTable(
  "gift_links",
  {
    id: uuid().primaryKey(),
    tenantId: text().notNull(),
    siteId: text().notNull(),
    gifterId: uuid().notNull(),
    contentId: text().notNull(),
    expiresAt: timestamp({ withTimezone: true, mode: "date" }).notNull(),
    revokedAt: timestamp({ withTimezone: true, mode: "date" }),
    createdAt: createdAt(),
  },
  (t) => [
    index("gift_links_site_gifter_idx").on(t.tenantId, t.siteId, t.gifterId),
    index("gift_links_revoked_idx").on(t.expiresAt).where(sql`revoked_at is not null`),
  ],
);

/** Gifts minted per gifter per site per month (UTC `YYYY-MM`): the policy's allowance, race-free. */
export const giftAllowances = pgTable(
  "gift_allowances",
  {
    tenantId: text().notNull(),
    siteId: text().notNull(),
    gifterId: uuid().notNull(),
    period: text().notNull(),
    count: integer().notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.siteId, t.gifterId, t.period] })],
);

/**
 * Checkout sessions started at the payment provider (src/checkout): what was bought, by whom and
 * for which site, captured when the session was created, so a webhook acts on this row (looked up
 * by the provider's session id within the tenant) and never on what an event claims. The
 * reader's address is not kept: a signed-out reader's comes back in the completed session.
 */
export const checkoutSessions = pgTable(
  "checkout_sessions",
  {
    /** The provider's checkout session id (`cs_...`). */
    id: text().primaryKey(),
    tenantId: text().notNull(),
    siteId: text().notNull(),
    /** The catalog item name of the offer. */
    offer: text().notNull(),
    grant: text().notNull(),
    /** `payment` (one-time, `durationMs`) or `subscription` (until cancelled). */
    mode: text().notNull(),
    durationMs: bigint({ mode: "number" }),
    /** The signed-in reader who started it; null for a signed-out reader (found by address on completion). */
    userId: uuid(),
    /** `open`, `granted`, `revoked`. */
    status: text().notNull().default("open"),
    grantedUserId: uuid(),
    subscriptionId: text(),
    paymentIntentId: text(),
    customerId: text(),
    createdAt: createdAt(),
    completedAt: timestamp({ withTimezone: true, mode: "date" }),
  },
  (t) => [
    index("checkout_sessions_subscription_idx").on(t.tenantId, t.subscriptionId),
    index("checkout_sessions_payment_intent_idx").on(t.tenantId, t.paymentIntentId),
    index("checkout_sessions_customer_idx").on(t.tenantId, t.customerId),
  ],
);

/** Provider events already applied, by event id: a redelivered or replayed event changes nothing. */
export const checkoutEvents = pgTable(
  "checkout_events",
  {
    tenantId: text().notNull(),
    eventId: text().notNull(),
    type: text().notNull(),
    /**
     * What a revoking event ended (the subscription id, or a fully refunded payment intent), so a
     * completion delivered after its own cancellation or refund grants nothing.
     */
    subject: text(),
    processedAt: createdAt(),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.eventId] }),
    index("checkout_events_subject_idx").on(t.tenantId, t.subject),
  ],
);

/**
 * The durable job queue (src/jobs): one row per (kind, key) while work is owed. A re-enqueue of a
 * queued row collapses into it (its `run_at` is kept, so a steady stream of notices cannot starve
 * it); one of a running row sets `dirty`, and the row is queued again when that run ends. Rows
 * are claimed with FOR UPDATE SKIP LOCKED under a lease (`lease`, `lease_until`); a crashed
 * worker's lease expires and the row is claimed again. Done rows are deleted; `dead` rows stay
 * for operators until a fresh enqueue revives them.
 */
export const jobs = pgTable(
  "jobs",
  {
    id: bigserial({ mode: "number" }).primaryKey(),
    kind: text().notNull(),
    key: text().notNull(),
    payload: jsonb(),
    state: text({ enum: ["queued", "running", "dead"] })
      .notNull()
      .default("queued"),
    runAt: timestamp({ withTimezone: true, mode: "date" }).notNull(),
    attempts: integer().notNull().default(0),
    dirty: boolean().notNull().default(false),
    lease: text(),
    leaseUntil: timestamp({ withTimezone: true, mode: "date" }),
    lastError: text(),
    createdAt: timestamp({ withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [uniqueIndex("jobs_kind_key_idx").on(t.kind, t.key), index("jobs_due_idx").on(t.state, t.runAt)],
);

/**
 * A site's content items as last read from its CMS (src/content): what recommendations answer
 * with. `cms_version` orders reads of one item (the story's last publish time, epoch ms; a 404's
 * read time): an answer older than the stored one is never written over it.
 */
export const contentItems = pgTable(
  "content_items",
  {
    tenantId: text().notNull(),
    siteId: text().notNull(),
    id: text().notNull(),
    type: text().notNull().default("story"),
    headline: text(),
    description: text(),
    image: text(),
    url: text(),
    publishedAt: timestamp({ withTimezone: true, mode: "date" }),
    sections: jsonb().$type<string[]>().notNull().default([]),
    tags: jsonb().$type<string[]>().notNull().default([]),
    authors: jsonb().$type<{ id: string; name: string | null }[]>().notNull().default([]),
    contentType: text(),
    language: text(),
    deleted: boolean().notNull().default(false),
    cmsVersion: bigint({ mode: "number" }).notNull(),
    readAt: timestamp({ withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.siteId, t.id] })],
);

/** Authors as last read from the CMS, so a story's author ids get names (and a rename reaches every item). */
export const contentAuthors = pgTable(
  "content_authors",
  {
    tenantId: text().notNull(),
    siteId: text().notNull(),
    id: text().notNull(),
    name: text(),
    cmsVersion: bigint({ mode: "number" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.siteId, t.id] })],
);

/** Calls made to a tenant's recommendation engine, per UTC month (`YYYY-MM`): its quota spend. */
export const recommendationUsage = pgTable(
  "recommendation_usage",
  {
    tenantId: text().notNull(),
    period: text().notNull(),
    calls: bigint({ mode: "number" }).notNull().default(0),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.period] })],
);

/**
 * The stable id of each newsletter list a site has ever deployed (src/newsletters): assigned at
 * the first deploy that names the slug (uuid v7) and kept, so standings outlive a deploy that
 * drops the list and come back with it.
 */
export const newsletterLists = pgTable(
  "newsletter_lists",
  {
    tenantId: text().notNull(),
    siteId: text().notNull(),
    slug: text().notNull(),
    id: uuid().notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.siteId, t.slug] }), uniqueIndex("newsletter_lists_id_idx").on(t.id)],
);

/**
 * One person's standing on one list. `status` is `subscribed`, `unsubscribed` or `pending`
 * (no row: `unknown`); a `pending` row past `pending_until` reads as `unknown`. `vendor_status`
 * is what the delivery vendor was last told (null: nothing; only `subscribed` addresses are sent).
 */
export const newsletterStandings = pgTable(
  "newsletter_standings",
  {
    tenantId: text().notNull(),
    userId: uuid()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    listId: uuid().notNull(),
    siteId: text().notNull(),
    status: text().notNull(),
    pendingUntil: timestamp({ withTimezone: true, mode: "date" }),
    /** Proof of the confirmed opt-in: when, from which client, which list, which mail. */
    consent: jsonb(),
    vendorStatus: text(),
    vendorSubscriberId: text(),
    updatedAt: timestamp({ withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.userId, t.listId] })],
);

/**
 * Confirmation links mailed for double opt-in: the token's SHA-256 only, valid 7 days. Rows are
 * kept after use as the record of what was sent and confirmed (and count the per-address caps).
 */
export const newsletterConfirmations = pgTable(
  "newsletter_confirmations",
  {
    tokenHash: text().primaryKey(),
    tenantId: text().notNull(),
    siteId: text().notNull(),
    userId: uuid()
      .notNull()
      .references(() => users.id, { onDelete: "cascade" }),
    listId: uuid().notNull(),
    email: text().notNull(),
    mailId: bigint({ mode: "number" }),
    requestedFrom: text().notNull(),
    createdAt: timestamp({ withTimezone: true, mode: "date" }).notNull(),
    expiresAt: timestamp({ withTimezone: true, mode: "date" }).notNull(),
    confirmedAt: timestamp({ withTimezone: true, mode: "date" }),
    confirmedFrom: text(),
  },
  (t) => [index("newsletter_confirmations_email_idx").on(t.tenantId, t.email, t.createdAt)],
);

/**
 * The audit log (src/audit): one row per operator action that changed something (a mutating
 * /admin request that succeeded), with who, when, what and a summary that never holds a secret.
 */
export const auditLog = pgTable(
  "audit_log",
  {
    id: bigserial({ mode: "number" }).primaryKey(),
    at: timestamp({ withTimezone: true, mode: "date" }).notNull(),
    actor: text().notNull(),
    tenantId: text(),
    siteId: text(),
    action: text().notNull(),
    target: text().notNull(),
    summary: text().notNull(),
    /** The action in words ("key 'my CMS' issued on site demo by ana@example.com"); '' before 0015. */
    words: text().notNull().default(""),
  },
  (t) => [index("audit_log_tenant_site_id").on(t.tenantId, t.siteId, t.id)],
);

/**
 * Console users (src/console): per tenant, an email address with a role. They sign in by a mailed
 * link; the operator token stays for the CLI and automation.
 */
export const consoleUsers = pgTable(
  "console_users",
  {
    tenantId: text().notNull(),
    email: text().notNull(),
    role: text({ enum: ["owner", "admin", "viewer"] }).notNull(),
    createdAt: createdAt(),
  },
  (t) => [primaryKey({ columns: [t.tenantId, t.email] })],
);

/** Console sign-in links (only the hash of the token) and sessions (only the hash of the cookie). */
export const consoleTokens = pgTable(
  "console_tokens",
  {
    tokenHash: text().primaryKey(),
    kind: text({ enum: ["link", "session"] }).notNull(),
    tenantId: text().notNull(),
    email: text().notNull(),
    expiresAt: timestamp({ withTimezone: true, mode: "date" }).notNull(),
    usedAt: timestamp({ withTimezone: true, mode: "date" }),
    createdAt: createdAt(),
  },
  (t) => [index("console_tokens_user").on(t.tenantId, t.email)],
);

/**
 * The mail budget (src/mail-budget): what has been spent of one budget in one fixed window. A
 * budget is a mail kind and a scope (recipient mailbox, client, site, organization, inviter);
 * `subject` is the SHA-256 of what it counts (a mailbox, a client address), never the value.
 * Taken by a conditional upsert in the transaction that writes the mail; rows past
 * `expires_at` are pruned.
 */
export const mailBudget = pgTable(
  "mail_budget",
  {
    tenantId: text().notNull(),
    budget: text().notNull(),
    subject: text().notNull(),
    windowStart: bigint({ mode: "number" }).notNull(),
    spent: integer().notNull(),
    expiresAt: timestamp({ withTimezone: true, mode: "date" }).notNull(),
  },
  (t) => [
    primaryKey({ columns: [t.tenantId, t.budget, t.subject, t.windowStart] }),
    index("mail_budget_expires_idx").on(t.expiresAt),
  ],
);

/**
 * Decisions counted (src/counters/decision-counts.ts, src/insight): per site, feature, outcome,
 * experiment variant and time bucket, at three grains (`minute`, `hour`, `day`, UTC). Each flush
 * adds its deltas to all three (`count = count + delta`), so the hours and days are rolled up as
 * they are written, and several processes' counts add up. `verdict` and `offer` are the outcome's
 * as last counted (walled = `deny`; the offer its paywall shows). Swept by grain (docs/operations.md).
 */
export const decisionCounts = pgTable(
  "decision_counts",
  {
    tenantId: text().notNull(),
    siteId: text().notNull(),
    grain: text({ enum: ["minute", "hour", "day"] }).notNull(),
    bucket: timestamp({ withTimezone: true, mode: "date" }).notNull(),
    feature: text().notNull(),
    outcome: text().notNull(),
    /** Empty strings for an ending that is no experiment's arm. */
    experiment: text().notNull(),
    variant: text().notNull(),
    verdict: text().notNull(),
    offer: text().notNull(),
    count: bigint({ mode: "number" }).notNull(),
  },
  (t) => [
    primaryKey({
      columns: [t.tenantId, t.siteId, t.grain, t.bucket, t.feature, t.outcome, t.experiment, t.variant],
    }),
    index("decision_counts_grain_bucket_idx").on(t.grain, t.bucket),
  ],
);
