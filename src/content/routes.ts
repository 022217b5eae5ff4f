import { Elysia } from "elysia";
import type { Deps } from "../deps";
import { credentials } from "../identity/credentials";
import { SyncBody, SyncReply } from "./model";
import { syncContent } from "./service";

/**
 * POST /v1/content/sync (`/v1` only): change notices from the organization's CMS, one re-read
 * owed per id. An API key; the site is the key's pin.
 */
export function contentRoutes(deps: Deps) {
  return new Elysia({ prefix: "/v1" })
    .use(credentials(deps))
    .guard({ apiKey: { siteFromKey: true } })
    .post("/content/sync", ({ site, body }) => syncContent(deps.contentDeps, site, body.events), {
      body: SyncBody,
      response: { 200: SyncReply },
    });
}
