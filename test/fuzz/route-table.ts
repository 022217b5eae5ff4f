import { BROWSER_MOUNTS } from "../../src/http/mounts";
import { signedContent } from "../helpers/content";

/**
 * Every route the app serves, with what a valid request to it looks like: the fuzz suite
 * mutates these into hostile requests. The suite fails when the app registers a route this
 * table does not list (or lists one the app no longer serves), so a new route is fuzzed from
 * the day it lands: add a row here.
 */

/** What a valid call presents. The suite also sends garbage of every kind on every route. */
export type Credential =
  /** Nothing. */
  | "none"
  /** An API key of the site (`Authorization: Bearer` or `x-api-key`). */
  | "key"
  /** A service session (cookie, or its token as a bearer). */
  | "session"
  /** A session that may be spent (sign-out ends it). */
  | "spare-session"
  /** An allowed Origin, optionally with the session and access cookies. */
  | "browser"
  /** The upstream login's cookie (dual sites). */
  | "upstream"
  /** The operator token. */
  | "operator";

/** Real values made during setup that valid requests carry. */
export interface World {
  /** An API key of site `news` (tenant `default`). */
  key: string;
  /** `svc.session_token=...; svc.access=...` of a reader signed in by magic link. */
  cookie: string;
  /** The same session's token, as a native client sends it. */
  sessionToken: string;
  /** A session of another reader, for sign-out. */
  spareCookie: string;
  /** An emailed sign-in token, not consumed yet. */
  magicToken: string;
  /** A credential of the fake identity provider for the `dual` site. */
  upstreamToken: string;
  /** A subject bound by an exchange, for the upstream pushes. */
  subject: string;
  /** The operator plane's targets: tenant `fuzz`, site `target`, a key, a user and a grant of it. */
  admin: { tenant: string; site: string; keyId: string; userId: string; grant: string };
  /** A user of tenant `default` (the signed-in reader): a gifter of site `news`. */
  gifter: string;
  /** A gift link that reader minted on `news`. */
  giftId: string;
}

export interface RouteSpec {
  method: string;
  /** The path as Elysia lists it (`app.routes`), with `:param` segments. */
  path: string;
  credential: Credential;
  /** The site a valid request selects (`news` unless said). */
  site?: string;
  /** A valid body; absent when the route reads none (the suite still sends bodies). */
  body?: (w: World) => Record<string, unknown>;
  /** A valid query. */
  query?: (w: World) => Record<string, string>;
  /** Valid values of the path's `:param` segments. */
  params?: (w: World) => Record<string, string>;
  /** Statuses this route answers without the JSON envelope by design (302 redirect, HTML page, 204 preflight). */
  nonJson?: number[];
  /**
   * The path answers a CORS preflight (`browserCors` registers `OPTIONS` for every path of a
   * browser mount but navigation-only ones): `withPreflights` lists that OPTIONS row.
   */
  preflight?: boolean;
  /** A route answering errors in a protocol's own JSON shape besides the envelope (OFREP). */
  errorShape?: (body: unknown) => boolean;
}

/** OFREP's failure shape: `{ key?, errorCode, errorDetails? }`. */
const ofrepFailure = (body: unknown) =>
  typeof body === "object" && body !== null && typeof (body as { errorCode?: unknown }).errorCode === "string";

const ORIGIN = "https://news.example";
/** An id no organization, member or invitation has: the organization routes answer 404 to it. */
const FUZZ_UUID = "00000000-0000-4000-8000-00000000f022";
export const BROWSER_ORIGIN = ORIGIN;

/** A browser-facing route, registered on both mounts; it answers preflights unless `preflight: false`. */
function bothMounts(spec: RouteSpec): RouteSpec[] {
  return BROWSER_MOUNTS.map((mount) => ({ ...spec, path: `${mount}${spec.path}`, preflight: spec.preflight ?? true }));
}

/** The rows plus one OPTIONS row per path that answers preflights, right after that path's first row. */
function withPreflights(rows: RouteSpec[]): RouteSpec[] {
  const out: RouteSpec[] = [];
  const seen = new Set<string>();
  for (const row of rows) {
    out.push(row);
    if (!row.preflight || seen.has(row.path)) continue;
    seen.add(row.path);
    out.push({ method: "OPTIONS", path: row.path, credential: "browser", params: row.params, nonJson: [204] });
  }
  return out;
}

const adminSite = (w: World) => ({ tenant: w.admin.tenant, site: w.admin.site });
const adminUser = (w: World) => ({ tenant: w.admin.tenant, user: w.admin.userId });

/**
 * In the order the suite runs them: operator routes last, and the tenant creation last of all,
 * because a generated valid body may bind host names or move the default tenant, after which
 * the browser routes would only answer 404.
 */
export const ROUTES: RouteSpec[] = withPreflights([
  { method: "GET", path: "/health", credential: "none" },
  { method: "GET", path: "/ready", credential: "none" },
  { method: "GET", path: "/metrics", credential: "operator" },
  {
    method: "POST",
    path: "/v1/decide",
    credential: "key",
    body: () => ({
      features: ["paywall", "teaser", "section"],
      deviceId: "dev-1",
      userId: "reader-1",
      content: signedContent({ id: "article-1", section: "sport" }),
      context: { section: "sport", offer: "x" },
      giftLink: "gift",
    }),
  },
  {
    method: "POST",
    path: "/svc/v1/decide",
    credential: "browser",
    body: () => ({
      features: ["paywall", "teaser"],
      deviceId: "browser-1",
      content: signedContent({ id: "article-2", section: "sport" }),
      context: { section: "sport" },
    }),
  },
  { method: "OPTIONS", path: "/svc/v1/decide", credential: "browser", nonJson: [204] },
  ...bothMounts({
    method: "GET",
    path: "/decide/forward",
    credential: "browser",
    query: () => ({ feature: "subscribe", site: "news", deviceId: "dev-2", offer: "spring" }),
    nonJson: [302],
    preflight: false,
  }),
  ...bothMounts({ method: "GET", path: "/id/config", credential: "none" }),
  ...bothMounts({ method: "GET", path: "/id/traits", credential: "none" }),
  ...bothMounts({
    method: "POST",
    path: "/id/sign-in/magic-link",
    credential: "none",
    body: () => ({ email: "fuzz-reader@example.com", callbackURL: "/articles/1" }),
  }),
  ...bothMounts({
    method: "GET",
    path: "/id/magic-link",
    credential: "none",
    query: (w) => ({ token: w.magicToken, site: "news", callbackURL: "/articles/1" }),
    nonJson: [200],
  }),
  ...bothMounts({
    method: "POST",
    path: "/id/magic-link/consume",
    credential: "none",
    body: (w) => ({ token: w.magicToken, callbackURL: "/articles/1" }),
  }),
  ...bothMounts({ method: "GET", path: "/id/get-session", credential: "session" }),
  ...bothMounts({ method: "GET", path: "/grants", credential: "session" }),
  ...bothMounts({
    method: "PATCH",
    path: "/id/user-details",
    credential: "session",
    body: () => ({
      name: "Reader",
      firstName: "Re",
      lastName: null,
      userTraits: { interests: ["sport"], edition: "uk", birthYear: 1980 },
    }),
  }),
  ...bothMounts({ method: "POST", path: "/id/sign-out", credential: "spare-session" }),
  ...bothMounts({
    method: "POST",
    path: "/org/update-member-role",
    credential: "session",
    body: () => ({ memberId: FUZZ_UUID, role: "admin", organizationId: FUZZ_UUID }),
  }),
  ...bothMounts({
    method: "POST",
    path: "/org/invite-member",
    credential: "session",
    body: () => ({ email: "fuzz-invitee@example.com", role: "member", organizationId: FUZZ_UUID, resend: true }),
  }),
  ...bothMounts({
    method: "POST",
    path: "/org/set-active",
    credential: "session",
    body: () => ({ organizationId: null }),
  }),
  ...bothMounts({
    method: "POST",
    path: "/org/update",
    credential: "session",
    body: () => ({ organizationId: FUZZ_UUID, name: "Fuzz", logo: null }),
  }),
  ...bothMounts({
    method: "POST",
    path: "/org/remove-member",
    credential: "session",
    body: () => ({ memberIdOrEmail: "fuzz-member@example.com", organizationId: FUZZ_UUID }),
  }),
  ...bothMounts({
    method: "GET",
    path: "/org/list-members",
    credential: "session",
    query: () => ({ organizationId: FUZZ_UUID }),
  }),
  ...bothMounts({
    method: "GET",
    path: "/org/list-invitations",
    credential: "session",
    query: () => ({ organizationId: FUZZ_UUID }),
  }),
  ...bothMounts({
    method: "POST",
    path: "/org/cancel-invitation",
    credential: "session",
    body: () => ({ invitationId: FUZZ_UUID }),
  }),
  ...bothMounts({
    method: "POST",
    path: "/org/accept-invitation",
    credential: "session",
    body: () => ({ invitationId: FUZZ_UUID }),
  }),
  ...bothMounts({
    method: "POST",
    path: "/org/reject-invitation",
    credential: "session",
    body: () => ({ invitationId: FUZZ_UUID }),
  }),
  ...bothMounts({
    method: "GET",
    path: "/org/invitation",
    credential: "none",
    query: () => ({ id: FUZZ_UUID, site: "news" }),
    nonJson: [200],
  }),
  ...bothMounts({ method: "GET", path: "/newsletters/lists", credential: "none" }),
  ...bothMounts({ method: "GET", path: "/newsletters/subscriptions", credential: "session" }),
  ...bothMounts({
    method: "PUT",
    path: "/newsletters/subscriptions",
    credential: "session",
    body: () => ({ subscribed: [] }),
  }),
  // Emailed newsletter links (/v1 only): pages, not JSON; a token that is not ours is a 404 page.
  ...["GET", "POST"].flatMap((method) =>
    ["/v1/newsletters/confirm", "/v1/newsletters/unsubscribe"].map(
      (path): RouteSpec => ({
        method,
        path,
        credential: "none",
        query: () => ({ token: "not-a-token" }),
        nonJson: [200, 404, 410],
      }),
    ),
  ),
  ...bothMounts({
    method: "POST",
    path: "/id/session/exchange",
    credential: "upstream",
    site: "dual",
    body: (w) => ({ subject_token: w.upstreamToken, subject_token_type: "urn:ietf:params:oauth:token-type:jwt" }),
  }),
  {
    method: "POST",
    path: "/v1/id/upstream/revoke-sessions",
    credential: "key",
    body: (w) => ({ subject: w.subject, cause: "lock" }),
  },
  {
    method: "POST",
    path: "/v1/id/upstream/change-identifier",
    credential: "key",
    body: (w) => ({
      subject: w.subject,
      email: "moved@example.com",
      changedAt: "2026-11-21T12:00:00Z",
      emailVerified: true,
    }),
  },
  {
    method: "POST",
    path: "/v1/id/upstream/change-subject",
    credential: "key",
    body: (w) => ({ subject: w.subject, newSubject: `${w.subject}-new` }),
  },
  { method: "POST", path: "/v1/id/upstream/erase", credential: "key", body: (w) => ({ subject: w.subject }) },
  {
    method: "POST",
    path: "/svc/v1/checkout",
    credential: "browser",
    body: () => ({ offer: "offer_annual", returnPath: "/welcome", cancelPath: "/article/1" }),
    preflight: true,
  },
  // The provider's signature is the credential: a fuzzed delivery never verifies (400).
  { method: "POST", path: "/v1/checkout/webhook", credential: "none", body: () => ({ id: "evt_1", type: "x" }) },
  {
    method: "POST",
    path: "/v1/gift-links",
    credential: "key",
    body: (w) => ({ userId: w.gifter, contentId: "article-1", content: signedContent({ id: "article-1" }) }),
  },
  {
    method: "POST",
    path: "/v1/gift-links/revoke",
    credential: "key",
    body: (w) => ({ userId: w.gifter, giftId: w.giftId }),
  },
  // A stream of events (text/event-stream) on success: the suite reads its headers and closes it.
  {
    method: "GET",
    path: "/v1/decide/interventions",
    credential: "key",
    query: () => ({ subjects: "reader-1,device-2" }),
    nonJson: [200],
  },
  // Public: the document names no site and no secret.
  { method: "GET", path: "/v1/decide/openapi.json", credential: "none" },
  { method: "GET", path: "/openapi.json", credential: "none" },
  { method: "GET", path: "/openapi", credential: "none" },
  { method: "GET", path: "/openapi/assets/:file", credential: "none", params: () => ({ file: "swagger-ui.css" }) },
  {
    method: "POST",
    path: "/ofrep/v1/evaluate/flags/:key",
    credential: "key",
    params: () => ({ key: "paywall" }),
    body: () => ({ context: { targetingKey: "reader-1", content: signedContent({ id: "article-1" }), plan: "x" } }),
    errorShape: ofrepFailure,
  },
  {
    method: "POST",
    path: "/ofrep/v1/evaluate/flags",
    credential: "key",
    body: () => ({ context: { targetingKey: "reader-1", "svc.features": ["paywall", "section"] } }),
    errorShape: ofrepFailure,
  },
  { method: "GET", path: "/v1/iglu/schemas", credential: "key" },
  {
    method: "GET",
    path: "/v1/iglu/schemas/:vendor/:name/jsonschema",
    credential: "key",
    params: () => ({ vendor: "com.svc", name: "experiment_exposure" }),
  },
  {
    method: "GET",
    path: "/v1/iglu/schemas/:vendor/:name/jsonschema/:version",
    credential: "key",
    params: () => ({ vendor: "com.svc", name: "experiment_exposure", version: "1-0-0" }),
  },
  {
    method: "POST",
    path: "/v1/streaming/:pipeline",
    credential: "key",
    params: () => ({ pipeline: "engagement" }),
    body: () => ({
      rows: [
        { user_id: FUZZ_UUID, window_end: "2026-11-21T10:00:00Z", score: 0.5, visits: 3, segment: "loyal" },
        { user_id: FUZZ_UUID, window_end: 1_795_000_000_000, churn_risk: null },
      ],
    }),
  },
  {
    method: "POST",
    path: "/v1/content/sync",
    credential: "key",
    body: () => ({
      events: [
        { id: "fuzz-1", type: "tag" },
        { id: "fuzz-2", type: "asset" },
      ],
    }),
  },
  {
    method: "GET",
    path: "/v1/recommendations",
    credential: "key",
    query: () => ({ userId: "fuzz-reader", scenario: "homepage", count: "3", edition: "fuzz", sections: "world" }),
  },
  {
    method: "GET",
    path: "/svc/v1/recommendations",
    credential: "browser",
    query: () => ({ domainUserId: "device-1", count: "3", tags: "politics" }),
  },
  { method: "OPTIONS", path: "/svc/v1/recommendations", credential: "browser", nonJson: [204] },
  {
    method: "GET",
    path: "/admin/tenants/:tenant/recommendations/usage",
    credential: "operator",
    params: () => ({ tenant: "default" }),
  },
  { method: "GET", path: "/admin/tenants", credential: "operator" },
  { method: "GET", path: "/admin/db/stats", credential: "operator" },
  { method: "GET", path: "/admin/db/backup", credential: "operator" },
  {
    method: "GET",
    path: "/admin/audit",
    credential: "operator",
    query: () => ({ tenant: "default", site: "news", limit: "5" }),
  },
  {
    method: "PUT",
    path: "/admin/tenants/:tenant/identity-provider",
    credential: "operator",
    params: (w) => ({ tenant: w.admin.tenant }),
    body: () => ({ issuer: "https://login.example", jwksUrl: "https://login.example/.well-known/jwks.json" }),
  },
  {
    method: "DELETE",
    path: "/admin/tenants/:tenant/identity-provider",
    credential: "operator",
    params: (w) => ({ tenant: w.admin.tenant }),
  },
  {
    method: "GET",
    path: "/admin/tenants/:tenant/services",
    credential: "operator",
    params: (w) => ({ tenant: w.admin.tenant }),
  },
  {
    method: "PUT",
    path: "/admin/tenants/:tenant/services/:service",
    credential: "operator",
    params: (w) => ({ tenant: w.admin.tenant, service: "recombee" }),
    body: () => ({ databaseId: "fuzz-db", token: "fuzz-token", baseUri: "http://127.0.0.1:9" }),
  },
  {
    method: "DELETE",
    path: "/admin/tenants/:tenant/services/:service",
    credential: "operator",
    params: (w) => ({ tenant: w.admin.tenant, service: "recombee" }),
  },
  {
    method: "PUT",
    path: "/admin/tenants/:tenant/public-url",
    credential: "operator",
    params: (w) => ({ tenant: w.admin.tenant }),
    body: () => ({ publicUrl: "https://id.fuzz.example" }),
  },
  {
    method: "DELETE",
    path: "/admin/tenants/:tenant/public-url",
    credential: "operator",
    params: (w) => ({ tenant: w.admin.tenant }),
  },
  {
    method: "GET",
    path: "/admin/tenants/:tenant/sites",
    credential: "operator",
    params: (w) => ({ tenant: w.admin.tenant }),
  },
  {
    method: "POST",
    path: "/admin/tenants/:tenant/sites",
    credential: "operator",
    params: (w) => ({ tenant: w.admin.tenant }),
    body: () => ({ id: "fuzz-site" }),
  },
  {
    method: "POST",
    path: "/admin/tenants/:tenant/sites/:site/disable",
    credential: "operator",
    params: adminSite,
  },
  {
    method: "POST",
    path: "/admin/tenants/:tenant/sites/:site/enable",
    credential: "operator",
    params: adminSite,
  },
  {
    method: "POST",
    path: "/admin/tenants/:tenant/sites/:site/deploy",
    credential: "operator",
    params: adminSite,
    body: () => ({
      preview: false,
      document: {
        schemaVersion: 1,
        identity: { mode: "svc_only" },
        allowedOrigins: [ORIGIN],
        meters: { reads: { kind: "count", allowance: 3, period: "day", timeZone: "UTC" } },
        features: {
          wall: {
            purpose: "decision",
            outcomes: { open: { type: "allow" }, shut: { type: "deny" } },
            rules: [{ when: { meter: "reads", remaining: { gt: 0 } }, then: "open", tick: ["reads"] }],
            default: "shut",
            onError: "shut",
          },
        },
      },
    }),
  },
  {
    method: "GET",
    path: "/admin/tenants/:tenant/sites/:site/documents",
    credential: "operator",
    params: adminSite,
  },
  {
    method: "GET",
    path: "/admin/tenants/:tenant/sites/:site/documents/:version",
    credential: "operator",
    params: (w) => ({ ...adminSite(w), version: "1" }),
  },
  {
    method: "POST",
    path: "/admin/tenants/:tenant/sites/:site/documents/:version/publish",
    credential: "operator",
    params: (w) => ({ ...adminSite(w), version: "1" }),
  },
  {
    method: "POST",
    path: "/admin/tenants/:tenant/sites/:site/diff",
    credential: "operator",
    params: adminSite,
    body: () => ({
      document: {
        schemaVersion: 1,
        identity: { mode: "svc_only" },
        allowedOrigins: [ORIGIN],
        features: {
          wall: { purpose: "decision", outcomes: { open: { type: "allow" } }, default: "open", onError: "open" },
        },
      },
    }),
  },
  {
    method: "GET",
    path: "/admin/tenants/:tenant/sites/:site/impact",
    credential: "operator",
    params: adminSite,
  },
  ...(["decisions", "funnel", "experiments"] as const).map((report) => ({
    method: "GET" as const,
    path: `/admin/tenants/:tenant/sites/:site/insight/${report}`,
    credential: "operator" as const,
    params: adminSite,
    query: () => ({ range: "7d" }),
  })),
  {
    method: "GET",
    path: "/admin/tenants/:tenant/sites/:site/insight/meters",
    credential: "operator",
    params: adminSite,
  },
  {
    method: "GET",
    path: "/admin/tenants/:tenant/sites/:site/keys",
    credential: "operator",
    params: adminSite,
  },
  {
    method: "POST",
    path: "/admin/tenants/:tenant/sites/:site/keys",
    credential: "operator",
    params: adminSite,
    body: () => ({ name: "fuzz key", expiresInDays: 30, permissions: ["streaming:write"] }),
  },
  {
    method: "POST",
    path: "/admin/tenants/:tenant/sites/:site/keys/:keyId/revoke",
    credential: "operator",
    params: (w) => ({ ...adminSite(w), keyId: w.admin.keyId }),
  },
  {
    method: "GET",
    path: "/admin/tenants/:tenant/sites/:site/content-keys",
    credential: "operator",
    params: adminSite,
  },
  {
    method: "POST",
    path: "/admin/tenants/:tenant/sites/:site/content-keys/:keyId/rotate",
    credential: "operator",
    params: (w) => ({ ...adminSite(w), keyId: "k1" }),
    body: () => ({ secret: "a-rotated-content-secret" }),
  },
  {
    method: "POST",
    path: "/admin/tenants/:tenant/sites/:site/preview-tokens",
    credential: "operator",
    params: adminSite,
    body: () => ({ ttlSeconds: 600 }),
  },
  {
    method: "POST",
    path: "/admin/tenants/:tenant/users",
    credential: "operator",
    params: (w) => ({ tenant: w.admin.tenant }),
    body: () => ({ email: "fuzz-user@example.com" }),
  },
  {
    method: "GET",
    path: "/admin/tenants/:tenant/users/:user/grants",
    credential: "operator",
    params: adminUser,
  },
  {
    method: "POST",
    path: "/admin/tenants/:tenant/users/:user/grants",
    credential: "operator",
    params: adminUser,
    body: () => ({ grant: "premium", expiresAt: "2027-01-01T00:00:00Z" }),
  },
  {
    method: "DELETE",
    path: "/admin/tenants/:tenant/users/:user/grants/:grant",
    credential: "operator",
    params: (w) => ({ ...adminUser(w), grant: w.admin.grant }),
  },
  {
    method: "GET",
    path: "/admin/tenants/:tenant/sites/:site/gift-links/report",
    credential: "operator",
    params: () => ({ tenant: "default", site: "news" }),
  },
  {
    method: "POST",
    path: "/admin/tenants/:tenant/sites/:site/explain",
    credential: "operator",
    params: () => ({ tenant: "default", site: "news" }),
    body: () => ({ features: ["paywall", "section"], deviceId: "fuzz-device", content: signedContent({ id: "a-1" }) }),
  },
  {
    method: "POST",
    path: "/admin/tenants/:tenant/sites/:site/gift-links/:gift/revoke",
    credential: "operator",
    params: (w) => ({ tenant: "default", site: "news", gift: w.giftId }),
  },
  {
    method: "GET",
    path: "/admin/tenants/:tenant/sites/:site/content",
    credential: "operator",
    params: () => ({ tenant: "default", site: "news" }),
  },
  {
    method: "GET",
    path: "/admin/tenants/:tenant/sites/:site/content/:id",
    credential: "operator",
    params: () => ({ tenant: "default", site: "news", id: "fuzz-item" }),
  },
  {
    method: "GET",
    path: "/admin/tenants/:tenant/organizations",
    credential: "operator",
    params: (w) => ({ tenant: w.admin.tenant }),
  },
  {
    method: "POST",
    path: "/admin/tenants/:tenant/organizations",
    credential: "operator",
    params: (w) => ({ tenant: w.admin.tenant }),
    body: () => ({ name: "Fuzz Org", slug: "fuzz-org", ownerEmail: "fuzz-owner@example.com" }),
  },
  {
    method: "POST",
    path: "/admin/tenants",
    credential: "operator",
    body: () => ({ id: "fuzz-tenant", hosts: ["fuzz.example"], default: false, publicUrl: "https://fuzz.example" }),
  },
]);

/**
 * The console's pages (src/console) answer HTML, errors included, and need a console session
 * (and a CSRF token on posts), which no fuzz credential carries: fuzzed signed out, they must still
 * answer below 500 and write nothing. test/console/console.test.ts fuzzes the forms signed in.
 */
const CONSOLE_PAGES: [string, string][] = [
  ["GET", "/console/assets/console.js"],
  ["GET", "/console/assets/editor.js"],
  ["GET", "/console/assets/console.css"],
  ["GET", "/console/assets/insight.js"],
  ["GET", "/console/sign-in"],
  ["POST", "/console/sign-in"],
  ["GET", "/console/auth"],
  ["POST", "/console/auth"],
  ["POST", "/console/sign-out"],
  ["GET", "/console"],
  ["GET", "/console/"],
  ["POST", "/console/sites"],
  ["POST", "/console/sites/:site/:toggle"],
  ["GET", "/console/sites/:site/keys"],
  ["POST", "/console/sites/:site/keys"],
  ["GET", "/console/sites/:site/keys/:keyId/revoke"],
  ["POST", "/console/sites/:site/keys/:keyId/revoke"],
  ["GET", "/console/audit"],
  ["GET", "/console/sites/:site"],
  ["GET", "/console/sites/:site/documents"],
  ["POST", "/console/sites/:site/documents"],
  ["POST", "/console/sites/:site/documents/try"],
  ["POST", "/console/sites/:site/documents/:version/publish"],
  ["POST", "/console/sites/:site/preview-token"],
  ["POST", "/console/sites/:site/content-keys/:keyId/rotate"],
  ["GET", "/console/sites/:site/impact"],
  ["GET", "/console/sites/:site/insight"],
];
ROUTES.push(
  {
    method: "GET",
    path: "/admin/tenants/:tenant/console-users",
    credential: "operator",
    params: (w) => ({ tenant: w.admin.tenant }),
  },
  {
    method: "POST",
    path: "/admin/tenants/:tenant/console-users",
    credential: "operator",
    params: (w) => ({ tenant: w.admin.tenant }),
    body: () => ({ email: "fuzz-console@example.com", role: "viewer" }),
  },
  {
    method: "DELETE",
    path: "/admin/tenants/:tenant/console-users/:email",
    credential: "operator",
    params: (w) => ({ tenant: w.admin.tenant, email: "fuzz-console@example.com" }),
  },
);
const CONSOLE_STATUSES = [200, 303, 304, 400, 401, 403, 404, 405, 411, 413, 415, 422, 429];
ROUTES.push(
  ...CONSOLE_PAGES.map(([method, path]) => ({
    method,
    path,
    credential: "none" as const,
    params: (w: World) => ({ site: "news", toggle: "disable", keyId: w.admin.keyId, version: "1" }),
    nonJson: CONSOLE_STATUSES,
  })),
);

export const routeName = (r: { method: string; path: string }) => `${r.method} ${r.path}`;
