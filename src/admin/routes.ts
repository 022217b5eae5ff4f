import { timingSafeEqual } from "node:crypto";
import { Elysia } from "elysia";
import { adminAuditRoutes } from "../audit/routes";
import { auditRecordOf, READS_BY_POST, recordAudit } from "../audit/summary";
import { adminConsoleUserRoutes } from "../console/admin-routes";
import { adminContentRoutes } from "../content/admin-routes";
import { adminExplainRoutes } from "../decide/explain-admin-routes";
import type { Deps } from "../deps";
import { adminGiftRoutes } from "../gifts/admin-routes";
import { AppError } from "../http/errors";
import { adminImpactRoutes } from "../impact/admin-routes";
import { hashSecret } from "../keys/key-value";
import { adminOrgRoutes } from "../orgs/admin-routes";
import { adminServiceRoutes } from "../outside/admin-routes";
import { adminRecommendationRoutes } from "../recommendations/admin-routes";
import { adminDocumentRoutes } from "./document-routes";
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
import {
  createSite,
  createTenant,
  deploySite,
  requireSite,
  setIdentityProvider,
  setPublicUrl,
  setSiteDisabled,
} from "./service";
import { adminUserRoutes } from "./user-routes";

/** Constant-time check of an operator token against the configured one (compared as hashes). */
export function operatorTokenMatches(presented: string | null, expected: string): boolean {
  if (!presented) return false;
  return timingSafeEqual(Buffer.from(hashSecret(presented), "hex"), Buffer.from(hashSecret(expected), "hex"));
}

/** The operator plane under /admin: what the CLI (and later the console) calls. */
export function adminRoutes(deps: Deps) {
  return (
    new Elysia({ prefix: "/admin" })
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
        async ({ params, body }) => ({
          deployment: await deploySite(deps, params.tenant, params.site, body.document, body.preview ?? false),
        }),
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
      .use(adminImpactRoutes(deps))
      .use(adminUserRoutes(deps))
      .use(adminOrgRoutes(deps))
      .use(adminGiftRoutes(deps))
      .use(adminExplainRoutes(deps))
      .use(adminServiceRoutes(deps))
      .use(adminContentRoutes(deps))
      .use(adminRecommendationRoutes(deps))
      .use(adminAuditRoutes(deps))
      .use(adminConsoleUserRoutes(deps))
  );
}
