import { Elysia } from "elysia";
import { SiteParams } from "../admin/model";
import type { SiteRegistry } from "../sites/registry";
import { servedSite } from "../sites/selection";
import { DecisionsReport, ExperimentsReport, FunnelReport, MetersReport, type Range, RangeQuery } from "./model";
import { decisionsReport, experimentsReport, funnelReport, type InsightDeps, metersReport } from "./service";

export interface InsightRouteDeps {
  readonly registry: SiteRegistry;
  readonly insightDeps: InsightDeps;
}

const rangeOf = (query: { range?: Range }): Range => query.range ?? "24h";

/**
 * GET /admin/tenants/:tenant/sites/:site/insight/{decisions,funnel,experiments,meters}: the
 * figures the console's insight pages chart (docs/insight.md), and `svc stats` prints.
 */
export function adminInsightRoutes(deps: InsightRouteDeps) {
  const site = (params: { tenant: string; site: string }) => servedSite(deps.registry, params.tenant, params.site);
  return new Elysia()
    .get(
      "/tenants/:tenant/sites/:site/insight/decisions",
      ({ params, query }) => decisionsReport(deps.insightDeps, site(params), rangeOf(query)),
      { params: SiteParams, query: RangeQuery, response: { 200: DecisionsReport } },
    )
    .get(
      "/tenants/:tenant/sites/:site/insight/funnel",
      ({ params, query }) => funnelReport(deps.insightDeps, site(params), rangeOf(query)),
      { params: SiteParams, query: RangeQuery, response: { 200: FunnelReport } },
    )
    .get(
      "/tenants/:tenant/sites/:site/insight/experiments",
      ({ params, query }) => experimentsReport(deps.insightDeps, site(params), rangeOf(query)),
      { params: SiteParams, query: RangeQuery, response: { 200: ExperimentsReport } },
    )
    .get("/tenants/:tenant/sites/:site/insight/meters", ({ params }) => metersReport(deps.insightDeps, site(params)), {
      params: SiteParams,
      response: { 200: MetersReport },
    });
}
