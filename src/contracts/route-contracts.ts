import type { TSchema } from "elysia";
import {
  ContentKeysAnswer,
  CreatedSiteAnswer,
  CreatedTenantAnswer,
  CreatedUserAnswer,
  DeploymentAnswer,
  DiffAnswer,
  DocumentsAnswer,
  DocumentVersionAnswer,
  GrantAnswer,
  GrantsAnswer,
  IdentityProviderAnswer,
  IssuedKeyAnswer,
  KeysAnswer,
  PreviewTokenAnswer,
  PublicUrlAnswer,
  PublishedAnswer,
  RevokedGrantAnswer,
  RevokedKeyAnswer,
  RotatedContentKeyAnswer,
  SiteStateAnswer,
  SitesAnswer,
  TenantsAnswer,
} from "../admin/model";
import { AuditAnswer } from "../audit/model";
import { WebhookAnswer } from "../checkout/model";
import { ConsoleUserAnswer, ConsoleUsersAnswer, RemovedConsoleUserAnswer } from "../console/model";
import { ContentItemAnswer, ContentStatsAnswer } from "../content/model";
import { ExplainAnswer } from "../decide/explain-model";
import { DecideAnswer } from "../decide/model";
import {
  CurrentSessionAnswer,
  IdentityConfigAnswer,
  SignedInAnswer,
  SignOutAnswer,
  TraitsAnswer,
  UpstreamPushAnswer,
  UserAnswer,
} from "../identity/model";
import { IgluListing, IgluSchemaAnswer } from "../iglu/model";
import { ImpactAnswer } from "../impact/model";
import { DecisionsReport, ExperimentsReport, FunnelReport, MetersReport } from "../insight/model";
import { ListsAnswer, SubscriptionsAnswer } from "../newsletters/model";
import { OfrepBulkAnswer, OfrepSuccess } from "../ofrep/model";
import { HealthAnswer, ReadinessAnswer, StoreStatsAnswer } from "../ops/model";
import {
  AcceptedInvitationAnswer,
  ActiveOrganizationAnswer,
  CreatedOrganizationAnswer,
  InvitationAnswer,
  InvitationsAnswer,
  MembersAnswer,
  MembershipAnswer,
  OrganizationAnswer,
  OrganizationsAnswer,
  SuccessAnswer,
} from "../orgs/model";
import { ServiceClearedAnswer, ServiceSetAnswer, ServicesAnswer } from "../outside/service-config-model";
import { RecommendationUsageAnswer } from "../recommendations/model";
import { OpenApiAnswer } from "./model";

/**
 * What the spec (and our docs) say of each route beyond its TypeBox models: a summary, the
 * credential, the statuses it answers and the site header's use. The OpenAPI document is generated
 * from the app's route table; a route this table does not describe fails the build of the document
 * (and so its test), so a new route is described from the day it lands.
 *
 * Keys are `method path` in OpenAPI form (`{param}`), with the `/svc/v1` twin of a browser-facing
 * route written as its `/v1` path (the two mounts are equal: spec, Mounts).
 */

/** How a valid call presents itself (the security requirement of the operation). */
export type Credential =
  /** Nothing: public, or the request's own token (magic link, emailed link). */
  | "none"
  /** A site-pinned API key: `Authorization: Bearer` or `x-api-key`. */
  | "key"
  /** A user session: cookie `svc.session_token` (or its token as a bearer, native clients). */
  | "session"
  /** Optional session: answers for the signed-in user, or as signed out. */
  | "session-optional"
  /** A browser on an allowed origin with the signed access cookie `svc.access` (no key). */
  | "browser"
  /** The newsletter routes: a session, an upstream credential, an API key (naming `userId`) or nobody. */
  | "newsletter"
  /** The operator token as a bearer. */
  | "operator"
  /** The operator token or SVC_METRICS_TOKEN as a bearer. */
  | "metrics"
  /** The payment provider's webhook signature (`stripe-signature`). */
  | "signature";

/** Whether the route reads `x-svc-site-id`. */
export type SiteHeader = "required" | "optional" | "none";

export interface RouteContract {
  readonly summary: string;
  readonly tag: string;
  readonly credential: Credential;
  /** Every status the route answers; success statuses first. */
  readonly statuses: readonly number[];
  readonly site: SiteHeader;
  readonly description?: string;
  /** The success answer's model, for a route whose handler declares none (documentation only). */
  readonly answer?: TSchema;
  /** Error statuses answered with the answer model instead of the envelope (readiness's 503). */
  readonly answerOnError?: readonly number[];
  /** The success answer is an HTML page (a link's interstitial, the explorer), not JSON. */
  readonly html?: true;
}

/** Spec, Endpoints: the statuses listed per route. */
const KEYED_DECIDE = [200, 400, 401, 403, 404, 413, 422, 429, 500, 503];
const ORG = [200, 400, 401, 403, 404, 422, 500];
const UPSTREAM = [200, 400, 401, 403, 404, 422, 500, 503];
const UPSTREAM_CONFLICT = [200, 400, 401, 403, 404, 409, 422, 500, 503];
/** Ours, for the routes the spec leaves open. */
const SESSION = [200, 400, 401, 403, 404, 413, 422, 500];
const PUBLIC = [200, 400, 404, 413, 422, 500];
const ADMIN_READ = [200, 400, 401, 404, 422, 500];
const ADMIN_WRITE = [200, 400, 401, 404, 409, 413, 422, 500, 503];
const ADMIN_CREATE = [201, 400, 401, 404, 409, 413, 422, 500];

const admin = (summary: string, statuses: readonly number[] = ADMIN_WRITE, answer?: TSchema): RouteContract => ({
  summary,
  tag: "admin",
  credential: "operator",
  statuses,
  site: "none",
  ...(answer === undefined ? {} : { answer }),
});

export const ROUTE_CONTRACTS: Readonly<Record<string, RouteContract>> = {
  // Ops
  "get /health": {
    summary: "Liveness",
    tag: "ops",
    credential: "none",
    statuses: [200],
    site: "none",
    answer: HealthAnswer,
  },
  "get /ready": {
    summary: "Readiness: the store answers and the change feed is applied",
    tag: "ops",
    credential: "none",
    statuses: [200, 503],
    site: "none",
    answer: ReadinessAnswer,
    answerOnError: [503],
  },
  "get /metrics": {
    summary: "Prometheus metrics (text exposition format)",
    tag: "ops",
    credential: "metrics",
    statuses: [200, 401],
    site: "none",
  },
  "get /openapi.json": {
    summary: "This document: the whole public and admin API",
    tag: "contracts",
    credential: "none",
    statuses: [200],
    site: "none",
    answer: OpenApiAnswer,
  },
  "get /openapi": {
    summary: "API explorer (Swagger UI, served from this server)",
    tag: "contracts",
    credential: "none",
    statuses: [200],
    site: "none",
    html: true,
  },
  "get /openapi/assets/{file}": {
    summary: "The explorer's script and style sheet",
    tag: "contracts",
    credential: "none",
    statuses: [200, 404],
    site: "none",
  },
  "get /v1/decide/openapi.json": {
    summary: "The keyed decide mount's description (decide, gift links, interventions)",
    tag: "contracts",
    credential: "none",
    statuses: [200],
    site: "none",
    answer: OpenApiAnswer,
  },

  // Decisions
  "post /v1/decide": {
    summary: "Decide features for a subject (keyed, server to server)",
    description:
      "Evaluates the named features against one frozen snapshot of facts and answers a decision per feature. Every call ticks the meters its rules charge, so a retry is not free. With `explain: true` it answers why instead (ExplainAnswer: `explain` in place of `decisions`), with no side effect (docs/contracts.md).",
    tag: "decide",
    credential: "key",
    statuses: KEYED_DECIDE,
    site: "required",
  },
  "post /svc/v1/decide": {
    summary: "Decide features for the browser's reader (signed access cookie, origin allowlist)",
    tag: "decide",
    credential: "browser",
    statuses: KEYED_DECIDE,
    site: "required",
    answer: DecideAnswer,
  },
  "get /v1/decide/forward": {
    summary: "Navigate to a journey feature's destination (302)",
    tag: "decide",
    credential: "browser",
    statuses: [302, 400, 403, 404, 413, 422, 429, 500, 503],
    site: "optional",
  },
  "get /v1/decide/interventions": {
    summary: "Subscribe to interventions (server-sent events)",
    description:
      "A stream of events telling that decisions for the subjects (or the whole site) may have changed: a deploy, grants, a gift link, streaming values, a meter period rolling over. Events carry what changed, never a decision: decide again. Heartbeats are SSE comments; `Last-Event-ID` resumes within a bounded window (past it a `reset` event). At most SVC_SSE_STREAMS_PER_KEY open streams per key (docs/interventions.md).",
    tag: "decide",
    credential: "key",
    statuses: [200, 400, 401, 403, 404, 422, 429, 500, 503],
    site: "required",
  },
  "post /v1/gift-links": {
    summary: "Mint a gift link",
    description:
      "A signed-in reader (the gifter, a user of the tenant) shares one article; the answer's token goes on the page URL as `?_gt=` (docs/gift-links.md).",
    tag: "gifts",
    credential: "key",
    statuses: [201, 400, 401, 403, 404, 409, 413, 422, 500, 503],
    site: "required",
  },
  "post /v1/gift-links/revoke": {
    summary: "Revoke a gift link",
    description:
      "The gifter takes back one of their links; readers stop reading it as soon as every process applies the change.",
    tag: "gifts",
    credential: "key",
    statuses: [200, 400, 401, 403, 404, 413, 422, 500, 503],
    site: "required",
  },

  // OFREP
  "post /ofrep/v1/evaluate/flags/{key}": {
    summary: "OFREP: evaluate one flag",
    description:
      "OpenFeature Remote Evaluation Protocol. Failures 400 and 404 answer OFREP's own shape `{ key, errorCode, errorDetails? }`; the others the envelope (docs/contracts.md).",
    tag: "ofrep",
    credential: "key",
    statuses: [200, 400, 401, 403, 404, 413, 422, 429, 500, 503],
    site: "required",
    answer: OfrepSuccess,
  },
  "post /ofrep/v1/evaluate/flags": {
    summary: "OFREP: evaluate flags in bulk",
    description: "Answers 304 to an `If-None-Match` naming the current ETag.",
    tag: "ofrep",
    credential: "key",
    statuses: [200, 304, 400, 401, 403, 404, 413, 422, 429, 500, 503],
    site: "required",
    answer: OfrepBulkAnswer,
  },

  // Content, streaming, recommendations, iglu
  "post /v1/content/sync": {
    summary: "Enqueue re-reads of changed CMS items",
    tag: "content",
    credential: "key",
    statuses: [200, 400, 401, 422, 500, 503],
    site: "required",
  },
  "post /v1/streaming/{pipeline}": {
    summary: "Write an organization's streaming scores",
    tag: "streaming",
    credential: "key",
    statuses: [200, 401, 403, 404, 413, 422, 500],
    site: "optional",
  },
  "get /v1/recommendations": {
    summary: "Recommendations for a user or device (keyed, cached 15 minutes)",
    tag: "recommendations",
    credential: "key",
    statuses: [200, 400, 401, 403, 404, 422, 500, 503],
    site: "optional",
  },
  "get /svc/v1/recommendations": {
    summary: "Recommendations for the browser's reader (never cached; windows per client and per site)",
    tag: "recommendations",
    credential: "browser",
    statuses: [200, 400, 401, 403, 404, 422, 429, 500, 503],
    site: "required",
  },
  "get /v1/iglu/schemas": {
    summary: "Every iglu: URI the service serves",
    tag: "iglu",
    credential: "key",
    statuses: [200, 401, 403, 500],
    site: "optional",
    answer: IgluListing,
  },
  "get /v1/iglu/schemas/{vendor}/{name}/jsonschema": {
    summary: "The iglu: URIs of every version of a schema",
    tag: "iglu",
    credential: "key",
    statuses: [200, 401, 403, 404, 500],
    site: "optional",
    answer: IgluListing,
  },
  "get /v1/iglu/schemas/{vendor}/{name}/jsonschema/{version}": {
    summary: "A self-describing JSON Schema (or the URIs of a model)",
    tag: "iglu",
    credential: "key",
    statuses: [200, 401, 403, 404, 500],
    site: "optional",
    answer: IgluSchemaAnswer,
  },

  // Checkout
  "post /svc/v1/checkout": {
    summary: "Start a checkout (browser, on the organization's own domain)",
    tag: "checkout",
    credential: "browser",
    statuses: [200, 400, 401, 403, 404, 413, 422, 429, 500, 503],
    site: "required",
  },
  "post /v1/checkout/webhook": {
    summary: "The payment provider's webhook (raw body, signed)",
    tag: "checkout",
    credential: "signature",
    statuses: [200, 400, 404, 413, 500, 503],
    site: "none",
    answer: WebhookAnswer,
  },

  // Identity
  "get /v1/id/config": {
    summary: "The site's identity configuration (public, any origin)",
    tag: "identity",
    credential: "none",
    statuses: PUBLIC,
    site: "required",
    answer: IdentityConfigAnswer,
  },
  "get /v1/id/traits": {
    summary: "The site's declared user traits (public, any origin)",
    tag: "identity",
    credential: "none",
    statuses: PUBLIC,
    site: "required",
    answer: TraitsAnswer,
  },
  "post /v1/id/sign-in/magic-link": {
    summary: "Email a sign-in link",
    tag: "identity",
    credential: "none",
    statuses: [200, 400, 403, 404, 413, 422, 429, 500, 503],
    site: "required",
    answer: SuccessAnswer,
  },
  "get /v1/id/magic-link": {
    summary: "The emailed link's interstitial page (HTML; it POSTs to consume)",
    tag: "identity",
    credential: "none",
    statuses: [200, 400, 404, 422],
    site: "optional",
    html: true,
  },
  "post /v1/id/magic-link/consume": {
    summary: "Consume a magic-link token: a session",
    tag: "identity",
    credential: "none",
    statuses: [200, 400, 403, 404, 422, 500],
    site: "required",
    answer: SignedInAnswer,
  },
  "get /v1/id/get-session": {
    summary: "The current session (exchanges the upstream login in `dual`)",
    tag: "identity",
    credential: "session-optional",
    statuses: [200, 400, 404, 500],
    site: "required",
    answer: CurrentSessionAnswer,
  },
  "post /v1/id/sign-out": {
    summary: "End the session",
    tag: "identity",
    credential: "session",
    statuses: [200, 400, 401, 403, 404, 500],
    site: "required",
    answer: SignOutAnswer,
  },
  "patch /v1/id/user-details": {
    summary: "Update the signed-in user's details and traits",
    tag: "identity",
    credential: "session",
    statuses: ORG,
    site: "required",
    answer: UserAnswer,
  },
  "post /v1/id/session/exchange": {
    summary: "Exchange an upstream credential for a session (`dual` only)",
    tag: "identity",
    credential: "none",
    statuses: [200, 400, 401, 403, 404, 422, 500, 503],
    site: "required",
    answer: SignedInAnswer,
  },
  "post /v1/id/upstream/revoke-sessions": {
    summary: "Upstream push: revoke every session of a person",
    tag: "upstream",
    credential: "key",
    statuses: UPSTREAM,
    site: "required",
    answer: UpstreamPushAnswer,
  },
  "post /v1/id/upstream/change-identifier": {
    summary: "Upstream push: a person's address changed",
    tag: "upstream",
    credential: "key",
    statuses: UPSTREAM_CONFLICT,
    site: "required",
    answer: UpstreamPushAnswer,
  },
  "post /v1/id/upstream/change-subject": {
    summary: "Upstream push: a person has a new upstream subject",
    tag: "upstream",
    credential: "key",
    statuses: UPSTREAM_CONFLICT,
    site: "required",
    answer: UpstreamPushAnswer,
  },
  "post /v1/id/upstream/erase": {
    summary: "Upstream push: erase a person (anonymised in place)",
    tag: "upstream",
    credential: "key",
    statuses: UPSTREAM,
    site: "required",
    answer: UpstreamPushAnswer,
  },

  // Grants, organizations, newsletters
  "get /v1/grants": {
    summary: "The signed-in user's grants",
    tag: "grants",
    credential: "session",
    statuses: [200, 400, 401, 403, 404, 500],
    site: "required",
  },
  "get /v1/org/invitation": {
    summary: "An emailed invitation's page (HTML; it accepts or rejects with the invitee's session)",
    tag: "organizations",
    credential: "none",
    statuses: [200, 400, 404, 422],
    site: "optional",
    html: true,
  },
  "get /v1/org/list-members": {
    summary: "Members of the organization",
    tag: "organizations",
    credential: "session",
    statuses: ORG,
    site: "required",
    answer: MembersAnswer,
  },
  "get /v1/org/list-invitations": {
    summary: "Invitations of the organization",
    tag: "organizations",
    credential: "session",
    statuses: ORG,
    site: "required",
    answer: InvitationsAnswer,
  },
  "post /v1/org/update-member-role": {
    summary: "Change a member's role",
    tag: "organizations",
    credential: "session",
    statuses: ORG,
    site: "required",
    answer: MembershipAnswer,
  },
  "post /v1/org/invite-member": {
    summary: "Invite a member (a pending seat)",
    tag: "organizations",
    credential: "session",
    statuses: ORG,
    site: "required",
    answer: InvitationAnswer,
  },
  "post /v1/org/set-active": {
    summary: "Set the session's active organization",
    tag: "organizations",
    credential: "session",
    statuses: ORG,
    site: "required",
    answer: ActiveOrganizationAnswer,
  },
  "post /v1/org/update": {
    summary: "Rename the organization or change its logo",
    tag: "organizations",
    credential: "session",
    statuses: ORG,
    site: "required",
    answer: OrganizationAnswer,
  },
  "post /v1/org/remove-member": {
    summary: "Remove a member",
    tag: "organizations",
    credential: "session",
    statuses: ORG,
    site: "required",
    answer: SuccessAnswer,
  },
  "post /v1/org/cancel-invitation": {
    summary: "Cancel an invitation",
    tag: "organizations",
    credential: "session",
    statuses: SESSION,
    site: "required",
    answer: InvitationAnswer,
  },
  "post /v1/org/accept-invitation": {
    summary: "Accept an invitation (the invitee's verified session)",
    tag: "organizations",
    credential: "session",
    statuses: SESSION,
    site: "required",
    answer: AcceptedInvitationAnswer,
  },
  "post /v1/org/reject-invitation": {
    summary: "Reject an invitation",
    tag: "organizations",
    credential: "session",
    statuses: SESSION,
    site: "required",
    answer: InvitationAnswer,
  },
  "get /v1/newsletters/lists": {
    summary: "The site's deployed newsletter lists",
    tag: "newsletters",
    credential: "none",
    statuses: [200, 400, 404, 500],
    site: "required",
    answer: ListsAnswer,
  },
  "get /v1/newsletters/subscriptions": {
    summary: "A person's standing on every list",
    tag: "newsletters",
    credential: "newsletter",
    statuses: [200, 400, 401, 403, 404, 422, 500],
    site: "required",
    answer: SubscriptionsAnswer,
  },
  "put /v1/newsletters/subscriptions": {
    summary: "Replace a person's subscriptions (202 when a confirmation went out)",
    tag: "newsletters",
    credential: "newsletter",
    statuses: [200, 202, 400, 401, 403, 404, 422, 429, 500, 503],
    site: "required",
    answer: SubscriptionsAnswer,
  },
  "get /v1/newsletters/confirm": {
    summary: "Emailed confirmation link: a page with a button (HTML)",
    tag: "newsletters",
    credential: "none",
    statuses: [200, 400, 404],
    site: "none",
    html: true,
  },
  "post /v1/newsletters/confirm": {
    summary: "Confirm a pending subscription (form post, HTML answer)",
    tag: "newsletters",
    credential: "none",
    statuses: [200, 400, 404, 410],
    site: "none",
    html: true,
  },
  "get /v1/newsletters/unsubscribe": {
    summary: "Emailed unsubscribe link: a page with a button (HTML)",
    tag: "newsletters",
    credential: "none",
    statuses: [200, 400, 404],
    site: "none",
    html: true,
  },
  "post /v1/newsletters/unsubscribe": {
    summary: "One-click unsubscribe (RFC 8058, form post, HTML answer)",
    tag: "newsletters",
    credential: "none",
    statuses: [200, 400, 404, 410],
    site: "none",
    html: true,
  },

  // Admin
  "get /admin/audit": admin("The operator plane's audit trail", ADMIN_READ, AuditAnswer),
  "get /admin/db/stats": admin(
    "The store's size: the database, and each table's row estimate and bytes",
    ADMIN_READ,
    StoreStatsAnswer,
  ),
  "get /admin/db/backup": admin(
    "A consistent dump of the embedded store, gzipped (`svc backup`); 409 on a Postgres server (use pg_dump)",
    [200, 401, 409, 500, 503],
  ),
  "get /admin/tenants": admin("Tenants", ADMIN_READ, TenantsAnswer),
  "post /admin/tenants": admin("Create a tenant", ADMIN_CREATE, CreatedTenantAnswer),
  "put /admin/tenants/{tenant}/identity-provider": admin(
    "Connect the tenant's identity provider",
    ADMIN_WRITE,
    IdentityProviderAnswer,
  ),
  "delete /admin/tenants/{tenant}/identity-provider": admin(
    "Disconnect the tenant's identity provider",
    ADMIN_WRITE,
    IdentityProviderAnswer,
  ),
  "put /admin/tenants/{tenant}/public-url": admin("Set the tenant's public URL", ADMIN_WRITE, PublicUrlAnswer),
  "delete /admin/tenants/{tenant}/public-url": admin("Clear the tenant's public URL", ADMIN_WRITE, PublicUrlAnswer),
  "get /admin/tenants/{tenant}/sites": admin("Sites of a tenant", ADMIN_READ, SitesAnswer),
  "post /admin/tenants/{tenant}/sites": admin("Create a site", ADMIN_CREATE, CreatedSiteAnswer),
  "post /admin/tenants/{tenant}/sites/{site}/disable": admin("Disable a site", ADMIN_WRITE, SiteStateAnswer),
  "post /admin/tenants/{tenant}/sites/{site}/enable": admin("Enable a site", ADMIN_WRITE, SiteStateAnswer),
  "post /admin/tenants/{tenant}/sites/{site}/deploy": admin(
    "Deploy (or stage) a site document",
    ADMIN_WRITE,
    DeploymentAnswer,
  ),
  "post /admin/tenants/{tenant}/sites/{site}/diff": admin(
    "Compare a document with the live one",
    ADMIN_WRITE,
    DiffAnswer,
  ),
  "get /admin/tenants/{tenant}/sites/{site}/documents": admin(
    "A site's document versions",
    ADMIN_READ,
    DocumentsAnswer,
  ),
  "get /admin/tenants/{tenant}/sites/{site}/documents/{version}": admin(
    "One document version",
    ADMIN_READ,
    DocumentVersionAnswer,
  ),
  "post /admin/tenants/{tenant}/sites/{site}/documents/{version}/publish": admin(
    "Publish a staged version",
    ADMIN_WRITE,
    PublishedAnswer,
  ),
  "get /admin/tenants/{tenant}/sites/{site}/content-keys": admin(
    "A site's content keys: ids and fingerprints, never a secret",
    ADMIN_READ,
    ContentKeysAnswer,
  ),
  "post /admin/tenants/{tenant}/sites/{site}/content-keys/{keyId}/rotate": admin(
    "Replace a content key's secret (one made here is answered this once)",
    ADMIN_WRITE,
    RotatedContentKeyAnswer,
  ),
  "get /admin/tenants/{tenant}/sites/{site}/keys": admin("A site's API keys", ADMIN_READ, KeysAnswer),
  "post /admin/tenants/{tenant}/sites/{site}/keys": admin(
    "Issue an API key (its value shown once)",
    ADMIN_CREATE,
    IssuedKeyAnswer,
  ),
  "post /admin/tenants/{tenant}/sites/{site}/keys/{keyId}/revoke": admin(
    "Revoke an API key",
    ADMIN_WRITE,
    RevokedKeyAnswer,
  ),
  "post /admin/tenants/{tenant}/sites/{site}/preview-tokens": admin(
    "Mint a preview token",
    ADMIN_WRITE,
    PreviewTokenAnswer,
  ),
  "post /admin/tenants/{tenant}/sites/{site}/explain": admin(
    "Explain decisions for a subject",
    ADMIN_WRITE,
    ExplainAnswer,
  ),
  "get /admin/tenants/{tenant}/sites/{site}/impact": admin(
    "Sampled impact of the live document",
    ADMIN_READ,
    ImpactAnswer,
  ),
  "get /admin/tenants/{tenant}/sites/{site}/insight/decisions": admin(
    "Decisions per feature, outcome and variant over a range (1h, 24h, 7d, 30d)",
    ADMIN_READ,
    DecisionsReport,
  ),
  "get /admin/tenants/{tenant}/sites/{site}/insight/funnel": admin(
    "Walled readers, checkouts started, completed and granted, per day and offer",
    ADMIN_READ,
    FunnelReport,
  ),
  "get /admin/tenants/{tenant}/sites/{site}/insight/experiments": admin(
    "Exposures, outcomes and conversions per experiment variant, with a two-proportion z-test",
    ADMIN_READ,
    ExperimentsReport,
  ),
  "get /admin/tenants/{tenant}/sites/{site}/insight/meters": admin(
    "Readers per meter value in each meter's current period",
    ADMIN_READ,
    MetersReport,
  ),
  "get /admin/tenants/{tenant}/sites/{site}/gift-links/report": admin("Gift-link report", ADMIN_READ),
  "post /admin/tenants/{tenant}/sites/{site}/gift-links/{gift}/revoke": admin("Revoke a gift link"),
  "get /admin/tenants/{tenant}/sites/{site}/content": admin(
    "Content items read from the CMS",
    ADMIN_READ,
    ContentStatsAnswer,
  ),
  "get /admin/tenants/{tenant}/sites/{site}/content/{id}": admin("One content item", ADMIN_READ, ContentItemAnswer),
  "post /admin/tenants/{tenant}/users": admin(
    "Create (or find) a user: 201 created, 200 found",
    [200, 201, 400, 401, 404, 413, 422, 500],
    CreatedUserAnswer,
  ),
  "get /admin/tenants/{tenant}/users/{user}/grants": admin("A user's grants", ADMIN_READ, GrantsAnswer),
  "post /admin/tenants/{tenant}/users/{user}/grants": admin("Grant a user an entitlement", ADMIN_WRITE, GrantAnswer),
  "delete /admin/tenants/{tenant}/users/{user}/grants/{grant}": admin(
    "Revoke a grant",
    ADMIN_WRITE,
    RevokedGrantAnswer,
  ),
  "get /admin/tenants/{tenant}/organizations": admin("Organizations of a tenant", ADMIN_READ, OrganizationsAnswer),
  "post /admin/tenants/{tenant}/organizations": admin(
    "Create an organization with its owner",
    ADMIN_CREATE,
    CreatedOrganizationAnswer,
  ),
  "get /admin/tenants/{tenant}/services": admin("Outside services connected", ADMIN_READ, ServicesAnswer),
  "put /admin/tenants/{tenant}/services/{service}": admin("Connect an outside service", ADMIN_WRITE, ServiceSetAnswer),
  "delete /admin/tenants/{tenant}/services/{service}": admin(
    "Disconnect an outside service",
    ADMIN_WRITE,
    ServiceClearedAnswer,
  ),
  "get /admin/tenants/{tenant}/recommendations/usage": admin(
    "Recommendation quota spent",
    ADMIN_READ,
    RecommendationUsageAnswer,
  ),
  "get /admin/tenants/{tenant}/console-users": admin("Console users", ADMIN_READ, ConsoleUsersAnswer),
  "post /admin/tenants/{tenant}/console-users": admin("Add a console user", ADMIN_WRITE, ConsoleUserAnswer),
  "delete /admin/tenants/{tenant}/console-users/{email}": admin(
    "Remove a console user",
    ADMIN_WRITE,
    RemovedConsoleUserAnswer,
  ),
};

/** Browser-facing paths served on both mounts (spec, Mounts): `/svc/v1/...` is the `/v1/...` route. */
const MIRRORED = /^\/svc(\/v1\/(id|org|grants|newsletters\/lists|newsletters\/subscriptions|decide\/forward)(\/|$))/;

/** The table's key of a route: `/svc/v1` twins of browser-facing routes read as their `/v1` path. */
export function contractKey(method: string, path: string): string {
  const mirrored = MIRRORED.exec(path);
  return `${method.toLowerCase()} ${mirrored === null ? path : path.slice(4)}`;
}

/** Whether the path is the `/svc/v1` twin of a `/v1` route. */
export function isMirror(path: string): boolean {
  return MIRRORED.test(path);
}
