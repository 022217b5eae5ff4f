import { randomBytes } from "node:crypto";
import { AppError } from "../http/errors";
import { hashSecret } from "../keys/key-value";
import type { Logger } from "../logger";
import type { Outbox } from "../mail/outbox";
import type { SiteState } from "../sites/registry";
import type { UserRow, UserStore } from "../users/store";
import { ACCESS_TTL_SECONDS, type AccessTokens } from "./access-token";
import {
  ACCESS_COOKIE,
  EXCHANGE_PAUSE_COOKIE,
  EXCHANGE_PAUSE_SECONDS,
  expireCookie,
  readCookie,
  SESSION_COOKIE,
  serializeCookie,
} from "./cookies";
import type { IdentityStore, SessionRow } from "./store";
import { mergeTraits, validateTraits } from "./traits";
import type { IdentityProvider, UpstreamFailure, UpstreamVerifier } from "./upstream";

export const SESSION_TTL_MS = 30 * 86_400_000;
/** A session is renewed (sliding) once a day of use has passed since it was last extended. */
const RENEW_AFTER_MS = 86_400_000;
export const MAGIC_LINK_TTL_MS = 15 * 60_000;

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
}

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

/** What a route sends: a body plus the cookies and headers it sets. */
export interface IdentityReply {
  body: unknown;
  cookies: string[];
  headers: Record<string, string>;
}

export function userJson(user: UserRow): UserJson {
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
export function assertSignInOpen(site: SiteState): void {
  const { mode, identity } = identitySettings(site);
  const open = mode !== "external_only" && (identity.signInEnabled ?? mode === "svc_only");
  if (!open) throw notOnThisSite();
}

export function assertNotExternalOnly(site: SiteState): void {
  if (identitySettings(site).mode === "external_only") throw notOnThisSite();
}

/** A relative path, or an absolute URL on one of the site's allowed origins. */
export function checkCallbackUrl(site: SiteState, callbackURL: string | undefined): void {
  if (callbackURL === undefined) return;
  if (callbackURL.startsWith("/") && !callbackURL.startsWith("//")) return;
  let origin: string;
  try {
    origin = new URL(callbackURL).origin;
  } catch {
    throw new AppError("bad_request", "callbackURL must be a path or a URL on one of the site's allowed origins.");
  }
  if (!identitySettings(site).allowedOrigins.has(origin)) {
    throw new AppError("bad_request", "callbackURL must be a path or a URL on one of the site's allowed origins.");
  }
}

const newToken = () => randomBytes(32).toString("base64url");

/** Cookies for a session and its access token. */
async function sessionCookies(
  deps: IdentityDeps,
  tenantId: string,
  session: SessionRow,
  token: string | null,
): Promise<string[]> {
  const cookies: string[] = [];
  if (token !== null) {
    cookies.push(
      serializeCookie(SESSION_COOKIE, token, { maxAgeSeconds: (session.expiresAt.getTime() - deps.now()) / 1000 }),
    );
  }
  cookies.push(await accessCookie(deps, tenantId, session));
  return cookies;
}

/** A fresh `svc.access` cookie: user, session, held grants, organization roles. */
async function accessCookie(deps: IdentityDeps, tenantId: string, session: SessionRow): Promise<string> {
  const now = deps.now();
  const held = await deps.users.listGrants(tenantId, session.userId);
  let notAfter = session.expiresAt.getTime();
  const grants: string[] = [];
  for (const g of held) {
    const expiry = g.expiresAt?.getTime() ?? null;
    if (expiry !== null && expiry <= now) continue;
    grants.push(g.grant);
    if (expiry !== null && expiry < notAfter) notAfter = expiry;
  }
  const { token, maxAgeSeconds } = await deps.accessTokens.mint(
    { userId: session.userId, sessionId: session.id, tenantId, grants, orgs: {} },
    now,
    notAfter,
  );
  return serializeCookie(ACCESS_COOKIE, token, { maxAgeSeconds: Math.min(maxAgeSeconds, ACCESS_TTL_SECONDS) });
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
    cookies: await sessionCookies(deps, tenantId, session, token),
    headers: { "set-auth-token": token },
  };
}

/**
 * The session token a request presents: the cookie, or a native client's bearer. An API key
 * on a session route is refused, never reinterpreted.
 */
export function presentedSessionToken(headers: Headers): string | null {
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

/** The live session a request carries, or null. */
export async function currentSession(deps: IdentityDeps, tenantId: string, headers: Headers) {
  const token = presentedSessionToken(headers);
  if (!token || token.length > 512) return null;
  return deps.identity.sessionByToken(tenantId, hashSecret(token), new Date(deps.now()));
}

export async function signInWithMagicLink(
  deps: IdentityDeps,
  input: { site: SiteState; email: string; callbackURL?: string; linkBase: string },
): Promise<{ success: true }> {
  assertSignInOpen(input.site);
  checkCallbackUrl(input.site, input.callbackURL);
  const token = newToken();
  const email = input.email.trim().toLowerCase();
  await deps.identity.createMagicLink({
    tenantId: input.site.tenantId,
    siteId: input.site.id,
    email,
    tokenHash: hashSecret(token),
    expiresAt: new Date(deps.now() + MAGIC_LINK_TTL_MS),
  });
  const query = new URLSearchParams({ token, site: input.site.id });
  if (input.callbackURL) query.set("callbackURL", input.callbackURL);
  const link = `${input.linkBase}/id/magic-link?${query}`;
  await deps.outbox.enqueue({
    tenantId: input.site.tenantId,
    to: email,
    subject: "Your sign-in link",
    text: `Open this link to sign in (it works once, for 15 minutes):\n\n${link}\n\nIf you did not ask for it, ignore this message.`,
  });
  return { success: true };
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

const signedOut = (cookies: string[] = []): IdentityReply => ({
  body: { user: null, session: null },
  cookies,
  headers: {},
});

/**
 * GET /v1/id/get-session: the current session with a fresh access cookie (sliding renewal);
 * in `dual` with no session, the automatic exchange of the upstream cookie. Never an error
 * for a failed exchange: two nulls, and that browser pauses for 5 minutes.
 */
export async function getSession(deps: IdentityDeps, site: SiteState, headers: Headers): Promise<IdentityReply> {
  const tenantId = site.tenantId;
  const token = presentedSessionToken(headers);
  if (token) {
    const found =
      token.length <= 512
        ? await deps.identity.sessionByToken(tenantId, hashSecret(token), new Date(deps.now()))
        : null;
    if (!found) return signedOut([expireCookie(SESSION_COOKIE), expireCookie(ACCESS_COOKIE)]);
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
      cookies: await sessionCookies(deps, tenantId, session, renewedToken),
      headers: {},
    };
  }
  const { mode, identity } = identitySettings(site);
  const credentialCookie = identity.upstream?.cookieNames?.[0];
  if (mode !== "dual" || !credentialCookie) return signedOut();
  const credential = readCookie(headers.get("cookie"), credentialCookie);
  if (!credential) return signedOut();
  if (readCookie(headers.get("cookie"), EXCHANGE_PAUSE_COOKIE) !== null) return signedOut();
  const exchanged = await exchangeCredential(deps, site, credential);
  if (!exchanged.ok) {
    return signedOut([serializeCookie(EXCHANGE_PAUSE_COOKIE, "1", { maxAgeSeconds: EXCHANGE_PAUSE_SECONDS })]);
  }
  const reply = await startSession(deps, tenantId, exchanged.user, { exchanged: true });
  for (const name of identity.upstream?.cookieNames ?? []) reply.cookies.push(expireCookie(name));
  reply.cookies.push(expireCookie(EXCHANGE_PAUSE_COOKIE));
  return reply;
}

export async function signOut(deps: IdentityDeps, site: SiteState, headers: Headers): Promise<IdentityReply> {
  const found = await currentSession(deps, site.tenantId, headers);
  if (found) await deps.identity.deleteSession(found.session.id);
  return {
    body: { success: true, logoutUrl: identitySettings(site).identity.upstream?.signOutUrl ?? null },
    cookies: [expireCookie(SESSION_COOKIE), expireCookie(ACCESS_COOKIE)],
    headers: {},
  };
}

export async function updateUserDetails(
  deps: IdentityDeps,
  site: SiteState,
  headers: Headers,
  patch: { name?: string; firstName?: string | null; lastName?: string | null; userTraits?: Record<string, unknown> },
) {
  assertNotExternalOnly(site);
  const found = await currentSession(deps, site.tenantId, headers);
  if (!found) throw signInRequired();
  const stored = (found.user.traits ?? {}) as Record<string, unknown>;
  const merged = mergeTraits(stored, patch.userTraits ?? {});
  const checked = validateTraits(merged, site.live!.document.traits);
  if (!checked.ok) throw new AppError("validation_failed", "The request failed validation.", checked.issues);
  const user = await deps.identity.updateProfile(found.user.id, {
    ...(patch.name !== undefined ? { name: patch.name } : {}),
    ...(patch.firstName !== undefined ? { firstName: patch.firstName } : {}),
    ...(patch.lastName !== undefined ? { lastName: patch.lastName } : {}),
    traits: checked.traits,
  });
  return { user: { ...userJson(user), userTraits: checked.traits } };
}

const credentialRefused = (code: string) => new AppError(code, "That credential was not accepted.", undefined, 401);
const idpUnreachable = (code: string, retryAfter: number) =>
  new AppError(code, "The identity provider could not be reached.", undefined, 503, {
    "retry-after": String(retryAfter),
  });

/** Maps a failed upstream verification to the spec's exchange error. */
function exchangeError(reason: UpstreamFailure, retryAfterSeconds = 5): AppError {
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

type Exchanged = { ok: true; user: UserRow } | { ok: false; reason: UpstreamFailure; retryAfterSeconds?: number };

/**
 * Verifies an upstream credential and finds the user it names: by its bound subject, else
 * by a verified email claim, else a new user bound to the subject.
 */
async function exchangeCredential(deps: IdentityDeps, site: SiteState, credential: string): Promise<Exchanged> {
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
