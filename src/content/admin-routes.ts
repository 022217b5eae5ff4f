import { Elysia } from "elysia";
import { SiteParams } from "../admin/model";
import type { Deps } from "../deps";
import { AppError } from "../infra/errors";
import { ContentItemParams } from "./model";
import { CONTENT_JOB, siteKeyPrefix } from "./service";

/**
 * Operator routes for content (inside the /admin group): a site's item counts and re-read queue
 * (depth, oldest, dead), and one item as stored.
 */
export function adminContentRoutes(deps: Deps) {
  const requireSite = (tenant: string, site: string) => {
    if (deps.registry.site(tenant, site) === undefined) throw new AppError("not_found", "Unknown site.");
  };
  return new Elysia()
    .get(
      "/tenants/:tenant/sites/:site/content",
      async ({ params }) => {
        requireSite(params.tenant, params.site);
        const { kind: _kind, ...queue } = await deps.jobs.statsOf(
          CONTENT_JOB,
          siteKeyPrefix(params.tenant, params.site),
        );
        return {
          tenant: params.tenant,
          site: params.site,
          ...(await deps.contentStore.counts(params.tenant, params.site)),
          queue,
        };
      },
      { params: SiteParams },
    )
    .get(
      "/tenants/:tenant/sites/:site/content/:id",
      async ({ params }) => {
        requireSite(params.tenant, params.site);
        const item = await deps.contentStore.get(params.tenant, params.site, params.id);
        if (item === null) throw new AppError("not_found", "No such content item.");
        return { item };
      },
      { params: ContentItemParams },
    );
}
