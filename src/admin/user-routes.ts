import { Elysia } from "elysia";
import { checkClientTime, EXPIRY_TIME } from "../infra/client-time";
import { AppError } from "../infra/errors";
import type { PreviewTokens } from "../preview/tokens";
import type { SiteRegistry } from "../sites/registry";
import type { GrantRow, UserStore } from "../users/store";
import {
  AddGrantBody,
  CreateUserBody,
  GrantParams,
  PreviewTokenBody,
  SiteParams,
  TenantParams,
  UserParams,
} from "./model";
import { type AdminServiceDeps, requireSite } from "./service";

const grantView = (g: GrantRow) => ({ grant: g.grant, expiresAt: g.expiresAt ? g.expiresAt.toISOString() : null });

/** What the user, grant and preview-token routes read and change. */
export interface AdminUserDeps extends AdminServiceDeps {
  readonly now: () => number;
  readonly registry: SiteRegistry;
  readonly users: UserStore;
  readonly previewTokens: PreviewTokens;
}

function requireTenant(deps: AdminUserDeps, tenant: string): void {
  if (!deps.registry.hasTenant(tenant)) throw new AppError("not_found", "Unknown tenant.");
}

async function requireUser(deps: AdminUserDeps, tenant: string, user: string) {
  requireTenant(deps, tenant);
  const row = await deps.users.userById(tenant, user);
  if (!row) throw new AppError("not_found", "Unknown user.");
  return row;
}

/** Operator routes for users, grants and preview tokens (mounted inside the /admin group). */
export function adminUserRoutes(deps: AdminUserDeps) {
  const grantsChanged = (tenantId: string, userId: string) =>
    deps.changes.publish({ topic: "grants", tenantId, subject: userId });
  return new Elysia()
    .post(
      "/tenants/:tenant/users",
      async ({ params, body, set }) => {
        requireTenant(deps, params.tenant);
        const { user, created } = await deps.users.createUser(params.tenant, body.email);
        set.status = created ? 201 : 200;
        return { user: { id: user.id, email: user.email, emailVerified: user.emailVerified }, created };
      },
      { params: TenantParams, body: CreateUserBody },
    )
    .get(
      "/tenants/:tenant/users/:user/grants",
      async ({ params }) => {
        await requireUser(deps, params.tenant, params.user);
        return { grants: (await deps.users.listGrants(params.tenant, params.user)).map(grantView) };
      },
      { params: UserParams },
    )
    .post(
      "/tenants/:tenant/users/:user/grants",
      async ({ params, body }) => {
        const expiresAt =
          body.expiresAt === undefined
            ? null
            : new Date(checkClientTime(body.expiresAt, deps.now(), EXPIRY_TIME, "/expiresAt"));
        await requireUser(deps, params.tenant, params.user);
        const row = await deps.users.addGrant(params.tenant, params.user, body.grant, expiresAt);
        await grantsChanged(params.tenant, params.user);
        return { grant: grantView(row) };
      },
      { params: UserParams, body: AddGrantBody },
    )
    .delete(
      "/tenants/:tenant/users/:user/grants/:grant",
      async ({ params }) => {
        await requireUser(deps, params.tenant, params.user);
        const removed = await deps.users.revokeGrant(params.tenant, params.user, params.grant);
        if (!removed) throw new AppError("not_found", "The user does not hold that grant.");
        await grantsChanged(params.tenant, params.user);
        return { revoked: true };
      },
      { params: GrantParams },
    )
    .post(
      "/tenants/:tenant/sites/:site/preview-tokens",
      async ({ params, body }) => {
        await requireSite(deps, params.tenant, params.site);
        return deps.previewTokens.mint(params.tenant, params.site, body.ttlSeconds ?? 3600, deps.now());
      },
      { params: SiteParams, body: PreviewTokenBody },
    );
}
