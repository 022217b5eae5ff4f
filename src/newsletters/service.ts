import { randomBytes } from "node:crypto";
import { AppError } from "../infra/errors";
import { hashSecret } from "../keys/key-value";
import { mailboxOf, type Spend } from "../mail-budget/budgets";
import type { Tx } from "../mail-budget/store";
import type { SiteState } from "../sites/registry";
import type { UserRow } from "../users/store";
import type { NewsletterDeps } from "./deps";
import { type DeployedList, deployedLists } from "./lists";
import { confirmationMail } from "./mail";
import type { ListJson, SubscriptionJson, SubscriptionsInput } from "./model";
import { effectiveStatus, type StandingRow, type StandingWrite, type StoredStatus } from "./store";
import type { NewsletterSubject } from "./subject";
import { enqueueSync } from "./sync";

/** A confirmation link (and so a `pending` standing) lives 7 days from its mail. */
const CONFIRMATION_TTL_MS = 7 * 86_400_000;

/** `GET /v1/newsletters/lists`. */
export function listsOf(site: SiteState): { lists: ListJson[] } {
  return { lists: deployedLists(site).map((l) => ({ ...l })) };
}

const KNOWN_STATUSES = new Set(["subscribed", "unsubscribed", "pending", "unknown"]);

function entry(list: DeployedList, status: string): SubscriptionJson {
  return {
    id: list.id,
    slug: list.slug,
    label: list.label,
    description: list.description,
    // An open set: a status this version does not know is shown as `unknown`.
    status: KNOWN_STATUSES.has(status) ? status : "unknown",
  };
}

/** `GET /v1/newsletters/subscriptions`: every deployed list with the subject's status. */
export async function getSubscriptions(
  deps: NewsletterDeps,
  subject: NewsletterSubject,
): Promise<{ subscriptions: SubscriptionJson[] }> {
  const lists = deployedLists(subject.site);
  if (subject.user === null) return { subscriptions: lists.map((l) => entry(l, "unknown")) };
  const rows = await deps.store.standings(
    subject.site.tenantId,
    subject.user.id,
    lists.map((l) => l.id),
  );
  const byList = new Map(rows.map((r) => [r.listId, r]));
  const now = deps.now();
  return { subscriptions: lists.map((l) => entry(l, effectiveStatus(byList.get(l.id), now))) };
}

export interface PutInput {
  readonly subject: NewsletterSubject;
  readonly body: SubscriptionsInput;
  /** The caller's peer address (consent proof). */
  readonly client: string;
  /** The trusted origin links are built on plus `/v1`; throws (400) for an untrusted host. */
  readonly linkBase: () => string;
}

export interface PutResult {
  readonly status: 200 | 202;
  readonly body: { subscriptions: SubscriptionJson[] };
  /** The draft's RateLimit fields of the caller's confirmation budget, when one was charged. */
  readonly rateLimit: Record<string, string>;
}

const emailRefused = () =>
  new AppError("bad_request", "email is allowed only without a credential naming the user (the anonymous path).");
const keyNeedsUser = () => new AppError("bad_request", "userId is required to change subscriptions with an API key.");
const nobodyNamed = () =>
  new AppError("unauthorized", "Changing subscriptions needs a signed-in user, an API key with userId, or an email.");

export const tooManyConfirmations = (retryAfterSeconds: number, rateLimit: Record<string, string> = {}) =>
  new AppError(
    "rate_limited",
    "Too many confirmation emails were sent to this address; try again later.",
    { retryAfterSeconds },
    { "retry-after": String(retryAfterSeconds), ...rateLimit },
  );

/** What a PUT changes for one subject, from the lists it names and the standings it holds. */
interface Plan {
  readonly writes: StandingWrite[];
  /** Lists whose standing is (still) pending: each gets a confirmation mail. */
  readonly mailTo: DeployedList[];
  /** The status each list answers with. */
  readonly result: Map<string, string>;
}

function planOf(
  siteId: string,
  lists: readonly DeployedList[],
  named: ReadonlySet<string>,
  current: ReadonlyMap<string, StandingRow>,
  anonymous: boolean,
  now: number,
): Plan {
  const writes: StandingWrite[] = [];
  const mailTo: DeployedList[] = [];
  const result = new Map<string, string>();
  const pendingUntil = new Date(now + CONFIRMATION_TTL_MS);
  for (const list of lists) {
    const row = current.get(list.id);
    const status = effectiveStatus(row, now);
    const asked = named.has(list.id);
    let next: StoredStatus | null;
    if (anonymous && !asked) next = null;
    else if (status === "pending") next = "pending";
    else if (asked) next = status === "subscribed" ? "subscribed" : list.doubleOptIn ? "pending" : "subscribed";
    else next = "unsubscribed";
    if (next === null) {
      result.set(list.id, "unknown");
      continue;
    }
    if (next === "pending") mailTo.push(list);
    result.set(list.id, next);
    const stillPending = next === "pending";
    if (row === undefined || row.status !== next || stillPending) {
      writes.push({ listId: list.id, siteId, status: next, pendingUntil: stillPending ? pendingUntil : null });
    }
  }
  return { writes, mailTo, result };
}

/**
 * `PUT /v1/newsletters/subscriptions`: full replacement under a credential naming the user;
 * only additions on the anonymous path (email, no credential). Every refusal (400, 401, 404,
 * 422, 429, 503) comes before anything is stored or mailed.
 */
export async function putSubscriptions(deps: NewsletterDeps, input: PutInput): Promise<PutResult> {
  const { subject, body } = input;
  const site = subject.site;
  const tenantId = site.tenantId;
  const lists = deployedLists(site);
  const byId = new Map(lists.map((l) => [l.id, l]));
  const named = new Set<string>();
  const unknown: { path: string; message: string }[] = [];
  body.subscribed.forEach((raw, i) => {
    const id = raw.toLowerCase();
    if (!byId.has(id)) unknown.push({ path: `/subscribed/${i}`, message: `unknown list "${raw}"` });
    named.add(id);
  });
  if (unknown.length > 0) throw new AppError("validation_failed", "The request failed validation.", unknown);
  if (subject.kind === "anonymous") {
    if (body.email === undefined) throw nobodyNamed();
    return putAnonymously(deps, input, lists, named, body.email.trim().toLowerCase());
  }
  if (body.email !== undefined) throw emailRefused();
  const user: UserRow | null = subject.user;
  if (user === null) throw keyNeedsUser();
  const email = user.email;
  let rateLimit: Record<string, string> = {};

  const now = deps.now();
  const rows = await deps.store.standings(
    tenantId,
    user.id,
    lists.map((l) => l.id),
  );
  const { writes, mailTo, result } = planOf(site.id, lists, named, new Map(rows.map((r) => [r.listId, r])), false, now);
  if (mailTo.length > 0) {
    deps.outbox.assertCanSend();
    const linkBase = input.linkBase();
    const owner = user;
    // One confirmation mail per pending list: the budgets count mails, and the standings, the
    // links and their outbox rows are written in the transaction that takes them.
    const spent = await deps.mailBudget.spend(
      "confirmation",
      tenantId,
      confirmationSpend(email, null, site.id, mailTo),
      async (tx) => {
        await deps.store.write(tenantId, owner.id, writes, now, undefined, tx);
        for (const list of mailTo) {
          await writeConfirmation(deps, tx, { site, user: owner, email, list, linkBase, client: input.client, now });
        }
      },
    );
    if (!spent.ok) throw tooManyConfirmations(spent.retryAfterSeconds, spent.rateLimit);
    rateLimit = spent.rateLimit;
  } else {
    await deps.store.write(tenantId, user.id, writes, now);
  }
  if (writes.length > 0) {
    await changed(
      deps,
      tenantId,
      user.id,
      writes.map((w) => w.listId),
    );
  }
  const subscriptions = lists.map((l) => entry(l, result.get(l.id) ?? "unknown"));
  return { status: subscriptions.some((s) => s.status === "pending") ? 202 : 200, body: { subscriptions }, rateLimit };
}

/** The job an anonymous subscribe hands off: the address's standings and mails are decided there. */
export const ANONYMOUS_SUBSCRIBE_JOB = "newsletters.subscribe";

interface SubscribeJob {
  readonly tenantId: string;
  readonly siteId: string;
  readonly email: string;
  readonly listIds: readonly string[];
  /** The double opt-in lists named: the confirmations the request paid for (at most these are mailed). */
  readonly paidFor: readonly string[];
  readonly client: string;
  readonly linkBase: string | null;
}

/**
 * The anonymous path: the same work whatever the address holds, so neither the answer nor its
 * time tells a subscriber (or a user) from a stranger. The answer is what a never-seen address
 * would get; the request checks, takes the confirmation budgets for every double opt-in list it
 * names (a mail each, whether or not one will be needed) and hands the rest to a job in the same
 * transaction: the job reads the address's standings, adds what is new and mails only the
 * confirmations still due (never more than were paid for).
 */
async function putAnonymously(
  deps: NewsletterDeps,
  input: PutInput,
  lists: readonly DeployedList[],
  named: ReadonlySet<string>,
  email: string,
): Promise<PutResult> {
  const site = input.subject.site;
  const confirmable = lists.filter((l) => named.has(l.id) && l.doubleOptIn);
  if (confirmable.length > 0) deps.outbox.assertCanSend();
  const job: SubscribeJob = {
    tenantId: site.tenantId,
    siteId: site.id,
    email,
    listIds: [...named],
    paidFor: confirmable.map((l) => l.id),
    client: input.client,
    linkBase: confirmable.length > 0 ? input.linkBase() : null,
  };
  const handOff = (tx: Tx) =>
    deps.jobs.enqueueIn(tx, ANONYMOUS_SUBSCRIBE_JOB, [{ key: randomBytes(16).toString("base64url"), payload: job }]);
  // Single opt-in lists only: no mail to pay for (what the request names decides, not the address).
  const spent =
    confirmable.length === 0
      ? { ok: true as const, value: await deps.mailBudget.paid(handOff) }
      : await deps.mailBudget.spend(
          "confirmation",
          site.tenantId,
          confirmationSpend(email, input.client, site.id, confirmable),
          handOff,
        );
  if (!spent.ok) {
    throw spent.scope === "client" || spent.scope === "site"
      ? tooManySubscribeRequests(spent.retryAfterSeconds, spent.rateLimit)
      : tooManyConfirmations(spent.retryAfterSeconds, spent.rateLimit);
  }
  deps.jobs.kick();
  const subscriptions = lists.map((l) =>
    entry(l, named.has(l.id) ? (l.doubleOptIn ? "pending" : "subscribed") : "unknown"),
  );
  // The caller's own budget (never the recipient's mailbox's: that would tell how often others asked).
  const rateLimit = "rateLimit" in spent ? spent.rateLimit : {};
  return { status: subscriptions.some((s) => s.status === "pending") ? 202 : 200, body: { subscriptions }, rateLimit };
}

/** Registers the anonymous subscribe job on the queue (src/deps.ts, once per process). */
export function registerAnonymousSubscribeJob(deps: NewsletterDeps): void {
  deps.jobs.register(ANONYMOUS_SUBSCRIBE_JOB, (payload) => subscribeHandedOff(deps, payload as SubscribeJob), {
    maxAttempts: 3,
    backoffMs: 2_000,
  });
}

/**
 * The handed-off half of an anonymous subscribe: only additions (a standing is never lowered);
 * a list already subscribed gets no mail; a new address becomes an unverified user.
 */
async function subscribeHandedOff(deps: NewsletterDeps, job: SubscribeJob): Promise<void> {
  const site = deps.registry.site(job.tenantId, job.siteId);
  if (site === undefined || site.live === null) return;
  const lists = deployedLists(site);
  const known = (await deps.identity.userByEmail(job.tenantId, job.email)) ?? null;
  const rows =
    known === null
      ? []
      : await deps.store.standings(
          job.tenantId,
          known.id,
          lists.map((l) => l.id),
        );
  const now = deps.now();
  const plan = planOf(site.id, lists, new Set(job.listIds), new Map(rows.map((r) => [r.listId, r])), true, now);
  const paid = new Set(job.paidFor);
  const mailTo = job.linkBase === null ? [] : plan.mailTo.filter((l) => paid.has(l.id));
  if (plan.writes.length === 0) return;
  const linkBase = job.linkBase ?? "";
  const owner = await deps.mailBudget.paid(async (tx) => {
    const user = known ?? (await deps.identity.findOrCreateByEmail(job.tenantId, job.email, false, tx));
    await deps.store.write(job.tenantId, user.id, plan.writes, now, undefined, tx);
    for (const list of mailTo) {
      await writeConfirmation(deps, tx, { site, user, email: job.email, list, linkBase, client: job.client, now });
    }
    return user;
  });
  await changed(
    deps,
    job.tenantId,
    owner.id,
    plan.writes.map((w) => w.listId),
  );
}

const tooManySubscribeRequests = (retryAfterSeconds: number, rateLimit: Record<string, string> = {}) =>
  new AppError(
    "rate_limited",
    "Too many subscription requests; try again later.",
    { retryAfterSeconds },
    {
      "retry-after": String(retryAfterSeconds),
      ...rateLimit,
    },
  );

/**
 * What confirmation mails spend: each mail from the recipient's mailbox (`+tag` and case folded)
 * and from that mailbox's budget for its list, from the caller's client and from the site. Only
 * the anonymous path names its recipient; a session, an upstream login or an API key mails the
 * user's own address (`client` null): their client budget is the mailbox's own, so a reader is
 * not held back by strangers on the same address, nor a publisher's backend (one client for all
 * its readers) by its volume.
 */
function confirmationSpend(
  email: string,
  client: string | null,
  siteId: string,
  mailTo: readonly DeployedList[],
): Spend {
  const mailbox = mailboxOf(email);
  return [
    ["mailbox", mailbox, mailTo.length],
    ...mailTo.map((list) => ["mailbox_list", `${mailbox}\u0001${list.id}`, 1] as const),
    ["client", client ?? `self\u0001${mailbox}`, mailTo.length],
    ["site", siteId, mailTo.length],
  ];
}

/**
 * One confirmation mail, in the caller's transaction: a fresh random token (stored hashed, 7
 * days) and the mail's outbox row (sent once the transaction commits).
 */
async function writeConfirmation(
  deps: NewsletterDeps,
  tx: Tx,
  input: {
    site: SiteState;
    user: UserRow;
    email: string;
    list: DeployedList;
    linkBase: string;
    client: string;
    now: number;
  },
): Promise<void> {
  const { site, user, list, now } = input;
  const token = randomBytes(32).toString("base64url");
  const unsubscribe = await deps.unsubscribeTokens.url(input.linkBase, {
    tenantId: site.tenantId,
    siteId: site.id,
    userId: user.id,
    listId: list.id,
    now,
  });
  const mailId = await deps.outbox.enqueueIn(
    tx,
    confirmationMail({
      tenantId: site.tenantId,
      to: input.email,
      label: list.label,
      confirmUrl: `${input.linkBase}/newsletters/confirm?token=${token}`,
      unsubscribeUrl: unsubscribe,
    }),
  );
  await deps.store.addConfirmation(
    {
      tokenHash: hashSecret(token),
      tenantId: site.tenantId,
      siteId: site.id,
      userId: user.id,
      listId: list.id,
      email: input.email,
      mailId,
      requestedFrom: input.client,
      createdAt: new Date(now),
      expiresAt: new Date(now + CONFIRMATION_TTL_MS),
    },
    tx,
  );
}

/** After standings changed: every process drops the user's cached facts; the vendor is owed a sync. */
async function changed(deps: NewsletterDeps, tenantId: string, userId: string, listIds: readonly string[]) {
  deps.facts.invalidate(tenantId, userId);
  await deps.changes.publish({ topic: "newsletters", tenantId, subject: userId });
  await enqueueSync(deps, tenantId, userId, listIds);
}

/** What a confirmation or unsubscribe link did, for its page. */
export type LinkOutcome =
  | { readonly kind: "confirmed" | "already_subscribed" | "unsubscribed"; readonly label: string }
  | { readonly kind: "unknown_link" | "expired_link" | "no_longer_pending"; readonly label: string | null };

function labelOf(deps: NewsletterDeps, tenantId: string, siteId: string, listId: string): string | null {
  const site = deps.registry.site(tenantId, siteId);
  return (site === undefined ? [] : deployedLists(site)).find((l) => l.id === listId)?.label ?? null;
}

/** The confirmation link's row while usable, for the page a GET shows. */
export async function confirmationOf(deps: NewsletterDeps, tenantId: string | null, token: string) {
  if (tenantId === null || token.length < 1 || token.length > 512)
    return { kind: "unknown_link" as const, label: null };
  const row = await deps.store.confirmation(tenantId, hashSecret(token));
  if (row === undefined) return { kind: "unknown_link" as const, label: null };
  const label = labelOf(deps, tenantId, row.siteId, row.listId);
  if (row.expiresAt.getTime() <= deps.now()) return { kind: "expired_link" as const, label };
  return { kind: "usable" as const, label, row };
}

/**
 * `POST /v1/newsletters/confirm`: a pending standing becomes `subscribed`, with its consent
 * proof (time, client address, list, the mail's id). Confirming again is harmless; a link whose
 * list was left meanwhile (unsubscribed, expired) confirms nothing.
 */
export async function confirmSubscription(
  deps: NewsletterDeps,
  tenantId: string | null,
  token: string,
  client: string,
): Promise<LinkOutcome> {
  const found = await confirmationOf(deps, tenantId, token);
  if (found.kind !== "usable") return found;
  const { row } = found;
  const label = found.label ?? "this newsletter";
  const now = deps.now();
  const [standing] = await deps.store.standings(row.tenantId, row.userId, [row.listId]);
  const status = effectiveStatus(standing, now);
  if (status === "subscribed") {
    await deps.store.markConfirmed(row.tokenHash, now, client);
    return { kind: "already_subscribed", label };
  }
  if (status !== "pending") return { kind: "no_longer_pending", label };
  await deps.store.write(
    row.tenantId,
    row.userId,
    [{ listId: row.listId, siteId: row.siteId, status: "subscribed", pendingUntil: null }],
    now,
    {
      confirmedAt: new Date(now).toISOString(),
      client,
      listId: row.listId,
      mailId: row.mailId,
      requestedAt: row.createdAt.toISOString(),
      requestedFrom: row.requestedFrom,
    },
  );
  await deps.store.markConfirmed(row.tokenHash, now, client);
  await changed(deps, row.tenantId, row.userId, [row.listId]);
  return { kind: "confirmed", label };
}

/** The unsubscribe link's standing, for the page a GET shows (null: not a link of ours). */
export async function unsubscribeLinkOf(deps: NewsletterDeps, tenantId: string | null, token: string) {
  const claims = await deps.unsubscribeTokens.verify(token, deps.now());
  if (claims === null || claims.tenantId !== tenantId) return null;
  return { ...claims, label: labelOf(deps, claims.tenantId, claims.siteId, claims.listId) ?? "this newsletter" };
}

/** `POST /v1/newsletters/unsubscribe` (RFC 8058 one-click): that list, at once. */
export async function unsubscribeByLink(
  deps: NewsletterDeps,
  tenantId: string | null,
  token: string,
): Promise<LinkOutcome> {
  const link = await unsubscribeLinkOf(deps, tenantId, token);
  if (link === null) return { kind: "unknown_link", label: null };
  const now = deps.now();
  const [standing] = await deps.store.standings(link.tenantId, link.userId, [link.listId]);
  if (standing?.status !== "unsubscribed") {
    await deps.store.write(
      link.tenantId,
      link.userId,
      [{ listId: link.listId, siteId: link.siteId, status: "unsubscribed", pendingUntil: null }],
      now,
    );
    await changed(deps, link.tenantId, link.userId, [link.listId]);
  }
  return { kind: "unsubscribed", label: link.label };
}
