import { Elysia } from "elysia";
import { operatorTokenMatches } from "../admin/operator-token";
import { type JsonApiDeps, jsonApi } from "../http/error-plugins";
import { AppError } from "../infra/errors";
import { type MetricsDeps, metricsRegistry } from "./metrics";
import { READY_RETRY_AFTER_SECONDS, type ReadinessDeps, readiness } from "./ready";

/** What /ready and /metrics read. */
export interface OpsDeps extends MetricsDeps, ReadinessDeps {}

/**
 * GET /health: 200 while the process answers at all.
 * GET /ready: 200 when this process should get traffic, 503 with Retry-After otherwise (src/ops/ready.ts).
 * GET /metrics: Prometheus text, for the operator token or SVC_METRICS_TOKEN as a bearer.
 */
export function opsRoutes(deps: OpsDeps & JsonApiDeps) {
  const registry = metricsRegistry(deps);
  return new Elysia()
    .use(jsonApi(deps))
    .get("/health", () => ({ ok: true }))
    .get("/ready", async ({ set }) => {
      const state = await readiness(deps);
      if (!state.ready) {
        set.status = 503;
        set.headers["retry-after"] = String(READY_RETRY_AFTER_SECONDS);
      }
      return state;
    })
    .get("/metrics", async ({ request }) => {
      const auth = request.headers.get("authorization");
      const token = auth?.toLowerCase().startsWith("bearer ") ? auth.slice(7).trim() : null;
      const metricsToken = deps.config.metricsToken;
      const allowed =
        operatorTokenMatches(token, deps.config.operatorToken) ||
        (metricsToken !== undefined && operatorTokenMatches(token, metricsToken));
      if (!allowed) throw new AppError("unauthorized", "Invalid or missing metrics token.");
      return new Response(await registry.metrics(), { headers: { "content-type": registry.contentType } });
    });
}
