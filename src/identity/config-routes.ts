import { Elysia } from "elysia";
import type { Deps } from "../deps";
import type { Mount } from "../http/mounts";
import { readSiteId, SITE_HEADER, servedSite, tenantOf } from "../http/site";

/**
 * GET /v1/id/config (both mounts): the public identity settings of a site. No credential,
 * `Access-Control-Allow-Origin: *`, cached per site header rather than per Origin.
 */
export function identityConfigRoutes(deps: Deps, prefix: Mount) {
  return new Elysia({ prefix }).get("/id/config", ({ request, set }) => {
    set.headers["access-control-allow-origin"] = "*";
    set.headers.vary = SITE_HEADER;
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
  });
}
