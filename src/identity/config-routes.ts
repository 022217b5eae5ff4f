import { Elysia } from "elysia";
import { corsPolicy } from "../http/cors";
import { type JsonApiDeps, jsonApi } from "../http/error-plugins";
import type { Mount } from "../http/mounts";
import type { SiteRegistry } from "../sites/registry";
import { readSiteId, servedSite, tenantOf } from "../sites/selection";

export interface IdentityConfigRouteDeps {
  readonly registry: SiteRegistry;
}

/**
 * GET /v1/id/config (both mounts): the public identity settings of a site. No credential;
 * `cors: "public"`: `Access-Control-Allow-Origin: *`, cached per site header rather than per Origin.
 */
export function identityConfigRoutes(deps: IdentityConfigRouteDeps & JsonApiDeps, prefix: Mount) {
  return new Elysia({ prefix })
    .use(jsonApi(deps))
    .use(corsPolicy)
    .get(
      "/id/config",
      ({ request }) => {
        const siteId = readSiteId(request.headers);
        const site = servedSite(deps.registry, tenantOf(deps.registry, request), siteId);
        const live = site.live!;
        const identity = live.document.identity;
        const mode = live.identityMode;
        return {
          site: site.id,
          identityMode: mode,
          // Unset means open in svc_only and closed in dual; never open in external_only.
          signInEnabled: mode !== "external_only" && (identity.signInEnabled ?? mode === "svc_only"),
          logoutUrl: identity.upstream?.signOutUrl ?? null,
        };
      },
      { cors: "public" },
    );
}
