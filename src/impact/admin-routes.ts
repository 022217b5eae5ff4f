import { Elysia } from "elysia";
import { SiteParams } from "../admin/model";
import { AppError } from "../infra/errors";
import type { SiteRegistry } from "../sites/registry";
import { servedSite } from "../sites/selection";
import { replayImpact } from "./replay";
import type { ImpactSamples } from "./samples";

/**
 * GET /admin/tenants/:tenant/sites/:site/impact: this process's recent decide requests replayed
 * against the staged document (docs/operations.md, "Impact before publish"). Counts and decision
 * labels only: no sample's facts leave the server.
 */
export function adminImpactRoutes(deps: { readonly registry: SiteRegistry; readonly impact: ImpactSamples }) {
  return new Elysia().get(
    "/tenants/:tenant/sites/:site/impact",
    ({ params }) => {
      const site = servedSite(deps.registry, params.tenant, params.site);
      if (site.preview === null) throw new AppError("conflict", "No staged document.");
      return replayImpact(deps.impact.samplesOf(site.tenantId, site.id), site, site.preview);
    },
    { params: SiteParams },
  );
}
