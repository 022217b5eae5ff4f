import { Elysia } from "elysia";
import { concurrencyFields } from "../counters/rate-limit-fields";
import { type JsonApiDeps, jsonApi } from "../http/error-plugins";
import { type CredentialDeps, credentials } from "../identity/credentials";
import { AppError } from "../infra/errors";
import type { InterventionHub, Listener } from "./hub";
import { InterventionsQuery } from "./model";

/** The per-key cap in the draft's RateLimit fields: a cap on streams open at once, not a window. */
const STREAMS_POLICY = "interventions-streams";

const tooManyStreams = (limit: number) =>
  new AppError("rate_limited", "This key has too many open intervention streams.", undefined, {
    "retry-after": "30",
    ...concurrencyFields(STREAMS_POLICY, limit, 0),
  });

const encoder = new TextEncoder();

/** The stream needs only the key credential; the hub is passed on its own. */
export type InterventionRouteDeps = CredentialDeps;

/**
 * GET /v1/decide/interventions (docs/interventions.md): server-sent events telling a publisher's
 * server that decisions for its subjects may have changed, so it decides again. An API key of the
 * site; at most SVC_SSE_STREAMS_PER_KEY open streams per key (429 past it), for every process
 * on one Postgres server together (`InterventionHub.admit`).
 */
export function interventionRoutes(deps: InterventionRouteDeps & JsonApiDeps, hub: InterventionHub) {
  return new Elysia({ prefix: "/v1/decide" })
    .use(jsonApi(deps))
    .use(credentials(deps))
    .guard({ apiKey: { anySiteOfTenant: false } })
    .get(
      "/interventions",
      async ({ apiKey, site, query, request, server }) => {
        const limit = hub.options.streamsPerKey;
        if (!(await hub.admit(apiKey.id))) throw tooManyStreams(limit);
        const subjects = query.subjects === undefined ? null : new Set(query.subjects.split(","));
        const lastEventId = request.headers.get("last-event-id");
        // Bun.serve closes a connection idle past its timeout; a stream is idle between heartbeats.
        (server as { timeout?: (r: Request, s: number) => void } | null)?.timeout?.(request, 0);
        let listener: Listener | undefined;
        const body = new ReadableStream<Uint8Array>({
          start(controller) {
            let open = true;
            listener = {
              tenantId: site.tenantId,
              siteId: site.id,
              keyId: apiKey.id,
              keyExpiresAt: apiKey.expiresAt,
              subjects,
              send(frame) {
                if (!open) return;
                try {
                  controller.enqueue(encoder.encode(frame));
                } catch {
                  this.close();
                }
              },
              close() {
                if (!open) return;
                open = false;
                hub.remove(this);
                try {
                  controller.close();
                } catch {
                  // Already closed by the client.
                }
              },
            };
            const missed = hub.add(listener, lastEventId);
            controller.enqueue(encoder.encode(`retry: 3000\n: open\n\n${missed.join("")}`));
          },
          cancel() {
            if (listener !== undefined) hub.remove(listener);
          },
        });
        return new Response(body, {
          headers: {
            "content-type": "text/event-stream; charset=utf-8",
            "cache-control": "no-store",
            "x-accel-buffering": "no",
            // This stream is counted already (the body's start ran): the places left for the key.
            ...concurrencyFields(STREAMS_POLICY, limit, limit - hub.streamsOf(apiKey.id)),
          },
        });
      },
      { query: InterventionsQuery },
    );
}
