import { randomUUID } from "node:crypto";
import { Elysia } from "elysia";
import { authenticateKeyed, type KeyedRequest, type KeyGuardDeps, type KeyGuardOptions } from "../keys/guard";
import type { SiteState } from "../sites/registry";
import { selectedSite } from "../sites/selection";
import type { UserRow } from "../users/store";
import { type BrowserIdentity, browserIdentity } from "./browser-credential";
import {
  assertNotExternalOnly,
  currentSession,
  type IdentityDeps,
  type PresentedSession,
  presentedSession,
  refuseApiKeyOnBrowserRoute,
  signInRequired,
} from "./service";
import type { SessionRow } from "./store";

/** What the credentials read: the key guard's (keys, registry, clock) and identity's sessions and access tokens. */
/** What the credential plugin reads. */
export interface CredentialSource extends KeyGuardDeps {
  readonly identityDeps: IdentityDeps;
}

/** What a route group that takes credentials needs: the one plugin its deps were built with. */
export interface CredentialDeps extends CredentialSource {
  readonly credentials: CredentialsPlugin;
}

export type CredentialsPlugin = ReturnType<typeof credentialsPlugin>;

/**
 * Which sites a session route answers at: `identity` refuses an `external_only` site (404, the
 * service has no sign-in there) before looking at the session; `any-mode` does not (grants exist
 * in every mode; at an `external_only` site no caller has a session, so it is 401).
 */
export type SessionScope = "identity" | "any-mode";

/** What a `session` route's handler receives. */
export type SessionCredential = {
  readonly site: SiteState;
  readonly session: SessionRow;
  readonly user: UserRow;
};

/**
 * The credentials a route group declares, once: `session`, `apiKey`, `browser`.
 * Handlers receive what the credential resolved and never check it again.
 *
 * - `session: "identity" | "any-mode"`: the selected site (400/404), then the mode (404 at
 *   `external_only`, `identity` only), then the session cookie or a native client's bearer
 *   (an API key 401, no live session 401). Resolved after the body or query is validated, as the
 *   session routes always answered; the handler receives `site`, `session`, `user`.
 * - `optionalSession: true`: the selected site, then the session the request presents, if any
 *   (an API key 401; a missing, unknown or overlong token is no session): for the routes that
 *   answer signed-out callers too (get-session, sign-out). The handler receives `site` and
 *   `presented` (the token and the live session it names, or null).
 * - `apiKey: KeyGuardOptions`: the key-only guard of http/key-guard.ts, in its order (site
 *   header 400, key 401, pin 403, site 404, permission 403). It runs at `transform`, before the
 *   body is validated, so an unauthenticated caller learns nothing about the body schema; the
 *   handler receives `apiKey` and `site`.
 * - `browser: true`: the browser's signed access cookie. An API key is refused (401) at
 *   `transform`, before the body is checked; the handler receives `browserIdentityOf(tenantId,
 *   now)`, which reads the cookie (no database read) when the route has come to need it, so the
 *   route keeps its own order of site, origin, input and rate checks before it.
 *
 * One instance per deps (built by `createDeps` with `credentialsPlugin`), named and seeded, so
 * using it in several route groups adds its macros once and two apps in one process never share
 * one.
 */
export function credentials(deps: CredentialDeps): CredentialsPlugin {
  return deps.credentials;
}

/** The plugin, for `createDeps` to build once per deps (its seed tells two apps' plugins apart). */
export function credentialsPlugin(deps: CredentialSource) {
  const keyed = new WeakMap<Request, KeyedRequest>();
  return new Elysia({ name: "credentials", seed: randomUUID() })
    .macro("session", (scope: SessionScope) => ({
      async resolve({ request }) {
        const site = selectedSite(deps.registry, request);
        if (scope === "identity") assertNotExternalOnly(site);
        const found = await currentSession(deps.identityDeps, site.tenantId, request.headers);
        if (!found) throw signInRequired();
        const credential: SessionCredential = { site, session: found.session, user: found.user };
        return credential;
      },
    }))
    .macro("optionalSession", {
      async resolve({ request }) {
        const site = selectedSite(deps.registry, request);
        const presented: PresentedSession = await presentedSession(deps.identityDeps, site.tenantId, request.headers);
        return { site, presented };
      },
    })
    .macro("apiKey", (options: KeyGuardOptions) => ({
      async transform({ request }) {
        keyed.set(request, await authenticateKeyed(deps, request, options));
      },
      resolve({ request }) {
        const credential: KeyedRequest = keyed.get(request)!;
        return credential;
      },
    }))
    .macro("browser", {
      transform({ request }) {
        refuseApiKeyOnBrowserRoute(request.headers);
      },
      resolve({ request }) {
        const browserIdentityOf = (tenantId: string, now: number): Promise<BrowserIdentity> =>
          browserIdentity(deps.identityDeps.accessTokens, tenantId, request.headers, now);
        return { browserIdentityOf };
      },
    });
}
