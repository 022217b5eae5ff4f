import { Elysia } from "elysia";
import type { Deps } from "../deps";
import { readSiteId, SITE_HEADER, servedSite, tenantOf } from "../http/site";
import type { Mount } from "../http/mounts";

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
      signInEnabled: mode === "svc_only" || (mode === "dual" && identity.signInEnabled === true),
      logoutUrl: identity.upstream?.signOutUrl ?? null,
    };
  });
}
