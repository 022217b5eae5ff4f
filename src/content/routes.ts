import { Elysia } from "elysia";
import { type JsonApiDeps, jsonApi } from "../http/error-plugins";
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
 * owed per id. An API key and the site header, as the spec's common rule asks of every route but
 * forward (400 without it); the header must name the key's own site (403 otherwise).
 */
export function contentRoutes(deps: ContentRouteDeps & JsonApiDeps) {
  return new Elysia({ prefix: "/v1" })
    .use(jsonApi(deps))
    .use(credentials(deps))
    .guard({ apiKey: { anySiteOfTenant: false } })
    .post("/content/sync", ({ site, body }) => syncContent(deps.contentDeps, site, body.events), {
      body: SyncBody,
      response: { 200: SyncReply },
    });
}
