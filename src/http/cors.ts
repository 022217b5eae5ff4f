import { type AnyElysia, Elysia } from "elysia";
import { AppError } from "../infra/errors";
import { PREVIEW_HEADER } from "../preview/tokens";
import type { SiteRegistry } from "../sites/registry";
import { SITE_HEADER, tenantOf } from "../sites/selection";
import { appErrorResponse } from "./error-envelope";
import { requestIdFor } from "./request-id";

/**
 * How a browser-facing route answers a page on another origin:
 * - `site` (the default): per site, from the live document's `allowedOrigins`;
 * - `public`: `Access-Control-Allow-Origin: *`, no credentials, cached per site header
 *   (`GET /v1/id/config`, `GET /v1/id/traits`, as the spec says);
 * - `navigation`: none at all, for a route only ever reached by a top-level navigation
 *   (`GET /v1/decide/forward`), which a fetch must not follow.
 */
export type CorsPolicy = "site" | "public" | "navigation";

/** Lets a route declare a policy other than `site`: `{ cors: "public" }`. Read by `browserCors`. */
export const corsPolicy = new Elysia({ name: "cors-policy" }).macro({
  cors: (_policy: Exclude<CorsPolicy, "site">) => ({}),
});

/** What a browser may send cross-origin. Never `Authorization`: browsers carry the session cookie. */
const CORS_ALLOWED_HEADERS = `content-type, ${SITE_HEADER}, ${PREVIEW_HEADER}`;
/** What a page may read of an answer beyond the safelisted fields: the rate window's state. */
const CORS_EXPOSED_HEADERS = "RateLimit, RateLimit-Policy, Retry-After";
const PREFLIGHT_MAX_AGE = "600";

interface PathCors {
  /** Policy per method served at the path. */
  readonly methods: Map<string, CorsPolicy>;
}

/** A route path (`/v1/org/:id`, `/files/*`) as an anchored pattern. */
function pathPattern(path: string): RegExp {
  const source = path
    .split("/")
    .map((segment) => {
      if (segment === "*") return ".*";
      if (segment.startsWith(":")) return "[^/]+";
      return segment.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    })
    .join("/");
  return new RegExp(`^${source}$`);
}

/** The path of an absolute request URL, without its query. */
function pathOf(url: string): string {
  const start = url.indexOf("/", url.indexOf("//") + 2);
  if (start === -1) return "/";
  const query = url.indexOf("?", start);
  return url.slice(start, query === -1 ? undefined : query);
}

/** The origin is listed by some served site of the tenant the request reached (a preflight has no site header). */
function tenantAllows(registry: SiteRegistry, request: Request, origin: string): boolean {
  const tenantId = tenantOf(registry, request);
  if (tenantId === null) return false;
  return registry.sitesOf(tenantId).some((s) => !s.disabled && s.live?.allowedOrigins.has(origin) === true);
}

/** The origin is listed by the site the request selects; no site header (or an unknown site) lists nothing. */
function siteAllows(registry: SiteRegistry, request: Request, origin: string): boolean {
  const siteId = request.headers.get(SITE_HEADER);
  if (siteId === null) return false;
  const tenantId = tenantOf(registry, request);
  const site = tenantId === null ? undefined : registry.site(tenantId, siteId);
  return site !== undefined && !site.disabled && site.live?.allowedOrigins.has(origin) === true;
}

const originRefused = () => new AppError("forbidden", "This origin is not allowed.");

/**
 * CORS for a group of browser-facing routes (both mounts, and `/svc/v1/decide`). Every route of
 * `group` gets it, so routes added to the group later are covered without naming them:
 *
 * - a preflight (`OPTIONS`, registered for every path of the group except navigation-only
 *   ones) from an origin that some served site of the tenant allows is 204 with that origin,
 *   `Access-Control-Allow-Credentials: true`, the path's methods and `CORS_ALLOWED_HEADERS`;
 *   from any other origin (or none) 403 in the envelope, with no CORS headers;
 * - an actual request carries `Vary: Origin`, and the origin plus credentials (and
 *   `CORS_EXPOSED_HEADERS`) only when the site it selects lists that origin. Otherwise the route answers as usual with no CORS
 *   headers and the browser keeps the answer from the page; a same-origin call (the magic-link
 *   interstitial's POST) is not refused here. Refusing by origin is the route's own business
 *   (`/svc/v1/decide` does, as part of its browser credential).
 *
 * The headers of actual requests are set in `onRequest`, before the body is parsed, so the
 * page can also read a 400 for malformed JSON or a 422. `onRequest` sees every request of the
 * app: it acts only on this group's paths. `@elysiajs/cors` is not used: its origin function
 * cannot tell a preflight from the site's own request, it sends `Allow-Credentials` to every
 * origin, and its hooks and `OPTIONS /*` route apply to the whole app, key-only routes included.
 */
export function browserCors(registry: SiteRegistry, group: AnyElysia): AnyElysia {
  const exact = new Map<string, PathCors>();
  const patterns: { pattern: RegExp; cors: PathCors }[] = [];
  const byPath = new Map<string, PathCors>();
  for (const route of group.routes) {
    if (route.method === "OPTIONS") continue;
    let entry = byPath.get(route.path);
    if (entry === undefined) {
      entry = { methods: new Map() };
      byPath.set(route.path, entry);
      if (/[:*]/.test(route.path)) patterns.push({ pattern: pathPattern(route.path), cors: entry });
      else exact.set(route.path, entry);
    }
    const declared = (route.hooks as { cors?: CorsPolicy } | undefined)?.cors;
    entry.methods.set(route.method, declared ?? "site");
  }
  const lookup = (path: string): PathCors | undefined =>
    exact.get(path) ?? patterns.find((p) => p.pattern.test(path))?.cors;

  let out = new Elysia().onRequest(({ request, set }) => {
    if (request.method === "OPTIONS") return;
    const policy = lookup(pathOf(request.url))?.methods.get(request.method);
    if (policy === undefined || policy === "navigation") return;
    if (policy === "public") {
      set.headers["access-control-allow-origin"] = "*";
      set.headers.vary = SITE_HEADER;
      return;
    }
    set.headers.vary = "Origin";
    const origin = request.headers.get("origin");
    if (origin !== null && siteAllows(registry, request, origin)) {
      set.headers["access-control-allow-origin"] = origin;
      set.headers["access-control-allow-credentials"] = "true";
      set.headers["access-control-expose-headers"] = CORS_EXPOSED_HEADERS;
    }
  });
  out = out.use(group);
  for (const [path, entry] of byPath) {
    const served = [...entry.methods].filter(([, policy]) => policy !== "navigation");
    if (served.length === 0) continue;
    const methods = served.map(([method]) => method).join(", ");
    const isPublic = served.every(([, policy]) => policy === "public");
    out = out.options(path, ({ request }) => {
      if (isPublic) {
        return new Response(null, {
          status: 204,
          headers: {
            "access-control-allow-origin": "*",
            "access-control-allow-methods": methods,
            "access-control-allow-headers": CORS_ALLOWED_HEADERS,
            "access-control-max-age": PREFLIGHT_MAX_AGE,
          },
        });
      }
      const origin = request.headers.get("origin");
      if (origin === null || !tenantAllows(registry, request, origin)) {
        // Answered here (the preflight routes are this wrapper's own, with no group's renderer).
        const refused = appErrorResponse(originRefused(), requestIdFor(request));
        refused.headers.set("vary", "Origin");
        return refused;
      }
      return new Response(null, {
        status: 204,
        headers: {
          "access-control-allow-origin": origin,
          "access-control-allow-credentials": "true",
          "access-control-allow-methods": methods,
          "access-control-allow-headers": CORS_ALLOWED_HEADERS,
          "access-control-max-age": PREFLIGHT_MAX_AGE,
          vary: "Origin",
        },
      });
    });
  }
  return out;
}
