import { Elysia } from "elysia";
import { type JsonApiDeps, jsonApi } from "../http/error-envelope";
import { credentials } from "../identity/credentials";
import { SyncBody, SyncReply } from "./model";
import { type ContentDeps, syncContent } from "./service";

/** What the credential plugin needs (identity/credentials.ts declares it). */
type CredentialDeps = Parameters<typeof credentials>[0];

/** What the sync route needs: the credential plugin's deps and what a re-read needs. */
export type ContentRouteDeps = CredentialDeps & {
  readonly contentDeps: ContentDeps;
};

/**
 * POST /v1/content/sync (`/v1` only): change notices from the organization's CMS, one re-read
 * owed per id. An API key; the site is the key's pin.
 */
export function contentRoutes(deps: ContentRouteDeps & JsonApiDeps) {
  return new Elysia({ prefix: "/v1" })
    .use(jsonApi(deps))
    .use(credentials(deps))
    .guard({ apiKey: { siteFromKey: true } })
    .post("/content/sync", ({ site, body }) => syncContent(deps.contentDeps, site, body.events), {
      body: SyncBody,
      response: { 200: SyncReply },
    });
}
