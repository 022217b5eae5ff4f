import { Buckets, REQUEST_BUCKETS } from "../infra/histogram";
import type { Logger } from "../logger";
import type { ClientAddresses } from "./client-address";
import { boundedHeader } from "./request-id";

/** One route's answers by status: a count and a latency histogram each. */
export class RouteStats {
  readonly byStatus = new Map<number, Buckets>();

  constructor(
    readonly method: string,
    readonly route: string,
  ) {}

  record(status: number, seconds: number): void {
    let buckets = this.byStatus.get(status);
    if (buckets === undefined) {
      buckets = new Buckets(REQUEST_BUCKETS);
      this.byStatus.set(status, buckets);
    }
    buckets.observe(seconds);
  }
}

/** A route template (`/v1/sites/:siteId`) as a matcher of request paths. */
function templateMatcher(path: string): RegExp {
  const escaped = path
    .split("/")
    .map((part) => (part.startsWith(":") ? "[^/]+" : part === "*" ? ".*" : part.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")))
    .join("/");
  return new RegExp(`^${escaped}/?$`);
}

/** The label of a request no route serves (404s), so unknown paths never grow the label set. */
export const UNMATCHED_ROUTE = "unmatched";

/** What a transport counts its answers with: `RequestStats`, or the decide thread's (src/decide-thread). */
export type AnswerCounter = Pick<RequestStats, "accessLog" | "nativeStats" | "answered" | "routeOf">;

/**
 * Counts every answered request by method, route template and status, with its latency, and
 * writes the access log when enabled (SVC_ACCESS_LOG=1). The transport calls `answered` once per
 * answer. Recording allocates nothing once a route has answered a status before; the label sets
 * are bounded by the route table (a path no route serves counts as `unmatched`).
 */
export class RequestStats {
  private readonly byRoute = new Map<string, RouteStats>();
  private matchers: { method: string; route: string; pattern: RegExp }[] = [];
  /** Native routes (keyed decide): path -> method -> stats, found without matching. */
  private readonly native = new Map<string, Map<string, RouteStats>>();
  /** Answers recorded so far, all routes together (what `collectWhenIdle` watches). */
  total = 0;

  /**
   * `clients`: how the access log names the client (the peer, or behind a trusted proxy the
   * address it forwards); without it the log names none.
   */
  constructor(
    private readonly logger: Logger,
    readonly accessLog: boolean,
    private readonly clients?: ClientAddresses,
  ) {}

  /** The app's route table (`app.routes`): what request paths are matched against. */
  setRoutes(routes: readonly { method: string; path: string }[]): void {
    const seen = new Set<string>();
    this.matchers = [];
    for (const { method, path } of routes) {
      const key = `${method} ${path}`;
      if (seen.has(key)) continue;
      seen.add(key);
      // Static paths first, so `/v1/sites/new` is not taken by `/v1/sites/:id`.
      this.matchers.push({ method, route: path, pattern: templateMatcher(path) });
    }
    this.matchers.sort((a, b) => Number(a.route.includes(":")) - Number(b.route.includes(":")));
  }

  /** Every route's stats (for /metrics). */
  routes(): Iterable<RouteStats> {
    return this.byRoute.values();
  }

  private statsOf(method: string, route: string): RouteStats {
    const key = `${method} ${route}`;
    let stats = this.byRoute.get(key);
    if (stats === undefined) {
      stats = new RouteStats(method, route);
      this.byRoute.set(key, stats);
    }
    return stats;
  }

  /** The stats of a native route (its path is its template). */
  nativeStats(method: string, path: string): RouteStats {
    let methods = this.native.get(path);
    if (methods === undefined) {
      methods = new Map();
      this.native.set(path, methods);
    }
    let stats = methods.get(method);
    if (stats === undefined) {
      stats = this.statsOf(method, path);
      methods.set(method, stats);
    }
    return stats;
  }

  /** The route template serving `path` (a path without its query), or UNMATCHED_ROUTE. */
  routeOf(method: string, path: string): string {
    const lookup = method === "HEAD" ? "GET" : method;
    for (const m of this.matchers) {
      if ((m.method === lookup || m.method === "ALL") && m.pattern.test(path)) return m.route;
    }
    return UNMATCHED_ROUTE;
  }

  /**
   * Records one answer. `stats`: the native route's, when the transport knows it; otherwise the
   * route is matched from `path`. `site`, `peer` and `forwardedFor` are the request's
   * `x-svc-site-id`, TCP peer address and `X-Forwarded-For`, read only for the access log (a
   * transport need not find the peer when `accessLog` is off).
   */
  answered(
    stats: RouteStats | undefined,
    method: string,
    path: string,
    status: number,
    seconds: number,
    requestId: string,
    site: string | string[] | null | undefined,
    peer?: string,
    forwardedFor?: string | string[] | null,
  ): void {
    const route = stats ?? this.statsOf(method, this.routeOf(method, path));
    route.record(status, seconds);
    this.total++;
    if (this.accessLog) {
      this.logger.info("request", {
        method,
        route: route.route,
        status,
        durationMs: Math.round(seconds * 1e6) / 1e3,
        site: boundedHeader(site),
        client: this.clients?.addressFrom(
          peer,
          Array.isArray(forwardedFor) ? forwardedFor.join(", ") : (forwardedFor ?? null),
        ),
        requestId,
      });
    }
  }
}
