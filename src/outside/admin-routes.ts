import { Elysia, t } from "elysia";
import { AppError } from "../infra/errors";
import type { SiteStore } from "../sites/store";
import type { ServiceConfigs } from "./service-config";

/** What the service settings routes read and change: the tenants and their outside-service settings. */
export interface AdminServiceConfigDeps {
  readonly siteStore: SiteStore;
  readonly services: ServiceConfigs;
}

const ServiceParams = t.Object({
  tenant: t.String({ minLength: 1, maxLength: 64 }),
  service: t.String({ minLength: 1, maxLength: 64 }),
});

/**
 * /admin/tenants/:tenant/services: which outside services a tenant has configured (member names
 * only, never values), and PUT/DELETE of one service's settings. Mounted inside the admin group,
 * behind the operator token.
 */
export function adminServiceRoutes(deps: AdminServiceConfigDeps) {
  const requireTenant = async (tenantId: string) => {
    const tenants = await deps.siteStore.listTenants();
    if (!tenants.some((x) => x.id === tenantId)) throw new AppError("not_found", "Unknown tenant.");
  };
  return new Elysia()
    .get(
      "/tenants/:tenant/services",
      async ({ params }) => {
        await requireTenant(params.tenant);
        return { tenant: params.tenant, services: await deps.services.describe(params.tenant) };
      },
      { params: t.Object({ tenant: t.String({ minLength: 1, maxLength: 64 }) }) },
    )
    .put(
      "/tenants/:tenant/services/:service",
      async ({ params, body }) => {
        await requireTenant(params.tenant);
        return { tenant: params.tenant, ...(await deps.services.set(params.tenant, params.service, body)) };
      },
      { params: ServiceParams, body: t.Unknown() },
    )
    .delete(
      "/tenants/:tenant/services/:service",
      async ({ params }) => {
        await requireTenant(params.tenant);
        if (!(await deps.services.clear(params.tenant, params.service)))
          throw new AppError("not_found", "That service is not configured.");
        return { tenant: params.tenant, service: params.service, cleared: true };
      },
      { params: ServiceParams },
    );
}
