import { Elysia } from "elysia";
import { SiteParams } from "../admin/model";
import { AppError } from "../infra/errors";
import type { JobQueue } from "../jobs/queue";
import type { SiteRegistry } from "../sites/registry";
import { ContentItemParams } from "./model";
import { CONTENT_JOB, siteKeyPrefix } from "./service";
import type { ContentStore } from "./store";

/** What the content admin routes read: the sites, the re-read queue and the stored items. */
export interface AdminContentDeps {
  readonly registry: SiteRegistry;
  readonly jobs: JobQueue;
  readonly contentStore: ContentStore;
}

/**
 * Operator routes for content (inside the /admin group): a site's item counts and re-read queue
 * (depth, oldest, dead), and one item as stored.
 */
export function adminContentRoutes(deps: AdminContentDeps) {
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
