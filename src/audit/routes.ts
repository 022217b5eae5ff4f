import { Elysia } from "elysia";
import { AuditListQuery } from "./model";
import type { AuditStore } from "./store";

/** The audit log the operator reads. */
export interface AuditRouteDeps {
  readonly audit: AuditStore;
}

/** GET /admin/audit: the audit log, newest first (mounted inside the operator plane). */
export function adminAuditRoutes(deps: AuditRouteDeps) {
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
