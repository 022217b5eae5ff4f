import { Elysia } from "elysia";
import type { Deps } from "../deps";
import { credentials } from "../identity/credentials";
import { STREAMING_WRITE } from "../keys/service";
import { StreamingBody, StreamingParams, StreamingReplySchema } from "./model";
import { organizationPipeline, type StreamingDeps, writeBatch } from "./service";

/**
 * POST /v1/streaming/{pipeline} (`/v1` only): the organization's per-user rows for a pipeline
 * its site declares with source `organization`. An API key holding streaming:write; the site is
 * the key's pin (a site header naming another site is 403).
 */
export function streamingRoutes(deps: Deps) {
  const streaming: StreamingDeps = {
    store: deps.streamingStore,
    written: (site, userIds) => {
      deps.streamingFacts.drop(site.tenantId, site.id, userIds);
      return deps.changes.announce();
    },
  };
  return new Elysia({ prefix: "/v1" })
    .use(credentials(deps))
    .guard({ apiKey: { permission: STREAMING_WRITE, siteFromKey: true } })
    .post(
      "/streaming/:pipeline",
      ({ site, params, body }) =>
        writeBatch(streaming, site, params.pipeline, organizationPipeline(site, params.pipeline), body.rows),
      { params: StreamingParams, body: StreamingBody, response: { 200: StreamingReplySchema } },
    );
}
