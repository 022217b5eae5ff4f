import cluster from "node:cluster";
import { type AnyElysia, Elysia } from "elysia";
import { adminRoutes } from "./admin/routes";
import { adminAuditRoutes } from "./audit/routes";
import { checkoutRoutes } from "./checkout/routes";
import { CHECKOUT_WEBHOOK_PATH, checkoutWebhookHandler } from "./checkout/webhook";
import { adminConsoleUserRoutes } from "./console/admin-routes";
import { consoleRoutes } from "./console/routes";
import { adminContentRoutes } from "./content/admin-routes";
import { contentRoutes } from "./content/routes";
import { openApiRoutes } from "./contracts/openapi";
import { browserDecideRoutes, forwardRoutes } from "./decide/browser-routes";
import { adminExplainRoutes } from "./decide/explain-admin-routes";
import { KEYED_DECIDE_PATH } from "./decide/model";
import { keyedDecideHandler, keyedDecideText } from "./decide/routes";
import type { Deps } from "./deps";
import { adminGiftRoutes } from "./gifts/admin-routes";
import { giftRoutes } from "./gifts/routes";
import { grantRoutes } from "./grants/routes";
import { bodyTooLarge } from "./http/body-limit";
import type { PeerSource } from "./http/client-address";
import { browserCors } from "./http/cors";
import { appErrorResponse } from "./http/error-envelope";
import { unmatchedErrors } from "./http/error-plugins";
import { serveOverH1 } from "./http/h1/server";
import { checkRequestUrl } from "./http/json-shape";
import { onBothMounts } from "./http/mounts";
import { serveOverNodeHttp } from "./http/node-server";
import { requestIdFor, requestIdOf, tagRequest } from "./http/request-id";
import type { RequestStats } from "./http/request-stats";
import type { ServerTracing } from "./http/server-tracing";
import { perTurn } from "./http/turn-batch";
import { identityConfigRoutes } from "./identity/config-routes";
import { identityRoutes } from "./identity/routes";
import { upstreamPushRoutes } from "./identity/upstream-routes";
import { igluRoutes } from "./iglu/routes";
import { adminImpactRoutes } from "./impact/admin-routes";
import { errorText, stackFrames } from "./infra/error-text";
import { AppError, errorBody } from "./infra/errors";
import { withHotPath } from "./infra/hot-request";
import { adminInsightRoutes } from "./insight/routes";
import { interventionRoutes } from "./interventions/routes";
import { newsletterLinkRoutes, newsletterRoutes } from "./newsletters/routes";
import { ofrepRoutes } from "./ofrep/routes";
import { adminStoreRoutes } from "./ops/admin-routes";
import { opsRoutes } from "./ops/routes";
import { adminOrgRoutes } from "./orgs/admin-routes";
import { orgRoutes } from "./orgs/routes";
import { adminServiceRoutes } from "./outside/admin-routes";
import { adminRecommendationRoutes } from "./recommendations/admin-routes";
import { browserRecommendationRoutes, keyedRecommendationRoutes } from "./recommendations/routes";
import { streamingRoutes } from "./streaming/routes";

/**
 * The edge's refusals, before any route is matched: a URL no route may read (no Host, bad
 * percent-encoding, NUL) as its 400, a declared body over the limit as its 413.
 */
function edgeRefusal(request: Request, maxBody: number): Response | undefined {
  try {
    checkRequestUrl(request.url);
  } catch (error) {
    if (error instanceof AppError) return appErrorResponse(error, requestIdFor(request));
    throw error;
  }
  return bodyTooLarge(request, maxBody);
}

/** A keyed decide span's attributes: the site it names (bounded; never the key). */
function decideAttributes(request: Request): Record<string, string> {
  return { "svc.site": (request.headers.get("x-svc-site-id") ?? "").slice(0, 128) };
}

/**
 * Builds the whole HTTP app from its dependencies. Each route group carries its own parser,
 * guard and error rendering (`jsonApi` for the JSON groups, the console's HTML pages, the
 * newsletter links' pages), scoped to the group: the order of the `.use()` calls below does not
 * change what any route does. The app itself answers only what no group does (404, the edge's
 * refusals), in the envelope.
 */
export function createApp(deps: Deps) {
  const maxBody = deps.config.maxBodyBytes;
  // Under sustained load the requests of one event-loop turn are decided together, after the
  // turn's reads (turn-batch.ts: the hot path's code then runs warm); otherwise at once.
  // With tracing on, each keyed decide is a `decide` span under its request's server span (found
  // on the request: a batched turn runs it later); off, the handler is not wrapped at all.
  const keyed = keyedDecideHandler(deps);
  const decide = perTurn(deps.tracing === null ? keyed : deps.tracing.handler("decide", decideAttributes, keyed));
  // Over the h1 transport with tracing off, keyed decide reads the transport's light request and
  // answers JSON text: no `Request` or `Response` is built on its hot path (src/infra/hot-request.ts).
  // The transport batches a busy turn's hot requests itself (src/http/h1/server.ts, `TurnQueue`).
  const route = deps.tracing === null ? withHotPath(decide, keyedDecideText(deps)) : decide;
  // Keyed decide is a Bun native route on the listening server (no Elysia lifecycle on the hot
  // path); `app.handle` reaches the same handler through the route below, with no body parsing.
  const nativeRoutes = { [KEYED_DECIDE_PATH]: { POST: route } };
  // normalize "typebox": unknown members are still dropped, but a body of the wrong type stays
  // as sent and fails its schema (422). Elysia's default cleaner (exact-mirror) rebuilds an object
  // schema's value from its members, so `0`, `[]` or `"s"` became `{}` and passed.
  // The payment provider's webhook reads its raw body for the signature (no parsing either) and
  // answers its own errors in the envelope.
  const webhook = checkoutWebhookHandler(deps);
  const app = new Elysia({ serve: { routes: nativeRoutes } as object, normalize: "typebox" })
    .onRequest(({ request }) => edgeRefusal(request, maxBody))
    .post(KEYED_DECIDE_PATH, ({ request }) => decide(request), { parse: "none" })
    .post(CHECKOUT_WEBHOOK_PATH, ({ request }) => webhook(request), { parse: "none" })
    .use(newsletterLinkRoutes(deps))
    .use(consoleRoutes(deps))
    .use(opsRoutes(deps))
    .use(
      adminRoutes(deps, [
        adminImpactRoutes(deps),
        adminInsightRoutes(deps),
        adminOrgRoutes(deps),
        adminGiftRoutes(deps),
        adminExplainRoutes(deps),
        adminServiceRoutes(deps),
        adminContentRoutes(deps),
        adminRecommendationRoutes(deps),
        adminAuditRoutes(deps),
        adminConsoleUserRoutes(deps),
        adminStoreRoutes(deps),
      ]),
    )
    .use(upstreamPushRoutes(deps))
    .use(giftRoutes(deps))
    .use(streamingRoutes(deps))
    .use(igluRoutes(deps))
    .use(interventionRoutes(deps, deps.interventions))
    // The documents describe the whole app, read from its route table on first request.
    .use(openApiRoutes(deps, (): AnyElysia => whole))
    .use(ofrepRoutes(deps))
    .use(contentRoutes(deps))
    .use(keyedRecommendationRoutes(deps))
    .use(browserRecommendationRoutes(deps))
    .use(browserDecideRoutes(deps))
    .use(checkoutRoutes(deps));
  // Every route a mount's group serves gets per-site CORS, preflights included (http/cors.ts).
  const routed = onBothMounts(app, (prefix) =>
    browserCors(
      deps.registry,
      new Elysia()
        .use(identityConfigRoutes(deps, prefix))
        .use(identityRoutes(deps, prefix))
        .use(grantRoutes(deps, prefix))
        .use(orgRoutes(deps, prefix))
        .use(newsletterRoutes(deps, prefix))
        .use(forwardRoutes(deps, prefix)),
    ),
  );
  // The app's own renderer goes last: a hook of the app registered before a group would answer
  // that group's errors ahead of the group's own (Elysia runs the earlier one first).
  const whole = routed.use(unmatchedErrors(deps.logger));
  // Request metrics label each answer with its route template, matched against this table.
  deps.requests.setRoutes(whole.routes);
  // A JSON group's parse-stage errors name only its body schema's own members (error-envelope.ts).
  deps.routeTable.set(() => whole.routes);
  return whole;
}

export type App = ReturnType<typeof createApp>;

/**
 * Starts the app listening, in every start path. Whatever escapes every handler is logged and
 * answered 500 in the envelope; no development error page is ever served. The body cap is a
 * backstop only: the app answers 413 in the envelope at SVC_MAX_BODY_BYTES (declared or
 * chunked); the transport's own cap (a bare 413) sits above it for bodies that never finish.
 *
 * `SVC_HTTP_SERVER=h1` (the default) serves HTTP/1.1 parsed by src/http/h1 on `Bun.listen`,
 * answering pipelined requests in order, with the transport's cap at SVC_MAX_BODY_BYTES itself
 * (413 in the envelope, declared or chunked); `node` through Bun's node:http server, which does
 * too, more slowly; `bun` through Bun.serve, which Bun 1.4.5 makes close a pipelining client's
 * connection behind any answer still pending (src/http/node-server.ts), for deployments whose
 * every client is a proxy that never pipelines.
 */
export function listen(
  app: App,
  deps: Pick<Deps, "config" | "logger"> & Partial<Pick<Deps, "requests" | "tracing">>,
  port = deps.config.port,
) {
  const onError = (error: Error) => {
    deps.logger.error("unhandled server error", { error: errorText(error), stack: stackFrames(error) });
  };
  const maxRequestBodySize = deps.config.maxBodyBytes * 2 + 65_536;
  const hostname = deps.config.host;
  const idleTimeoutMs = deps.config.httpIdleTimeoutMs;
  // Bun.serve counts whole seconds on a 4-s wheel and may close up to 4 s early: 4 more make the
  // setting a floor there too (at most 254 s, which the setting's bound keeps to).
  const idleTimeout = Math.ceil(idleTimeoutMs / 1000) + 4;
  if (deps.config.httpServer === "h1") {
    const maxBody = deps.config.maxBodyBytes;
    return serveOverH1(app, {
      port,
      hostname,
      maxRequestBodySize: maxBody,
      timeouts: { keepAliveMs: idleTimeoutMs },
      onError,
      requests: deps.requests,
      tracing: deps.tracing ?? undefined,
    });
  }
  if (deps.config.httpServer === "node") {
    return serveOverNodeHttp(app, {
      port,
      hostname,
      maxRequestBodySize,
      idleTimeoutMs,
      onError,
      requests: deps.requests,
      tracing: deps.tracing ?? undefined,
    });
  }
  if (deps.requests !== undefined)
    return serveOverBun(app, deps.requests, {
      port,
      hostname,
      maxRequestBodySize,
      idleTimeout,
      onError,
      tracing: deps.tracing ?? undefined,
    });
  return app.listen({
    port,
    hostname,
    maxRequestBodySize,
    idleTimeout,
    development: false,
    error(error: Error) {
      onError(error);
      return internalErrorResponse(requestIdOf(undefined));
    },
  });
}

function internalErrorResponse(requestId: string): Response {
  return new Response(JSON.stringify(errorBody("internal_error", "Something went wrong.", requestId)), {
    status: 500,
    headers: { "content-type": "application/json" },
  });
}

type Handler = (request: Request) => Response | Promise<Response>;

/** A request URL's path without parsing it (a URL without a usable Host does not parse). */
function pathOf(url: string): string {
  const scheme = url.indexOf("://");
  const start = url.indexOf("/", scheme === -1 ? 0 : scheme + 3);
  if (start === -1) return "/";
  const query = url.indexOf("?", start);
  return query === -1 ? url.slice(start) : url.slice(start, query);
}

/**
 * `SVC_HTTP_SERVER=bun` with request ids and request metrics: Bun.serve with the app's native
 * routes and `app.fetch`, each answer given its `x-request-id` and counted (the time excludes
 * writing it, which Bun does after the handler returns).
 */
function serveOverBun(
  app: App,
  requests: RequestStats,
  options: {
    port: number;
    hostname: string;
    maxRequestBodySize: number;
    /** Seconds a keep-alive connection may sit idle. */
    idleTimeout: number;
    onError: (error: Error) => void;
    tracing?: ServerTracing;
  },
): App {
  const tracing = options.tracing;
  const observed =
    (handler: Handler, native: string | undefined) =>
    async (request: Request, server?: PeerSource): Promise<Response> => {
      const startedAt = performance.now();
      const id = requestIdOf(request.headers.get("x-request-id"));
      tagRequest(request, id);
      let response: Response;
      try {
        if (tracing === undefined) response = await handler(request);
        else {
          const route = () => native ?? requests.routeOf(request.method, pathOf(request.url));
          response = await tracing.serve(request, route, handler);
        }
      } catch (error) {
        options.onError(error instanceof Error ? error : new Error(String(error)));
        response = internalErrorResponse(id);
      }
      try {
        response.headers.set("x-request-id", id);
      } catch {
        // Immutable headers: the answer is copied with the id.
        response = new Response(response.body, response);
        response.headers.set("x-request-id", id);
      }
      try {
        requests.answered(
          native === undefined ? undefined : requests.nativeStats(request.method, native),
          request.method,
          pathOf(request.url),
          response.status,
          (performance.now() - startedAt) / 1000,
          id,
          request.headers.get("x-svc-site-id"),
          requests.accessLog ? server?.requestIP(request)?.address : undefined,
          requests.accessLog ? request.headers.get("x-forwarded-for") : undefined,
        );
      } catch {
        // Counting an answer must never fail it.
      }
      return response;
    };
  const native = ((app.config.serve as { routes?: Record<string, Record<string, Handler>> } | undefined)?.routes ??
    {}) as Record<string, Record<string, Handler>>;
  const routes: Record<string, Record<string, Handler>> = {};
  for (const [path, methods] of Object.entries(native)) {
    routes[path] = {};
    for (const [method, handler] of Object.entries(methods)) {
      (routes[path] as Record<string, Handler>)[method] = observed(handler, path);
    }
  }
  const fetch = observed((request) => app.fetch(request), undefined);
  app.server = Bun.serve({
    port: options.port,
    hostname: options.hostname,
    maxRequestBodySize: options.maxRequestBodySize,
    idleTimeout: options.idleTimeout,
    // A cluster's workers (SVC_WORKERS) share the port; a lone server must still fail on a taken one.
    reusePort: cluster.isWorker,
    development: false,
    routes,
    fetch,
    error(error: Error) {
      options.onError(error);
      return internalErrorResponse(requestIdOf(undefined));
    },
  }) as unknown as App["server"];
  return app;
}
