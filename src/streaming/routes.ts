import { Elysia } from "elysia";
import type { ChangeFeed } from "../changes/change-feed";
import { type JsonApiDeps, jsonApi } from "../http/error-plugins";
import { type CredentialDeps, credentials } from "../identity/credentials";
import { STREAMING_WRITE } from "../keys/service";
import type { StreamingFactsCache } from "./facts-cache";
import { StreamingBody, StreamingParams, StreamingReplySchema } from "./model";
import { organizationPipeline, type StreamingDeps, writeBatch } from "./service";
import type { StreamingStore } from "./store";

/** The streaming route's deps: the key credential's, the store, this process' cache and the feed. */
export interface StreamingRouteDeps extends CredentialDeps {
  readonly streamingStore: StreamingStore;
  readonly streamingFacts: StreamingFactsCache;
  readonly changes: ChangeFeed;
}

/**
 * POST /v1/streaming/{pipeline} (`/v1` only): the organization's per-user rows for a pipeline
 * its site declares with source `organization`. An API key holding streaming:write; the site is
 * the key's pin (a site header naming another site is 403).
 */
export function streamingRoutes(deps: StreamingRouteDeps & JsonApiDeps) {
  const streaming: StreamingDeps = {
    store: deps.streamingStore,
    written: (site, userIds) => {
      deps.streamingFacts.drop(site.tenantId, site.id, userIds);
      return deps.changes.announce();
    },
    now: deps.now,
  };
  return new Elysia({ prefix: "/v1" })
    .use(jsonApi(deps))
    .use(credentials(deps))
    .guard({ apiKey: { permission: STREAMING_WRITE, siteFromKey: true } })
    .post(
      "/streaming/:pipeline",
      ({ site, params, body }) =>
        writeBatch(streaming, site, params.pipeline, organizationPipeline(site, params.pipeline), body.rows),
      { params: StreamingParams, body: StreamingBody, response: { 200: StreamingReplySchema } },
    );
}
