import { Elysia, t } from "elysia";
import type { GrantFacts } from "../core/types";
import type { Deps } from "../deps";
import { AppError } from "../http/errors";
import type { Mount } from "../http/mounts";
import { SITE_HEADER, selectedSite, tenantOf } from "../http/site";
import { type BrowserIdentity, browserIdentity } from "../identity/browser-credential";
import { PREVIEW_HEADER } from "../preview/tokens";
import type { SiteState } from "../sites/registry";
import { DecideBody } from "./model";
import { chooseDocument } from "./routes";
import { decideDepsOf, decideJson, evaluateRequest, takeRate } from "./service";

const ALLOWED_HEADERS = `content-type, ${SITE_HEADER}, ${PREVIEW_HEADER}`;

const userIdRefused = () =>
  new AppError(
    "forbidden",
    "userId is not accepted here: on browser routes identity comes only from the signed access cookie.",
  );

/** Who is calling, for per-client rate windows: the peer address. */
function clientOf(server: { requestIP(r: Request): { address: string } | null } | null, request: Request): string {
  return server?.requestIP(request)?.address ?? "unknown";
}

/** The access cookie's grants as `grants.*` facts; undefined when there is no cookie. */
function grantFacts(who: BrowserIdentity): GrantFacts | undefined {
  if (!who.claims) return undefined;
  const facts: Record<string, true> = {};
  for (const g of who.claims.grants) facts[g] = true;
  return Object.freeze(facts);
}

function checkOrigin(site: SiteState, origin: string | null): string {
  if (origin === null || !site.live!.allowedOrigins.has(origin)) {
    throw new AppError("forbidden", "This origin is not allowed for the site.");
  }
  return origin;
}

/** POST /svc/v1/decide: the browser decide mount (origin allowlist, access cookie, no key). */
export function browserDecideRoutes(deps: Deps) {
  const decideDeps = decideDepsOf(deps);
  return new Elysia({ prefix: "/svc/v1" })
    .options("/decide", ({ request }) => {
      // A preflight carries no site header: allow an origin some served site of the tenant allows;
      // the real request is then held to its own site's list.
      const origin = request.headers.get("origin");
      const tenantId = tenantOf(deps.registry, request);
      const allowed =
        origin !== null &&
        tenantId !== null &&
        deps.registry.sitesOf(tenantId).some((s) => !s.disabled && s.live?.allowedOrigins.has(origin));
      if (!allowed) throw new AppError("forbidden", "This origin is not allowed.");
      return new Response(null, {
        status: 204,
        headers: {
          "access-control-allow-origin": origin,
          "access-control-allow-credentials": "true",
          "access-control-allow-methods": "POST",
          "access-control-allow-headers": ALLOWED_HEADERS,
          "access-control-max-age": "600",
          vary: "Origin",
        },
      });
    })
    .post(
      "/decide",
      async ({ request, body, server, set }) => {
        const site = selectedSite(deps.registry, request);
        const origin = checkOrigin(site, request.headers.get("origin"));
        set.headers["access-control-allow-origin"] = origin;
        set.headers["access-control-allow-credentials"] = "true";
        set.headers.vary = "Origin";
        if (body.userId !== undefined) throw userIdRefused();
        const now = deps.now();
        takeRate(deps.browserDecideRate, `${site.tenantId}\u0001${site.id}\u0001${clientOf(server, request)}`, now);
        const who = await browserIdentity(deps.identityDeps.accessTokens, site.tenantId, request.headers, now);
        const { document, preview } = await chooseDocument(deps, site, request.headers.get(PREVIEW_HEADER), now);
        const answer = await decideJson(decideDeps, {
          site,
          document,
          preview,
          input: body,
          userId: who.claims?.userId ?? null,
          grants: grantFacts(who),
          accessMissing: who.accessMissing,
          now,
        });
        // The same writer as the keyed route; Elysia adds the CORS headers set above.
        set.headers["content-type"] = "application/json";
        return answer;
      },
      { body: DecideBody },
    );
}

const ForwardQuery = t.Object({
  feature: t.String({ minLength: 1, maxLength: 128 }),
  site: t.Optional(t.String({ minLength: 1, maxLength: 128 })),
  userId: t.Optional(t.String()),
  deviceId: t.Optional(t.String({ minLength: 1, maxLength: 128 })),
});

/**
 * GET /v1/decide/forward (both mounts): a top-level navigation to a journey feature's
 * destination. No key, no origin check; identity is the access cookie; no meter is charged.
 */
export function forwardRoutes(deps: Deps, prefix: Mount) {
  const decideDeps = decideDepsOf(deps);
  return new Elysia({ prefix }).get(
    "/decide/forward",
    async ({ request, query, server }) => {
      const site = selectedSite(deps.registry, request, query.site);
      if (query.userId !== undefined) throw userIdRefused();
      const now = deps.now();
      const { document, preview } = await chooseDocument(deps, site, request.headers.get(PREVIEW_HEADER), now);
      const feature = document.features.get(query.feature);
      if (feature?.purpose !== "journey" || !feature.answerable) {
        throw new AppError("not_found", "Unknown journey feature.");
      }
      takeRate(deps.forwardRate, `${site.tenantId}\u0001${site.id}\u0001${clientOf(server, request)}`, now);
      const who = await browserIdentity(deps.identityDeps.accessTokens, site.tenantId, request.headers, now);
      const context: Record<string, unknown> = {};
      for (const [k, v] of new URL(request.url).searchParams) if (!(k in query)) context[k] = v;
      // "A journey feature charges no meter" (the spec): evaluated without effects.
      const result = await evaluateRequest(
        decideDeps,
        {
          site,
          document,
          preview,
          input: { features: [query.feature], deviceId: query.deviceId, context },
          userId: who.claims?.userId ?? null,
          grants: grantFacts(who),
          now,
        },
        false,
      );
      const decision = result.decisions[query.feature];
      const location = decision?.url ?? decision?.fallbackUrl;
      if (!location) {
        throw new AppError("validation_failed", "The journey resolved no destination for this request.");
      }
      return new Response(null, { status: 302, headers: { location, "cache-control": "no-store" } });
    },
    { query: ForwardQuery },
  );
}
