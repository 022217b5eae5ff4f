import { Elysia, t } from "elysia";
import { AppError } from "../infra/errors";
import type { SiteStore } from "../sites/store";
import type { UsageStore } from "./store";

/** What the usage route reads: the tenants and the engine calls counted per month. */
export interface AdminRecommendationDeps {
  readonly siteStore: SiteStore;
  readonly recommendations: { readonly usage: UsageStore };
}

/** Operator route (inside the /admin group): a tenant's recommendation-engine calls per UTC month. */
export function adminRecommendationRoutes(deps: AdminRecommendationDeps) {
  return new Elysia().get(
    "/tenants/:tenant/recommendations/usage",
    async ({ params }) => {
      const tenants = await deps.siteStore.listTenants();
      if (!tenants.some((x) => x.id === params.tenant)) throw new AppError("not_found", "Unknown tenant.");
      return { tenant: params.tenant, usage: await deps.recommendations.usage.usage(params.tenant) };
    },
    { params: t.Object({ tenant: t.String({ minLength: 1, maxLength: 64 }) }) },
  );
}
