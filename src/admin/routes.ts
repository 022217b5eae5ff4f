import { type AnyElysia, Elysia } from "elysia";
import { type AuditRecordDeps, auditRecordOf, READS_BY_POST, recordAudit } from "../audit/summary";
import type { Config } from "../config";
import { type JsonApiDeps, jsonApi } from "../http/error-plugins";
import { AppError } from "../infra/errors";
import type { KeyService } from "../keys/service";
import { adminDocumentRoutes } from "./document-routes";
import type { DocumentDeps } from "./documents";
import {
  CreateSiteBody,
  CreateTenantBody,
  DeployBody,
  IdentityProviderBody,
  IssueKeyBody,
  KeyParams,
  PublicUrlBody,
  SiteParams,
  TenantParams,
} from "./model";
import { operatorTokenMatches } from "./operator-token";
import {
  createSite,
  createTenant,
  deploySite,
  documentOfBody,
  requireSite,
  setIdentityProvider,
  setPublicUrl,
  setSiteDisabled,
} from "./service";
import { type AdminUserDeps, adminUserRoutes } from "./user-routes";

/** What the operator plane reads: its token, tenants, sites, keys and users, and where the audit goes. */
export interface AdminDeps extends AdminUserDeps, DocumentDeps, AuditRecordDeps {
  readonly config: Config;
  readonly keys: KeyService;
}

/**
 * The operator plane under /admin: what the CLI and the console call. The guard and the audit hook
 * cover the tenant, site and key routes here and every capability's admin group in `groups`
 * (handed in by the app, so this folder imports no capability above it).
 */
export function adminRoutes(deps: AdminDeps & JsonApiDeps, groups: readonly AnyElysia[] = []) {
  const plane = new Elysia({ prefix: "/admin" })
    .use(jsonApi(deps))
    .onBeforeHandle(({ request }) => {
      const auth = request.headers.get("authorization");
      const token = auth?.toLowerCase().startsWith("bearer ") ? auth.slice(7).trim() : null;
      if (!operatorTokenMatches(token, deps.config.operatorToken)) {
        throw new AppError("unauthorized", "Invalid or missing operator token.");
      }
    })
    // Every change that succeeded is recorded (docs/operations.md, "Audit log"); reads are not.
    .onAfterHandle(async ({ request, route, params, responseValue, set }) => {
      if (request.method === "GET" || request.method === "HEAD" || request.method === "OPTIONS") return;
      if (typeof set.status === "number" && set.status >= 300) return;
      if (READS_BY_POST.has(`${request.method} ${route.replace(/^\/admin/, "")}`)) return;
      const record = auditRecordOf(
        {
          method: request.method,
          route,
          params: (params ?? {}) as Record<string, string>,
          response: responseValue,
        },
        "operator",
        new Date(deps.now()),
      );
      await recordAudit(deps, record);
    })
    .get("/tenants", async () => ({ tenants: await deps.siteStore.listTenants() }))
    .post(
      "/tenants",
      async ({ body, set }) => {
        set.status = 201;
        return { tenant: await createTenant(deps, body) };
      },
      { body: CreateTenantBody },
    )
    .put("/tenants/:tenant/identity-provider", ({ params, body }) => setIdentityProvider(deps, params.tenant, body), {
      params: TenantParams,
      body: IdentityProviderBody,
    })
    .delete("/tenants/:tenant/identity-provider", ({ params }) => setIdentityProvider(deps, params.tenant, null), {
      params: TenantParams,
    })
    .put("/tenants/:tenant/public-url", ({ params, body }) => setPublicUrl(deps, params.tenant, body.publicUrl), {
      params: TenantParams,
      body: PublicUrlBody,
    })
    .delete("/tenants/:tenant/public-url", ({ params }) => setPublicUrl(deps, params.tenant, null), {
      params: TenantParams,
    })
    .get(
      "/tenants/:tenant/sites",
      async ({ params }) => {
        if (!deps.registry.hasTenant(params.tenant)) throw new AppError("not_found", "Unknown tenant.");
        return { sites: await deps.siteStore.listSites(params.tenant) };
      },
      { params: TenantParams },
    )
    .post(
      "/tenants/:tenant/sites",
      async ({ params, body, set }) => {
        set.status = 201;
        return { site: await createSite(deps, params.tenant, body.id) };
      },
      { params: TenantParams, body: CreateSiteBody },
    )
    .post(
      "/tenants/:tenant/sites/:site/disable",
      async ({ params }) => ({
        site: await setSiteDisabled(deps, params.tenant, params.site, true),
      }),
      { params: SiteParams },
    )
    .post(
      "/tenants/:tenant/sites/:site/enable",
      async ({ params }) => ({
        site: await setSiteDisabled(deps, params.tenant, params.site, false),
      }),
      { params: SiteParams },
    )
    .post(
      "/tenants/:tenant/sites/:site/deploy",
      async ({ params, body }) => {
        const { document, source } = documentOfBody(body);
        return {
          deployment: await deploySite(deps, params.tenant, params.site, document, body.preview ?? false, source),
        };
      },
      { params: SiteParams, body: DeployBody },
    )
    .get(
      "/tenants/:tenant/sites/:site/keys",
      async ({ params }) => {
        await requireSite(deps, params.tenant, params.site);
        return { keys: await deps.keys.list(params.tenant, params.site, deps.now()) };
      },
      { params: SiteParams },
    )
    .post(
      "/tenants/:tenant/sites/:site/keys",
      async ({ params, body, set }) => {
        await requireSite(deps, params.tenant, params.site);
        set.status = 201;
        return await deps.keys.issue(params.tenant, params.site, body, deps.now());
      },
      { params: SiteParams, body: IssueKeyBody },
    )
    .post(
      "/tenants/:tenant/sites/:site/keys/:keyId/revoke",
      async ({ params }) => ({
        key: await deps.keys.revoke(params.tenant, params.site, params.keyId, deps.now()),
      }),
      { params: KeyParams },
    )
    .use(adminDocumentRoutes(deps))
    .use(adminUserRoutes(deps));
  for (const group of groups) plane.use(group);
  return plane;
}
