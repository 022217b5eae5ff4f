import { Elysia } from "elysia";
import type { Deps } from "../deps";
import { AuditListQuery } from "./model";

/** GET /admin/audit: the audit log, newest first (mounted inside the operator plane). */
export function adminAuditRoutes(deps: Pick<Deps, "audit">) {
  return new Elysia().get(
    "/audit",
    async ({ query }) => {
      const limit = query.limit ?? 100;
      const entries = await deps.audit.list({
        tenantId: query.tenant,
        siteId: query.site,
        before: query.before,
        limit,
      });
      const last = entries[entries.length - 1];
      return { entries, next: entries.length === limit && last ? last.id : null };
    },
    { query: AuditListQuery },
  );
}
