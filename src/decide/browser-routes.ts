import { Elysia, t } from "elysia";
import type { GrantFacts } from "../core/types";
import type { KeyedRate } from "../counters/quota-leases";
import { takeRate } from "../counters/take-rate";
import type { ClientAddresses } from "../http/client-address";
import { browserCors, corsPolicy } from "../http/cors";
import { type JsonApiDeps, jsonApi } from "../http/error-plugins";
import type { Mount } from "../http/mounts";
import type { BrowserIdentity } from "../identity/browser-credential";
import { credentials } from "../identity/credentials";
import { AppError, badRequest } from "../infra/errors";
import { PREVIEW_HEADER } from "../preview/tokens";
import type { SiteState } from "../sites/registry";
import { selectedSite } from "../sites/selection";
import type { DecisionEngine, DecisionSampler } from "./engine";
import { DecideBody } from "./model";

/** What the browser mounts of decide need of the process (a narrow view of the app's deps). */
export type BrowserDecideDeps = Parameters<typeof credentials>[0] & {
  readonly now: () => number;
  readonly browserDecideRate: KeyedRate;
  readonly forwardRate: KeyedRate;
  readonly decisions: DecisionEngine;
  readonly impact: DecisionSampler;
  /** Browser decide's sampler when not `impact` (the decide thread samples what it decides itself). */
  readonly browserSampler?: DecisionSampler;
  /** Who is calling, for the per-client windows (behind the trusted proxies or not). */
  readonly clients: ClientAddresses;
};

const userIdRefused = () =>
  new AppError(
    "forbidden",
    "userId is not accepted here: on browser routes identity comes only from the signed access cookie.",
  );

/** The access cookie's grants as `grants.*` facts; undefined when there is no cookie. */
function grantFacts(who: BrowserIdentity): GrantFacts | undefined {
  if (!who.claims) return undefined;
  const facts: Record<string, true> = {};
  for (const g of who.claims.grants) facts[g] = true;
  return Object.freeze(facts);
}

const NO_ORG: Readonly<Record<string, unknown>> = Object.freeze({});

/**
 * The access cookie's organization facts: `org.id`, `org.slug`, `org.role` (the active
 * organization) and `org.roles.<organizationId>`; empty for a signed-out browser.
 */
function orgFacts(who: BrowserIdentity): Readonly<Record<string, unknown>> {
  const claims = who.claims;
  if (!claims) return NO_ORG;
  const active = claims.activeOrg;
  if (!active) return { roles: claims.orgs };
  return { id: active.id, slug: active.slug, role: claims.orgs[active.id], roles: claims.orgs };
}

function checkOrigin(site: SiteState, origin: string | null): void {
  if (origin === null || !site.live!.allowedOrigins.has(origin)) {
    throw new AppError("forbidden", "This origin is not allowed for the site.");
  }
}

/**
 * POST /svc/v1/decide: the browser decide mount (origin allowlist, access cookie, no key). Its
 * CORS, preflight included, is the shared `browserCors`; refusing an origin the site does not
 * list (403) is part of this route's browser credential.
 */
export function browserDecideRoutes(deps: BrowserDecideDeps & JsonApiDeps) {
  const engine = deps.decisions;
  const sampler = deps.browserSampler ?? deps.impact;
  const routes = new Elysia({ prefix: "/svc/v1" })
    .use(jsonApi(deps))
    .use(credentials(deps))
    .guard({ browser: true })
    .post(
      "/decide",
      async ({ request, body, server, set, browserIdentityOf }) => {
        const site = selectedSite(deps.registry, request);
        checkOrigin(site, request.headers.get("origin"));
        if (body.userId !== undefined) throw userIdRefused();
        // Explain shows meter values and rules: for the publisher's servers, not for readers.
        if (body.explain !== undefined) throw badRequest("explain is answered on the keyed /v1/decide only.");
        const now = deps.now();
        const rateFields = await takeRate(
          deps.browserDecideRate,
          "browser-decide",
          `browser-decide\u0001${site.tenantId}\u0001${site.id}\u0001${deps.clients.addressOf(server, request)}`,
          now,
        );
        Object.assign(set.headers, rateFields);
        const who = await browserIdentityOf(site.tenantId, now);
        const { document, preview } = await engine.chooseDocument(site, request.headers.get(PREVIEW_HEADER), now);
        const req = {
          site,
          document,
          preview,
          input: body,
          userId: who.claims?.userId ?? null,
          grants: grantFacts(who),
          org: orgFacts(who),
          accessMissing: who.accessMissing,
          now,
        };
        const answer = await engine.decideJson(req);
        sampler.offer(engine, req, answer);
        // The same writer as the keyed route; Elysia adds the CORS headers `browserCors` set.
        set.headers["content-type"] = "application/json";
        return answer;
      },
      { body: DecideBody },
    );
  return browserCors(deps.registry, routes);
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
 * No CORS either (`cors: "navigation"`): a navigation reads none, and a fetch must not follow it.
 */
export function forwardRoutes(deps: BrowserDecideDeps & JsonApiDeps, prefix: Mount) {
  const engine = deps.decisions;
  return new Elysia({ prefix })
    .use(jsonApi(deps))
    .use(corsPolicy)
    .use(credentials(deps))
    .guard({ browser: true })
    .get(
      "/decide/forward",
      async ({ request, query, server, browserIdentityOf }) => {
        const site = selectedSite(deps.registry, request, query.site);
        if (query.userId !== undefined) throw userIdRefused();
        const now = deps.now();
        const { document, preview } = await engine.chooseDocument(site, request.headers.get(PREVIEW_HEADER), now);
        const feature = document.features.get(query.feature);
        if (feature?.purpose !== "journey" || !feature.answerable) {
          throw new AppError("not_found", "Unknown journey feature.");
        }
        const rateFields = await takeRate(
          deps.forwardRate,
          "forward",
          `forward\u0001${site.tenantId}\u0001${site.id}\u0001${deps.clients.addressOf(server, request)}`,
          now,
        );
        const who = await browserIdentityOf(site.tenantId, now);
        const context: Record<string, unknown> = {};
        for (const [k, v] of new URL(request.url).searchParams) if (!(k in query)) context[k] = v;
        // "A journey feature charges no meter" (the spec): evaluated without effects.
        const result = await engine.evaluate(
          {
            site,
            document,
            preview,
            input: { features: [query.feature], deviceId: query.deviceId, context },
            userId: who.claims?.userId ?? null,
            grants: grantFacts(who),
            org: orgFacts(who),
            now,
          },
          false,
        );
        const decision = result.decisions[query.feature];
        const location = decision?.url ?? decision?.fallbackUrl;
        if (!location) {
          throw new AppError("validation_failed", "The journey resolved no destination for this request.");
        }
        return new Response(null, { status: 302, headers: { location, "cache-control": "no-store", ...rateFields } });
      },
      { query: ForwardQuery, cors: "navigation" },
    );
}
