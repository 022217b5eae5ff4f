import { Elysia } from "elysia";
import { RateWindows } from "../counters/rate-windows";
import { takeRates } from "../counters/take-rate";
import type { ClientAddresses } from "../http/client-address";
import { browserCors } from "../http/cors";
import { type JsonApiDeps, jsonApi } from "../http/error-plugins";
import { credentials } from "../identity/credentials";
import { AppError } from "../infra/errors";
import type { SiteRegistry, SiteState } from "../sites/registry";
import { selectedSite } from "../sites/selection";
import type { AnswerCache } from "./cache";
import { RecommendationsQuery, RecommendationsReply } from "./model";
import { type RecommendationDeps, recommend } from "./service";

/** What the credential plugin needs (identity/credentials.ts declares it). */
type CredentialDeps = Parameters<typeof credentials>[0];

/** What the keyed mount needs: the credential plugin's deps, the engine's deps and the answer cache. */
export type KeyedRecommendationDeps = CredentialDeps & {
  readonly recommendations: {
    readonly deps: RecommendationDeps;
    /** The keyed mount's answers as JSON text. */
    readonly cache: AnswerCache<string>;
  };
};

/** Browser calls one client may make per minute at one site (a reader's pages show a few lists each). */
export const RECOMMENDATIONS_CLIENT_PER_MINUTE = 60;
const MINUTE = 60_000;

/**
 * The browser mount's windows, per process: each client's at a site, inside the site's own
 * (`SVC_RECOMMENDATIONS_SITE_PER_MINUTE`). Each engine call spends the tenant's paid quota, which
 * stays the outer limit; no key stands behind these calls, so the windows hold an anonymous
 * caller to a reader's pace.
 */
export interface BrowserRecommendationRate {
  readonly client: RateWindows;
  readonly site: RateWindows;
}

export function browserRecommendationRate(sitePerMinute: number): BrowserRecommendationRate {
  return {
    client: new RateWindows(RECOMMENDATIONS_CLIENT_PER_MINUTE, MINUTE),
    site: new RateWindows(sitePerMinute, MINUTE),
  };
}

/** What the browser mount needs: the credential plugin's deps, the sites, the clock, the engine's deps and its windows. */
export type BrowserRecommendationDeps = CredentialDeps & {
  readonly now: () => number;
  readonly registry: SiteRegistry;
  readonly clients: ClientAddresses;
  readonly recommendations: { readonly deps: RecommendationDeps; readonly browserRate: BrowserRecommendationRate };
};

const userIdRefused = () =>
  new AppError(
    "bad_request",
    "userId is not accepted here: the browser mount reads the signed-in user from its session.",
  );

function checkOrigin(site: SiteState, origin: string | null): void {
  if (origin === null || !site.live!.allowedOrigins.has(origin)) {
    throw new AppError("forbidden", "This origin is not allowed for the site.");
  }
}

/**
 * A cached answer as sent: kept as its JSON text, so a hit serialises nothing and allocates only
 * the Response (the reply was built by `recommend`, whose type is the documented schema).
 */
const jsonResponse = (json: string) => new Response(json, { headers: { "content-type": "application/json" } });

/** The path and query as the caller sent them: one edition's renders share one cached answer. */
function fullUrl(request: Request): string {
  const url = request.url;
  const start = url.indexOf("/", url.indexOf("://") + 3);
  return start === -1 ? "/" : url.slice(start);
}

/**
 * GET /v1/recommendations (API key; the site is the key's pin). The subject is `userId`, else
 * `domainUserId`. Answers are cached 15 minutes per key, site and full URL, single-flight.
 */
export function keyedRecommendationRoutes(deps: KeyedRecommendationDeps & JsonApiDeps) {
  const r = deps.recommendations;
  return new Elysia({ prefix: "/v1" })
    .use(jsonApi(deps))
    .use(credentials(deps))
    .guard({ apiKey: { siteFromKey: true } })
    .get(
      "/recommendations",
      ({ request, query, site, apiKey }): Response | Promise<Response> => {
        const json = r.cache.get(`${apiKey.id}\u0001${site.tenantId}\u0001${site.id}\u0001${fullUrl(request)}`, () =>
          recommend(r.deps, site, query.userId ?? query.domainUserId ?? null, query).then(JSON.stringify),
        );
        return typeof json === "string" ? jsonResponse(json) : json.then(jsonResponse);
      },
      { query: RecommendationsQuery, response: { 200: RecommendationsReply } },
    );
}

/**
 * GET /svc/v1/recommendations (browser: site header, origin allowlist, CORS; no key). The
 * subject is the access cookie's user, except at an `external_only` site (the service holds no
 * session there), else `domainUserId`. Never cached. Rate windows per client and per site (429
 * with Retry-After, RateLimit fields on every answer past the origin check).
 */
export function browserRecommendationRoutes(deps: BrowserRecommendationDeps & JsonApiDeps) {
  const r = deps.recommendations;
  const routes = new Elysia({ prefix: "/svc/v1" })
    .use(jsonApi(deps))
    .use(credentials(deps))
    .guard({ browser: true })
    .get(
      "/recommendations",
      async ({ request, query, server, set, browserIdentityOf }) => {
        const site = selectedSite(deps.registry, request);
        checkOrigin(site, request.headers.get("origin"));
        if (query.userId !== undefined) throw userIdRefused();
        const now = deps.now();
        const siteKey = `${site.tenantId}\u0001${site.id}`;
        Object.assign(
          set.headers,
          takeRates(
            [
              {
                windows: r.browserRate.client,
                name: "recommendations-client",
                key: `${siteKey}\u0001${deps.clients.addressOf(server, request)}`,
              },
              { windows: r.browserRate.site, name: "recommendations-site", key: siteKey },
            ],
            now,
          ),
        );
        let userId: string | null = null;
        if (site.live!.identityMode !== "external_only") {
          userId = (await browserIdentityOf(site.tenantId, now)).claims?.userId ?? null;
        }
        return recommend(r.deps, site, userId ?? query.domainUserId ?? null, query);
      },
      { query: RecommendationsQuery, response: { 200: RecommendationsReply } },
    );
  return browserCors(deps.registry, routes);
}
