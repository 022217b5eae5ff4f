import { randomBytes } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { AppError, type ErrorCode } from "../infra/errors";
import { hashSecret } from "../keys/key-value";
import type { Logger } from "../logger";
import type { Outbox } from "../mail/outbox";
import type { MailBudget } from "../mail-budget/mail-budget";
import type { SiteState } from "../sites/registry";
import type { UserRow, UserStore } from "../users/store";
import { ACCESS_TTL_SECONDS, type AccessTokens } from "./access-token";
import { ACCESS_COOKIE, EXCHANGE_PAUSE_COOKIE, readCookie, SESSION_COOKIE } from "./cookies";
import { signInSpend, tooManySignInMails } from "./mail-limits";
import type { IdentityStore, SessionRow } from "./store";
import { mergeTraits, validateTraits } from "./traits";
import type { IdentityProvider, UpstreamFailure, UpstreamVerifier } from "./upstream";

export const SESSION_TTL_MS = 30 * 86_400_000;
/** A session is renewed (sliding) once a day of use has passed since it was last extended. */
const RENEW_AFTER_MS = 86_400_000;
const MAGIC_LINK_TTL_MS = 15 * 60_000;

export interface IdentityDeps {
  readonly identity: IdentityStore;
  readonly users: UserStore;
  readonly accessTokens: AccessTokens;
  readonly upstream: UpstreamVerifier;
  readonly outbox: Outbox;
  readonly logger: Logger;
  readonly now: () => number;
  /** The tenant's identity provider, or null when none is connected. */
  readonly identityProvider: (tenantId: string) => IdentityProvider | null;
  /** The mail budgets sign-in links are taken from (src/mail-budget), with the link's write. */
  readonly mailBudget: MailBudget;
  /** The user's organization roles and the session's active organization, for the access cookie. */
  readonly organizationClaims?: (
    tenantId: string,
    userId: string,
    activeOrganizationId: string | null,
  ) => Promise<OrgClaims>;
  /**
   * A user's traits changed: every process drops its held facts of the user (the change feed's
   * `traits` topic), as a grant change does, so decide reads the new `user.*` at once.
   */
  readonly traitsChanged: (tenantId: string, userId: string) => Promise<void>;
}

/** What the access cookie carries about organizations (src/orgs fills it). */
export interface OrgClaims {
  readonly orgs: Readonly<Record<string, string>>;
  readonly activeOrg: { readonly id: string; readonly slug: string } | null;
}

const NO_ORGS: OrgClaims = Object.freeze({ orgs: Object.freeze({}), activeOrg: null });

export interface UserJson {
  id: string;
  email: string;
  emailVerified: boolean;
  name: string | null;
  firstName: string | null;
  lastName: string | null;
  image: string | null;
}

export interface SessionJson {
  id: string;
  kind: "svc";
  expiresAt: string;
}

/** A signed access token (the `svc.access` cookie's value) and how long it lives. */
export interface AccessGrant {
  readonly token: string;
  readonly maxAgeSeconds: number;
}

/**
 * What an identity operation hands the browser, as values; the route sets the cookies
 * (identity/routes.ts), in this order: the session, the access token, the expiries, the pause.
 */
export interface IdentityReply {
  body: unknown;
  /** A session token to (re)send as `svc.session_token`, with its remaining life; null: none. */
  session: { token: string; maxAgeSeconds: number } | null;
  /** A fresh access token for `svc.access`; null: none. */
  access: AccessGrant | null;
  /** Cookies the browser must drop (a dead session's, the upstream login's, a lifted pause). */
  expire: string[];
  /** A failed automatic exchange: pause that browser's exchanges for EXCHANGE_PAUSE_SECONDS. */
  pauseExchange: boolean;
  headers: Record<string, string>;
}

function userJson(user: UserRow): UserJson {
  return {
    id: user.id,
    email: user.email,
    emailVerified: user.emailVerified,
    name: user.name,
    firstName: user.firstName,
    lastName: user.lastName,
    image: user.image,
  };
}

const sessionJson = (s: SessionRow): SessionJson => ({ id: s.id, kind: "svc", expiresAt: s.expiresAt.toISOString() });

const notOnThisSite = () => new AppError("not_found", "Not available on this site.");
export const signInRequired = () => new AppError("unauthorized", "A signed-in session is required.");

function identitySettings(site: SiteState) {
  const live = site.live!;
  return { mode: live.identityMode, identity: live.document.identity, allowedOrigins: live.allowedOrigins };
}

/** The service's own sign-in: open in svc_only unless closed, closed in dual unless opened. */
function assertSignInOpen(site: SiteState): void {
  const { mode, identity } = identitySettings(site);
  const open = mode !== "external_only" && (identity.signInEnabled ?? mode === "svc_only");
  if (!open) throw notOnThisSite();
}

export function assertNotExternalOnly(site: SiteState): void {
  if (identitySettings(site).mode === "external_only") throw notOnThisSite();
}

const callbackRefused = () =>
  new AppError(
    "bad_request",
    "callbackURL must be a path on this site (one leading slash, no backslashes or control characters) " +
      "or an http(s) URL on one of the site's allowed origins.",
  );

/** Backslashes and control characters (C0, DEL, C1): browsers drop or rewrite them in URLs. */
function hasUnsafeUrlCharacter(value: string): boolean {
  for (let i = 0; i < value.length; i++) {
    const c = value.charCodeAt(i);
    if (c < 0x20 || (c >= 0x7f && c <= 0x9f) || c === 0x5c) return true;
  }
  return false;
}

/** Stands for the site's own origin when a path is resolved: a path must stay on it. */
const SAME_SITE = "https://same-site.invalid";

/**
 * A same-site path, or an absolute http(s) URL on one of the site's allowed origins; anything
 * else is 400. Both forms are parsed with `URL` and judged by the origin they resolve to, after
 * refusing what browsers read differently from parsers: backslashes (`/\evil.example` is
 * `//evil.example` to a browser), control characters (tab, CR and LF are dropped, so
 * `/\t/evil.example` becomes protocol-relative), protocol-relative `//host` and credentials.
 */
export function checkCallbackUrl(site: SiteState, callbackURL: string | undefined): void {
  if (callbackURL === undefined) return;
  if (hasUnsafeUrlCharacter(callbackURL)) throw callbackRefused();
  if (callbackURL.startsWith("/")) {
    if (callbackURL.startsWith("//")) throw callbackRefused();
    const resolved = URL.parse(callbackURL, SAME_SITE);
    if (resolved === null || resolved.origin !== SAME_SITE) throw callbackRefused();
    return;
  }
  const url = URL.parse(callbackURL);
  if (url === null || (url.protocol !== "https:" && url.protocol !== "http:")) throw callbackRefused();
  if (url.username !== "" || url.password !== "") throw callbackRefused();
  if (!identitySettings(site).allowedOrigins.has(url.origin)) throw callbackRefused();
}

const newToken = () => randomBytes(32).toString("base64url");

/** The session token to send (when there is one) with its remaining life. */
function sessionToken(deps: IdentityDeps, session: SessionRow, token: string | null): IdentityReply["session"] {
  if (token === null) return null;
  return { token, maxAgeSeconds: (session.expiresAt.getTime() - deps.now()) / 1000 };
}

/** A fresh access token for `svc.access`: user, session, held grants, organization roles. */
export async function accessGrant(deps: IdentityDeps, tenantId: string, session: SessionRow): Promise<AccessGrant> {
  const now = deps.now();
  const [held, org] = await Promise.all([
    deps.users.listGrants(tenantId, session.userId),
    deps.organizationClaims?.(tenantId, session.userId, session.activeOrganizationId) ?? NO_ORGS,
  ]);
  let notAfter = session.expiresAt.getTime();
  const grants: string[] = [];
  for (const g of held) {
    const expiry = g.expiresAt?.getTime() ?? null;
    if (expiry !== null && expiry <= now) continue;
    grants.push(g.grant);
    if (expiry !== null && expiry < notAfter) notAfter = expiry;
  }
  const { token, maxAgeSeconds } = await deps.accessTokens.mint(
    { userId: session.userId, sessionId: session.id, tenantId, grants, orgs: org.orgs, activeOrg: org.activeOrg },
    now,
    notAfter,
  );
  return { token, maxAgeSeconds: Math.min(maxAgeSeconds, ACCESS_TTL_SECONDS) };
}

/** Mints a session for a user: the sign-in reply (body, cookies, `set-auth-token`). */
async function startSession(
  deps: IdentityDeps,
  tenantId: string,
  user: UserRow,
  extra: Record<string, unknown> = {},
): Promise<IdentityReply> {
  const token = newToken();
  const session = await deps.identity.createSession(
    tenantId,
    user.id,
    hashSecret(token),
    new Date(deps.now() + SESSION_TTL_MS),
  );
  return {
    body: { user: userJson(user), session: sessionJson(session), ...extra },
    session: sessionToken(deps, session, token),
    access: await accessGrant(deps, tenantId, session),
    expire: [],
    pauseExchange: false,
    headers: { "set-auth-token": token },
  };
}

/**
 * The session token a request presents: the cookie, or a native client's bearer. An API key
 * on a session route is refused, never reinterpreted.
 */
function presentedSessionToken(headers: Headers): string | null {
  if (headers.get("x-api-key") !== null) throw keyOnSessionRoute();
  const auth = headers.get("authorization");
  if (auth !== null) {
    const bearer = auth.slice(0, 7).toLowerCase() === "bearer " ? auth.slice(7).trim() : "";
    if (bearer.startsWith("svc_")) throw keyOnSessionRoute();
    if (bearer) return bearer;
  }
  return readCookie(headers.get("cookie"), SESSION_COOKIE);
}

const keyOnSessionRoute = () =>
  new AppError("unauthorized", "API keys are not accepted on this route; it takes a user session.");

/** Whether a request presents an API key (`x-api-key`, or a bearer that is an `svc_` key). */
export function presentsApiKey(headers: Headers): boolean {
  if (headers.get("x-api-key") !== null) return true;
  const auth = headers.get("authorization");
  return auth !== null && auth.slice(0, 7).toLowerCase() === "bearer " && auth.slice(7).trim().startsWith("svc_");
}

/**
 * Browser routes (`/svc/v1/decide`, the forward route) take the signed access cookie; an API
 * key there is refused (401), never ignored, as on the session routes.
 */
export function refuseApiKeyOnBrowserRoute(headers: Headers): void {
  if (presentsApiKey(headers)) {
    throw new AppError(
      "unauthorized",
      "API keys are not accepted on this route; it takes the browser's signed access cookie.",
    );
  }
}

/** The live session a request carries, or null. */
export async function currentSession(deps: IdentityDeps, tenantId: string, headers: Headers) {
  return (await presentedSession(deps, tenantId, headers)).found;
}

/** What a request presents as a session: its token (null: none) and the live session it names. */
export interface PresentedSession {
  readonly token: string | null;
  readonly found: Awaited<ReturnType<IdentityStore["sessionByToken"]>>;
}

/** The token a request presents and the live session it names (null when none, unknown or overlong). */
export async function presentedSession(
  deps: IdentityDeps,
  tenantId: string,
  headers: Headers,
): Promise<PresentedSession> {
  const token = presentedSessionToken(headers);
  if (!token || token.length > 512) return { token, found: null };
  return { token, found: await deps.identity.sessionByToken(tenantId, hashSecret(token), new Date(deps.now())) };
}

/**
 * POST /v1/id/sign-in/magic-link. Refusals come before anything is spent or written: sign-in
 * closed (404), callbackURL (400), an untrusted link origin (400, from `linkBase`), then the
 * mail budgets (429 with Retry-After), taken in the transaction that writes the link and its mail. The answer is the same whether or not the address is a user.
 */
export async function signInWithMagicLink(
  deps: IdentityDeps,
  input: {
    site: SiteState;
    email: string;
    callbackURL?: string;
    /** The trusted origin plus the mount prefix; throws when the request's origin is not trusted. */
    linkBase: () => string;
    /** The caller's peer address, for the per-client budget. */
    client: string;
  },
): Promise<{ success: true; rateLimit: Record<string, string> }> {
  assertSignInOpen(input.site);
  checkCallbackUrl(input.site, input.callbackURL);
  deps.outbox.assertCanSend();
  const linkBase = input.linkBase();
  const email = input.email.trim().toLowerCase();
  const token = newToken();
  const query = new URLSearchParams({ token, site: input.site.id });
  if (input.callbackURL) query.set("callbackURL", input.callbackURL);
  const link = `${linkBase}/id/magic-link?${query}`;
  const tenantId = input.site.tenantId;
  // The budget, the link and its mail in one transaction: a refusal writes nothing.
  const spent = await deps.mailBudget.spend(
    "sign_in",
    tenantId,
    signInSpend({ address: email, client: input.client, site: input.site.id }),
    async (tx) => {
      await deps.identity.createMagicLink(
        {
          tenantId,
          siteId: input.site.id,
          email,
          tokenHash: hashSecret(token),
          expiresAt: new Date(deps.now() + MAGIC_LINK_TTL_MS),
        },
        tx,
      );
      await deps.outbox.enqueueIn(tx, {
        tenantId,
        to: email,
        subject: "Your sign-in link",
        text: `Open this link to sign in (it works once, for 15 minutes):\n\n${link}\n\nIf you did not ask for it, ignore this message.`,
      });
    },
  );
  if (!spent.ok) throw tooManySignInMails(spent.retryAfterSeconds, spent.rateLimit);
  // The caller's own budget in the draft's RateLimit fields (the route sends them).
  return { success: true, rateLimit: spent.rateLimit };
}

export async function consumeMagicLink(
  deps: IdentityDeps,
  input: { site: SiteState; token: string; callbackURL?: string },
): Promise<IdentityReply> {
  assertSignInOpen(input.site);
  checkCallbackUrl(input.site, input.callbackURL);
  const link = await deps.identity.consumeMagicLink(input.site.tenantId, hashSecret(input.token), new Date(deps.now()));
  if (!link || link.siteId !== input.site.id) {
    throw new AppError("forbidden", "That sign-in link is invalid, already used or expired.");
  }
  const user = await deps.identity.findOrCreateByEmail(input.site.tenantId, link.email, true);
  return startSession(deps, input.site.tenantId, user);
}

const signedOut = (expire: string[] = [], pauseExchange = false): IdentityReply => ({
  body: { user: null, session: null },
  session: null,
  access: null,
  expire,
  pauseExchange,
  headers: {},
});

/**
 * GET /v1/id/get-session: the current session with a fresh access cookie (sliding renewal);
 * in `dual` with no live session, the automatic exchange of the upstream cookie. A stale session
 * cookie (revoked, expired) does not stop the exchange: its cookies are expired in the same
 * answer, so a still-valid upstream login re-exchanges at once after `revoke-sessions`. Never an
 * error for a failed exchange: two nulls, and that browser pauses for 5 minutes.
 */
export async function getSession(
  deps: IdentityDeps,
  site: SiteState,
  headers: Headers,
  presented: PresentedSession,
): Promise<IdentityReply> {
  const tenantId = site.tenantId;
  const { token, found } = presented;
  if (token) {
    if (!found) return exchangeFromCookie(deps, site, headers, [SESSION_COOKIE, ACCESS_COOKIE]);
    let { session } = found;
    let renewedToken: string | null = null;
    if (session.expiresAt.getTime() - deps.now() < SESSION_TTL_MS - RENEW_AFTER_MS) {
      const expiresAt = new Date(deps.now() + SESSION_TTL_MS);
      await deps.identity.extendSession(session.id, expiresAt);
      session = { ...session, expiresAt };
      renewedToken = token;
    }
    return {
      body: { user: userJson(found.user), session: sessionJson(session) },
      session: sessionToken(deps, session, renewedToken),
      access: await accessGrant(deps, tenantId, session),
      expire: [],
      pauseExchange: false,
      headers: {},
    };
  }
  return exchangeFromCookie(deps, site, headers, []);
}

/**
 * The automatic exchange of get-session: in `dual`, the upstream login's cookie (unless that
 * browser is paused) for a new session. `stale` expires a dead session's cookies when no new
 * session replaces them.
 */
async function exchangeFromCookie(
  deps: IdentityDeps,
  site: SiteState,
  headers: Headers,
  /** Names of a dead session's cookies, expired unless a new session replaces them. */
  stale: string[],
): Promise<IdentityReply> {
  const { mode, identity } = identitySettings(site);
  const credentialCookie = identity.upstream?.cookieNames?.[0];
  if (mode !== "dual" || !credentialCookie) return signedOut(stale);
  const credential = readCookie(headers.get("cookie"), credentialCookie);
  if (!credential) return signedOut(stale);
  if (readCookie(headers.get("cookie"), EXCHANGE_PAUSE_COOKIE) !== null) return signedOut(stale);
  const exchanged = await exchangeCredential(deps, site, credential);
  if (!exchanged.ok) return signedOut(stale, true);
  // The new session's cookies replace the stale ones (same names), so those need no expiry.
  const reply = await startSession(deps, site.tenantId, exchanged.user, { exchanged: true });
  reply.expire.push(...(identity.upstream?.cookieNames ?? []), EXCHANGE_PAUSE_COOKIE);
  return reply;
}

export async function signOut(
  deps: IdentityDeps,
  site: SiteState,
  found: PresentedSession["found"],
): Promise<IdentityReply> {
  if (found) await deps.identity.deleteSession(found.session.id);
  return {
    body: { success: true, logoutUrl: identitySettings(site).identity.upstream?.signOutUrl ?? null },
    session: null,
    access: null,
    expire: [SESSION_COOKIE, ACCESS_COOKIE],
    pauseExchange: false,
    headers: {},
  };
}

/** PATCH /v1/id/user-details, for the signed-in user (the route's `session` credential). */
export async function updateUserDetails(
  deps: IdentityDeps,
  site: SiteState,
  signedIn: UserRow,
  patch: { name?: string; firstName?: string | null; lastName?: string | null; userTraits?: Record<string, unknown> },
) {
  const stored = (signedIn.traits ?? {}) as Record<string, unknown>;
  const merged = mergeTraits(stored, patch.userTraits ?? {});
  const checked = validateTraits(merged, site.live!.document.traits);
  if (!checked.ok) throw new AppError("validation_failed", "The request failed validation.", checked.issues);
  const user = await deps.identity.updateProfile(signedIn.id, {
    ...(patch.name !== undefined ? { name: patch.name } : {}),
    ...(patch.firstName !== undefined ? { firstName: patch.firstName } : {}),
    ...(patch.lastName !== undefined ? { lastName: patch.lastName } : {}),
    traits: checked.traits,
  });
  // Only a change of traits is news to decide (`user.*`); a retry or a new name is not.
  if (!isDeepStrictEqual(stored, checked.traits)) await deps.traitsChanged(user.tenantId, user.id);
  return { ...userJson(user), userTraits: checked.traits };
}

const credentialRefused = (code: ErrorCode) => new AppError(code, "That credential was not accepted.");
const idpUnreachable = (code: ErrorCode, retryAfter: number) =>
  new AppError(code, "The identity provider could not be reached.", undefined, {
    "retry-after": String(retryAfter),
  });

/** Maps a failed upstream verification to the spec's exchange error. */
export function exchangeError(reason: UpstreamFailure, retryAfterSeconds = 5): AppError {
  switch (reason) {
    case "missing":
      return credentialRefused("external_credential_missing");
    case "expired":
      return credentialRefused("external_credential_expired");
    case "invalid":
      return credentialRefused("external_credential_invalid");
    case "rate_limited":
      return idpUnreachable("identity_provider_rate_limited", retryAfterSeconds);
    case "unreachable":
      return idpUnreachable("identity_provider_unreachable", retryAfterSeconds);
  }
}

export type Exchanged =
  | { ok: true; user: UserRow }
  | { ok: false; reason: UpstreamFailure; retryAfterSeconds?: number };

/**
 * Verifies an upstream credential and finds the user it names: by its bound subject, else
 * by a verified email claim, else a new user bound to the subject.
 */
export async function exchangeCredential(deps: IdentityDeps, site: SiteState, credential: string): Promise<Exchanged> {
  const idp = deps.identityProvider(site.tenantId);
  if (!idp) return { ok: false, reason: "unreachable" };
  const verified = await deps.upstream.verify(idp, credential, identitySettings(site).identity.upstream?.audience);
  if (!verified.ok) return verified;
  const { claims } = verified;
  const tenantId = site.tenantId;
  const bound = await deps.identity.userBySubject(tenantId, claims.sub);
  if (bound) return { ok: true, user: bound };
  const email = typeof claims.email === "string" && claims.email.includes("@") ? claims.email : null;
  const emailVerified = claims.email_verified === true;
  let user: UserRow;
  if (email) {
    const existing = await deps.identity.userByEmail(tenantId, email);
    // Linking an existing account by address needs the provider to vouch for the address.
    if (existing && !emailVerified) return { ok: false, reason: "invalid" };
    user = existing ?? (await deps.identity.findOrCreateByEmail(tenantId, email, emailVerified));
  } else {
    user = await deps.identity.findOrCreateByEmail(
      tenantId,
      `${hashSecret(claims.sub).slice(0, 32)}@upstream.invalid`,
      false,
    );
  }
  await deps.identity.bindSubject(tenantId, claims.sub, user.id);
  return { ok: true, user };
}

/** POST /v1/id/session/exchange: dual only; the credential from the body or the upstream cookie. */
export async function exchangeSession(
  deps: IdentityDeps,
  site: SiteState,
  headers: Headers,
  body: { subject_token?: string } | null | undefined,
): Promise<IdentityReply> {
  const { mode, identity } = identitySettings(site);
  if (mode !== "dual") throw new AppError("not_found", "Session exchange is only available on sites in dual mode.");
  if (!deps.identityProvider(site.tenantId)) {
    throw new AppError("service_unavailable", "This tenant has no identity provider.");
  }
  const cookieName = identity.upstream?.cookieNames?.[0];
  const credential = body?.subject_token ?? (cookieName ? readCookie(headers.get("cookie"), cookieName) : null);
  const exchanged = await exchangeCredential(deps, site, credential ?? "");
  if (!exchanged.ok) throw exchangeError(exchanged.reason, exchanged.retryAfterSeconds);
  return startSession(deps, site.tenantId, exchanged.user);
}
