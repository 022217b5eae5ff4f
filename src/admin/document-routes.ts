import { Elysia, t } from "elysia";
import {
  contentKeysOf,
  type DocumentDeps,
  diffAgainstLive,
  documentVersion,
  listDocuments,
  publishVersion,
  rotateContentKey,
} from "./documents";
import { ContentKeyParams, DiffBody, RotateContentKeyBody, SiteParams, VersionParams } from "./model";

/**
 * A site's document history under /admin (docs/operations.md, "Document history"): list, read
 * one version, publish a version (the staged preview, or an earlier one to roll back) and diff a
 * candidate document against the live one; the site's content keys (ids and fingerprints) and
 * their rotation.
 */
export function adminDocumentRoutes(deps: DocumentDeps) {
  return new Elysia()
    .get("/tenants/:tenant/sites/:site/documents", ({ params }) => listDocuments(deps, params.tenant, params.site), {
      params: SiteParams,
    })
    .get(
      "/tenants/:tenant/sites/:site/documents/:version",
      ({ params }) => documentVersion(deps, params.tenant, params.site, Number(params.version)),
      { params: VersionParams },
    )
    .post(
      "/tenants/:tenant/sites/:site/documents/:version/publish",
      async ({ params }) => ({
        deployment: await publishVersion(deps, params.tenant, params.site, Number(params.version)),
      }),
      { params: VersionParams },
    )
    .post(
      "/tenants/:tenant/sites/:site/diff",
      ({ params, body }) => diffAgainstLive(deps, params.tenant, params.site, body.document),
      { params: SiteParams, body: DiffBody },
    )
    .get("/tenants/:tenant/sites/:site/content-keys", ({ params }) => contentKeysOf(deps, params.tenant, params.site), {
      params: SiteParams,
    })
    .post(
      "/tenants/:tenant/sites/:site/content-keys/:keyId/rotate",
      ({ params, body }) => rotateContentKey(deps, params.tenant, params.site, params.keyId, body?.secret),
      { params: ContentKeyParams, body: t.Optional(RotateContentKeyBody) },
    );
}
