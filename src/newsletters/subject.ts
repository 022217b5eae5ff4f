import { readCookie, SESSION_COOKIE } from "../identity/cookies";
import {
  exchangeCredential,
  exchangeError,
  type IdentityDeps,
  presentsApiKey,
  signInRequired,
} from "../identity/service";
import { AppError } from "../infra/errors";
import { authenticateKeyed, type KeyGuardDeps } from "../keys/guard";
import { hashSecret } from "../keys/key-value";
import type { SiteState } from "../sites/registry";
import { selectedSite } from "../sites/selection";
import type { UserRow, UserStore } from "../users/store";

/**
 * Who a newsletter request is about, from its one credential:
 * - `session`: a service session (cookie, or a native client's bearer);
 * - `upstream`: a verified upstream credential (`dual`/`external_only`: the upstream login's
 *   cookie or a bearer JWT), verified with the tenant's identity provider as the exchange does;
 * - `key`: a site-pinned API key, naming the user with `userId` (null when it names nobody);
 * - `anonymous`: no credential (GET answers `unknown` throughout; PUT needs `email`).
 */
export type NewsletterSubject =
  | { readonly kind: "session" | "upstream"; readonly site: SiteState; readonly user: UserRow }
  | { readonly kind: "key"; readonly site: SiteState; readonly user: UserRow | null }
  | { readonly kind: "anonymous"; readonly site: SiteState; readonly user: null };

/** What resolving the subject reads: the key guard's deps, users (for a key's `userId`), identity's sessions and exchange. */
export interface NewsletterSubjectDeps extends KeyGuardDeps {
  readonly users: UserStore;
  readonly identityDeps: IdentityDeps;
}

const userIdRefused = () => new AppError("bad_request", "userId is allowed only with an API key.");
const mixedCredentials = () =>
  new AppError("unauthorized", "Send one credential: an API key, or a session, or an upstream login, not several.");
const unknownUser = () => new AppError("not_found", "Unknown user.");

/** A compact JWS: three base64url parts (an upstream credential, never a session token). */
const JWT = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

function bearerOf(headers: Headers): string | null {
  const auth = headers.get("authorization");
  if (auth === null || auth.slice(0, 7).toLowerCase() !== "bearer ") return null;
  const value = auth.slice(7).trim();
  return value === "" ? null : value;
}

/**
 * Resolves the subject of a newsletter request. `userId` is the query's (GET) or the body's
 * (PUT): allowed only with an API key (400 otherwise, never ignored). A credential that is
 * presented and does not hold is 401 (an IdP that cannot be reached 503), never read as no
 * credential. In `dual`, a live service session wins over the upstream login; a dead one gives
 * way to a valid upstream login (as get-session's exchange does).
 */
export async function newsletterSubject(
  deps: NewsletterSubjectDeps,
  request: Request,
  userId: string | undefined,
): Promise<NewsletterSubject> {
  const headers = request.headers;
  if (presentsApiKey(headers)) {
    if (headers.get("cookie") !== null && readCookie(headers.get("cookie"), SESSION_COOKIE) !== null) {
      throw mixedCredentials();
    }
    const keyed = await authenticateKeyed(deps, request);
    if (userId === undefined) return { kind: "key", site: keyed.site, user: null };
    const user = await deps.users.userById(keyed.site.tenantId, userId);
    if (!user || user.erasedAt !== null) throw unknownUser();
    return { kind: "key", site: keyed.site, user };
  }
  const site = selectedSite(deps.registry, request);
  if (userId !== undefined) throw userIdRefused();
  const live = site.live!;
  const mode = live.identityMode;
  const cookies = headers.get("cookie");
  const bearer = bearerOf(headers);
  const upstreamCookie = live.document.identity.upstream?.cookieNames?.[0];
  // At an svc_only site a bearer is a session token; at an external_only site, an upstream
  // credential; in dual, a JWT is the upstream login's and anything else a session token.
  const upstream =
    mode === "svc_only"
      ? null
      : bearer !== null && (mode === "external_only" || JWT.test(bearer))
        ? bearer
        : upstreamCookie
          ? readCookie(cookies, upstreamCookie)
          : null;
  const sessionToken =
    mode === "external_only"
      ? null
      : bearer !== null && (mode === "svc_only" || !JWT.test(bearer))
        ? bearer
        : readCookie(cookies, SESSION_COOKIE);
  if (sessionToken) {
    const found =
      sessionToken.length > 512
        ? null
        : await deps.identityDeps.identity.sessionByToken(
            site.tenantId,
            hashSecret(sessionToken),
            new Date(deps.now()),
          );
    if (found) return { kind: "session", site, user: found.user };
    if (!upstream) throw signInRequired();
  }
  if (upstream) {
    const exchanged = await exchangeCredential(deps.identityDeps, site, upstream);
    if (!exchanged.ok) throw exchangeError(exchanged.reason, exchanged.retryAfterSeconds);
    return { kind: "upstream", site, user: exchanged.user };
  }
  return { kind: "anonymous", site, user: null };
}
