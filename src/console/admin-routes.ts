import { Elysia, t } from "elysia";
import { TenantParams } from "../admin/model";
import { AppError } from "../infra/errors";
import { type ConsoleDeps, putConsoleUser, removeConsoleUser } from "./service";

const email = t.String({ minLength: 3, maxLength: 254 });

/** Console users under the operator API (`npm run svc -- console-user ...`); audited by the admin hook. */
export function adminConsoleUserRoutes(deps: ConsoleDeps) {
  return new Elysia()
    .get(
      "/tenants/:tenant/console-users",
      async ({ params }) => {
        putGuard(deps, params.tenant);
        return { users: await deps.consoleStore.listUsers(params.tenant) };
      },
      { params: TenantParams },
    )
    .post(
      "/tenants/:tenant/console-users",
      async ({ params, body }) => ({ user: await putConsoleUser(deps, params.tenant, body.email, body.role) }),
      {
        params: TenantParams,
        body: t.Object(
          { email, role: t.Union([t.Literal("owner"), t.Literal("admin"), t.Literal("viewer")]) },
          { additionalProperties: false },
        ),
      },
    )
    .delete(
      "/tenants/:tenant/console-users/:email",
      ({ params }) => removeConsoleUser(deps, params.tenant, params.email),
      { params: t.Object({ tenant: TenantParams.properties.tenant, email }) },
    );
}

function putGuard(deps: Pick<ConsoleDeps, "registry">, tenant: string): void {
  if (!deps.registry.hasTenant(tenant)) throw new AppError("not_found", "Unknown tenant.");
}
