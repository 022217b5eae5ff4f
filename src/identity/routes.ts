import { Elysia } from "elysia";
import type { Config } from "../config";
import type { ClientAddresses } from "../http/client-address";
import { corsPolicy } from "../http/cors";
import { type JsonApiDeps, jsonApi } from "../http/error-plugins";
import type { Mount } from "../http/mounts";
import { AppError } from "../infra/errors";
import { selectedSite } from "../sites/selection";
import {
  ACCESS_COOKIE,
  type CookieJar,
  EXCHANGE_PAUSE_COOKIE,
  EXCHANGE_PAUSE_SECONDS,
  expireCookie,
  SESSION_COOKIE,
  setCookie,
} from "./cookies";
import { type CredentialDeps, credentials } from "./credentials";
import { magicLinkPage } from "./interstitial";
import { trustedLinkOrigin } from "./link-origin";
import { ConsumeBody, ExchangeBody, MagicLinkBody, MagicLinkPageQuery, UserDetailsBody } from "./model";
import {
  checkCallbackUrl,
  consumeMagicLink,
  exchangeSession,
  getSession,
  type IdentityReply,
  signInWithMagicLink,
  signOut,
  updateUserDetails,
} from "./service";

/**
 * Sends an identity reply: its cookies through Elysia's jar (session, access token, expiries,
 * pause: one Set-Cookie each), its headers, and its body as JSON.
 */
function send(
  { cookie, set }: { cookie: CookieJar; set: { headers: Record<string, unknown> } },
  r: IdentityReply,
): unknown {
  if (r.session) setCookie(cookie, SESSION_COOKIE, r.session.token, r.session.maxAgeSeconds);
  if (r.access) setCookie(cookie, ACCESS_COOKIE, r.access.token, r.access.maxAgeSeconds);
  for (const name of r.expire) expireCookie(cookie, name);
  if (r.pauseExchange) setCookie(cookie, EXCHANGE_PAUSE_COOKIE, "1", EXCHANGE_PAUSE_SECONDS);
  Object.assign(set.headers, r.headers);
  // As these routes always answered (Elysia's own default adds `;charset=utf-8`).
  set.headers["content-type"] = "application/json";
  return r.body;
}

/** The identity routes' deps: the credentials', the service-wide origin for links, and who a request came from. */
export interface IdentityRouteDeps extends CredentialDeps {
  readonly config: Pick<Config, "publicUrl">;
  readonly clients: ClientAddresses;
}

/** The identity routes of one mount (`/v1` or `/svc/v1`): sessions, magic links, profile, exchange. */
export function identityRoutes(deps: IdentityRouteDeps & JsonApiDeps, prefix: Mount) {
  const id = deps.identityDeps;
  const site = (request: Request, fallback?: string | null) => selectedSite(deps.registry, request, fallback);
  return new Elysia({ prefix })
    .use(jsonApi(deps))
    .use(corsPolicy)
    .use(credentials(deps))
    .post(
      "/id/sign-in/magic-link",
      async ({ request, body, server, set }) => {
        const selected = site(request);
        const { rateLimit, ...answer } = await signInWithMagicLink(id, {
          site: selected,
          email: body.email,
          callbackURL: body.callbackURL,
          // The link keeps the mount the request used; its origin is one the tenant trusts.
          linkBase: () =>
            trustedLinkOrigin(
              deps.registry,
              deps.config.publicUrl,
              selected.tenantId,
              deps.clients.urlOf(server, request),
            ) + prefix,
          client: deps.clients.addressOf(server, request),
        });
        Object.assign(set.headers, rateLimit);
        return answer;
      },
      { body: MagicLinkBody },
    )
    .get(
      "/id/magic-link",
      ({ request, query }) => {
        // A navigation from an email: the site comes from the link (no header possible).
        checkCallbackUrl(site(request, query.site), query.callbackURL);
        return new Response(
          magicLinkPage({ prefix, site: query.site, token: query.token, callbackURL: query.callbackURL }),
          {
            headers: {
              "content-type": "text/html; charset=utf-8",
              "cache-control": "no-store",
              "referrer-policy": "no-referrer",
              "x-frame-options": "DENY",
            },
          },
        );
      },
      { query: MagicLinkPageQuery },
    )
    .post(
      "/id/magic-link/consume",
      async ({ request, body, cookie, set }) =>
        send(
          { cookie, set },
          await consumeMagicLink(id, { site: site(request), token: body.token, callbackURL: body.callbackURL }),
        ),
      { body: ConsumeBody },
    )
    .get(
      "/id/get-session",
      async (ctx) => send(ctx, await getSession(id, ctx.site, ctx.request.headers, ctx.presented)),
      { optionalSession: true },
    )
    .post("/id/sign-out", async (ctx) => send(ctx, await signOut(id, ctx.site, ctx.presented.found)), {
      optionalSession: true,
    })
    .patch("/id/user-details", (ctx) => updateUserDetails(id, ctx.site, ctx.user, ctx.body), {
      body: UserDetailsBody,
      session: "identity",
    })
    .get("/id/traits", ({ request }) => ({ traits: site(request).live?.document.traits ?? {} }), { cors: "public" })
    .post(
      "/id/session/exchange",
      async ({ request, body, cookie, set }) => {
        // The body is optional, but when sent it is an object (Elysia skips the check of an
        // optional body that is not a non-empty object).
        if (body !== undefined && (typeof body !== "object" || body === null || Array.isArray(body))) {
          throw new AppError("validation_failed", "The request failed validation.", [
            { path: "/", message: "Expected object" },
          ]);
        }
        return send({ cookie, set }, await exchangeSession(id, site(request), request.headers, body));
      },
      { body: ExchangeBody },
    );
}
