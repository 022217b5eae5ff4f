import { Elysia } from "elysia";
import type { Deps } from "../deps";
import type { Mount } from "../http/mounts";
import { SITE_HEADER, selectedSite } from "../http/site";
import { jsonWithCookies } from "./cookies";
import { magicLinkPage } from "./interstitial";
import { ConsumeBody, ExchangeBody, MagicLinkBody, MagicLinkPageQuery, UserDetailsBody } from "./model";
import {
  consumeMagicLink,
  exchangeSession,
  getSession,
  type IdentityReply,
  signInWithMagicLink,
  signOut,
  updateUserDetails,
} from "./service";

const reply = (r: IdentityReply) => jsonWithCookies(r.body, r.cookies, r.headers);

/** The identity routes of one mount (`/v1` or `/svc/v1`): sessions, magic links, profile, exchange. */
export function identityRoutes(deps: Deps, prefix: Mount) {
  const id = deps.identityDeps;
  const site = (request: Request, fallback?: string | null) => selectedSite(deps.registry, request, fallback);
  return new Elysia({ prefix })
    .post(
      "/id/sign-in/magic-link",
      async ({ request, body }) => {
        const origin = deps.config.publicUrl ?? new URL(request.url).origin;
        return signInWithMagicLink(id, {
          site: site(request),
          email: body.email,
          callbackURL: body.callbackURL,
          linkBase: origin + prefix,
        });
      },
      { body: MagicLinkBody },
    )
    .get(
      "/id/magic-link",
      ({ request, query }) => {
        // A navigation from an email: the site comes from the link (no header possible).
        site(request, query.site);
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
      async ({ request, body }) =>
        reply(await consumeMagicLink(id, { site: site(request), token: body.token, callbackURL: body.callbackURL })),
      { body: ConsumeBody },
    )
    .get("/id/get-session", async ({ request }) => reply(await getSession(id, site(request), request.headers)))
    .post("/id/sign-out", async ({ request }) => reply(await signOut(id, site(request), request.headers)))
    .patch("/id/user-details", ({ request, body }) => updateUserDetails(id, site(request), request.headers, body), {
      body: UserDetailsBody,
    })
    .get("/id/traits", ({ request, set }) => {
      set.headers["access-control-allow-origin"] = "*";
      set.headers.vary = SITE_HEADER;
      return { traits: site(request).live?.document.traits ?? {} };
    })
    .post(
      "/id/session/exchange",
      async ({ request, body }) => reply(await exchangeSession(id, site(request), request.headers, body)),
      { body: ExchangeBody },
    );
}
