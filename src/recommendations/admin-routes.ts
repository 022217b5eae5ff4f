import { Elysia, t } from "elysia";
import type { Deps } from "../deps";
import { AppError } from "../infra/errors";

/** Operator route (inside the /admin group): a tenant's recommendation-engine calls per UTC month. */
export function adminRecommendationRoutes(deps: Deps) {
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
