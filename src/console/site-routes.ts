import { Value } from "@sinclair/typebox/value";
import { Elysia } from "elysia";
import { IssueKeyBody } from "../admin/model";
import { createSite, requireSite, setSiteDisabled } from "../admin/service";
import { isStorableText } from "../core/text";
import { AppError } from "../infra/errors";
import type { IssueKeyInput } from "../keys/service";
import { audited, signedIn } from "./guard";
import { htmlResponse, redirect } from "./http";
import { CONSOLE_PATH } from "./model";
import { auditPage } from "./pages/audit";
import { type IssueForm, keysPage, revokeConfirmPage } from "./pages/keys";
import type { FieldError } from "./pages/layout";
import { href } from "./pages/layout";
import { sitesPage } from "./pages/sites";
import type { ConsoleDeps } from "./service";

const NO_PARSE = { parse: "none" } as const;
const AUDIT_PAGE = 100;

/** A site id from the path: what the admin API accepts (1-128 storable characters). */
export function siteParam(value: string | undefined): string {
  if (value === undefined || value.length === 0 || value.length > 128 || !isStorableText(value)) {
    throw new AppError("not_found", "Unknown site.");
  }
  return value;
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The issue form's fields, checked against the admin API's own schema (IssueKeyBody): the same
 * bounds, the errors at the same pointers.
 */
function issueInput(form: Map<string, string>): { input: IssueKeyInput; errors: FieldError[]; echo: IssueForm } {
  const name = (form.get("name") ?? "").trim();
  const days = (form.get("expiresInDays") ?? "").trim();
  const streaming = form.get("streaming") === "1";
  const input: IssueKeyInput = {
    name,
    ...(days !== "" ? { expiresInDays: /^\d+$/.test(days) ? Number(days) : Number.NaN } : {}),
    ...(streaming ? { permissions: ["streaming:write"] } : {}),
  };
  const errors = [...Value.Errors(IssueKeyBody, input)].map((e) => ({ path: e.path, message: e.message }));
  return { input, errors, echo: { name, expiresInDays: days, streaming } };
}

/** Sites, keys and the audit log: the console's pages over the admin services. */
export function consoleSiteRoutes(deps: ConsoleDeps) {
  const sitesOf = (tenantId: string) => deps.siteStore.listSites(tenantId);
  return new Elysia({ prefix: CONSOLE_PATH })
    .get(
      "",
      ({ request, server }) =>
        signedIn(deps, { request, server }, { write: false }, async (s) =>
          htmlResponse(sitesPage(s, await sitesOf(s.tenantId))),
        ),
      NO_PARSE,
    )
    .get("/", () => redirect(CONSOLE_PATH), NO_PARSE)
    .post(
      "/sites",
      ({ request, server }) =>
        signedIn(deps, { request, server }, { write: true }, async (s, form) => {
          const id = (form?.get("id") ?? "").trim();
          if (id.length < 1 || id.length > 128) {
            const errors = [{ path: "/id", message: "Site id must be 1 to 128 characters." }];
            return htmlResponse(sitesPage(s, await sitesOf(s.tenantId), { errors, newId: id }), 422);
          }
          try {
            const site = await createSite(deps, s.tenantId, id);
            await audited(deps, s, {
              route: "/admin/tenants/:tenant/sites",
              params: { tenant: s.tenantId },
              response: { site },
            });
          } catch (error) {
            if (!(error instanceof AppError) || error.code !== "conflict") throw error;
            const errors = [{ path: "/id", message: error.message }];
            return htmlResponse(sitesPage(s, await sitesOf(s.tenantId), { errors, newId: id }), 409);
          }
          return htmlResponse(sitesPage(s, await sitesOf(s.tenantId), { created: id }), 201);
        }),
      NO_PARSE,
    )
    .post(
      "/sites/:site/:toggle",
      ({ request, params, server }) =>
        signedIn(deps, { request, server }, { write: true }, async (s) => {
          const site = siteParam(params.site);
          if (params.toggle !== "enable" && params.toggle !== "disable")
            throw new AppError("not_found", "No such page.");
          const changed = await setSiteDisabled(deps, s.tenantId, site, params.toggle === "disable");
          await audited(deps, s, {
            route: `/admin/tenants/:tenant/sites/:site/${params.toggle}`,
            params: { tenant: s.tenantId, site },
            response: { site: changed },
          });
          return redirect(CONSOLE_PATH);
        }),
      NO_PARSE,
    )
    .get(
      "/sites/:site/keys",
      ({ request, params, server }) =>
        signedIn(deps, { request, server }, { write: false }, async (s) => {
          const site = siteParam(params.site);
          await requireSite(deps, s.tenantId, site);
          return htmlResponse(keysPage(s, site, await deps.keys.list(s.tenantId, site, deps.now())));
        }),
      NO_PARSE,
    )
    .post(
      "/sites/:site/keys",
      ({ request, params, server }) =>
        signedIn(deps, { request, server }, { write: true }, async (s, form) => {
          const site = siteParam(params.site);
          await requireSite(deps, s.tenantId, site);
          const checked = issueInput(form as Map<string, string>);
          if (checked.errors.length > 0) {
            const keys = await deps.keys.list(s.tenantId, site, deps.now());
            return htmlResponse(keysPage(s, site, keys, { errors: checked.errors, form: checked.echo }), 422);
          }
          const issued = await deps.keys.issue(s.tenantId, site, checked.input, deps.now());
          await audited(deps, s, {
            route: "/admin/tenants/:tenant/sites/:site/keys",
            params: { tenant: s.tenantId, site },
            response: issued,
          });
          return htmlResponse(keysPage(s, site, await deps.keys.list(s.tenantId, site, deps.now()), { issued }), 201);
        }),
      NO_PARSE,
    )
    .get(
      "/sites/:site/keys/:keyId/revoke",
      ({ request, params, server }) =>
        signedIn(deps, { request, server }, { write: true }, async (s) => {
          const site = siteParam(params.site);
          const keys = await deps.keys.list(s.tenantId, site, deps.now());
          const key = UUID.test(params.keyId) ? keys.find((k) => k.id === params.keyId) : undefined;
          if (!key) throw new AppError("not_found", "Unknown key.");
          return htmlResponse(revokeConfirmPage(s, site, key));
        }),
      NO_PARSE,
    )
    .post(
      "/sites/:site/keys/:keyId/revoke",
      ({ request, params, server }) =>
        signedIn(deps, { request, server }, { write: true }, async (s) => {
          const site = siteParam(params.site);
          if (!UUID.test(params.keyId)) throw new AppError("not_found", "Unknown key.");
          const key = await deps.keys.revoke(s.tenantId, site, params.keyId, deps.now());
          await audited(deps, s, {
            route: "/admin/tenants/:tenant/sites/:site/keys/:keyId/revoke",
            params: { tenant: s.tenantId, site, keyId: key.id },
            response: { key },
          });
          return htmlResponse(
            keysPage(s, site, await deps.keys.list(s.tenantId, site, deps.now()), { revoked: key.name }),
          );
        }),
      NO_PARSE,
    )
    .get(
      "/audit",
      ({ request, server }) =>
        signedIn(deps, { request, server }, { write: false }, async (s) => {
          const query = new URL(request.url).searchParams;
          const siteRaw = query.get("site");
          const site = siteRaw === null || siteRaw === "" ? null : siteParam(siteRaw);
          const beforeRaw = query.get("before");
          const before = beforeRaw !== null && /^\d{1,15}$/.test(beforeRaw) ? Number(beforeRaw) : undefined;
          const entries = await deps.audit.list({
            tenantId: s.tenantId,
            ...(site !== null ? { siteId: site } : {}),
            ...(before !== undefined ? { before } : {}),
            limit: AUDIT_PAGE,
          });
          const next = entries.length === AUDIT_PAGE ? (entries.at(-1)?.id ?? null) : null;
          return htmlResponse(auditPage(s, entries, site, next));
        }),
      NO_PARSE,
    )
    .get("/sites/:site", ({ params }) => redirect(href("sites", params.site, "keys")), NO_PARSE);
}
