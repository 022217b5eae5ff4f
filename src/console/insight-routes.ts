import { Elysia } from "elysia";
import { AppError } from "../infra/errors";
import type { Range } from "../insight/model";
import { decisionsReport, experimentsReport, funnelReport, type InsightDeps, metersReport } from "../insight/service";
import type { SiteRegistry } from "../sites/registry";
import { signedIn } from "./guard";
import { htmlResponse } from "./http";
import { CONSOLE_PATH } from "./model";
import { insightPage, PAGE_RANGES } from "./pages/insight";
import type { ConsoleDeps } from "./service";
import { siteParam } from "./site-routes";

export interface ConsoleInsightDeps extends ConsoleDeps {
  readonly registry: SiteRegistry;
  readonly insightDeps: InsightDeps;
}

/** GET /console/sites/:site/insight?range=24h|7d|30d: the insight page (viewers too). */
export function consoleInsightRoutes(deps: ConsoleInsightDeps) {
  return new Elysia({ prefix: CONSOLE_PATH }).get(
    "/sites/:site/insight",
    ({ request, params, server }) =>
      signedIn(deps, { request, server }, { write: false }, async (s) => {
        const siteId = siteParam(params.site);
        const site = deps.registry.site(s.tenantId, siteId);
        if (site === undefined || site.live === null) {
          throw new AppError("not_found", "This site has no live document yet: deploy one from its Documents page.");
        }
        const asked = new URL(request.url).searchParams.get("range");
        const range: Range = PAGE_RANGES.find((r) => r === asked) ?? "24h";
        const [decisions, funnel, experiments, meters] = await Promise.all([
          decisionsReport(deps.insightDeps, site, range),
          funnelReport(deps.insightDeps, site, range),
          experimentsReport(deps.insightDeps, site, range),
          metersReport(deps.insightDeps, site),
        ]);
        return htmlResponse(insightPage(s, { site: siteId, range, decisions, funnel, experiments, meters }));
      }),
    { parse: "none" },
  );
}
