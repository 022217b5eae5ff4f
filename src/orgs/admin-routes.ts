import { Elysia } from "elysia";
import { TenantParams } from "../admin/model";
import { AppError } from "../infra/errors";
import type { SiteRegistry } from "../sites/registry";
import { CreateOrganizationBody } from "./model";
import { membershipJson, organizationJson } from "./service";
import type { OrgStore } from "./store";

export interface AdminOrgRouteDeps {
  readonly registry: SiteRegistry;
  readonly orgs: OrgStore;
}

/**
 * Operator routes for organizations (mounted inside the /admin group, behind the operator
 * token). Creating an organization is an operator action: the browser routes only change
 * existing ones. The owner is the user with `ownerEmail` (created when new, in the same
 * transaction: a refused creation writes nothing).
 */
export function adminOrgRoutes(deps: AdminOrgRouteDeps) {
  const requireTenant = (tenant: string) => {
    if (!deps.registry.hasTenant(tenant)) throw new AppError("not_found", "Unknown tenant.");
  };
  return new Elysia()
    .get(
      "/tenants/:tenant/organizations",
      async ({ params }) => {
        requireTenant(params.tenant);
        return { organizations: (await deps.orgs.listOrganizations(params.tenant)).map(organizationJson) };
      },
      { params: TenantParams },
    )
    .post(
      "/tenants/:tenant/organizations",
      async ({ params, body, set }) => {
        requireTenant(params.tenant);
        const created = await deps.orgs.createOrganization(
          params.tenant,
          { name: body.name, slug: body.slug, logo: body.logo ?? null },
          body.ownerEmail,
        );
        if (!created) throw new AppError("conflict", "An organization with that slug already exists.");
        set.status = 201;
        return { organization: organizationJson(created.organization), owner: membershipJson(created.owner) };
      },
      { params: TenantParams, body: CreateOrganizationBody },
    );
}
