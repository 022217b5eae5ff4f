import type { Logger } from "../logger";
import { member, text } from "./answer";
import type { AuditRecord } from "./model";
import { auditWords } from "./words";

/**
 * What the admin hook knows of a request that succeeded. Not its body: a hook that reads the body
 * makes Elysia parse every route's body, the keyed decide route's too (which reads its own).
 */
export interface HandledRequest {
  readonly method: string;
  /** The route's pattern under /admin, e.g. `/admin/tenants/:tenant/sites/:site/deploy`. */
  readonly route: string;
  readonly params: Readonly<Record<string, string | undefined>>;
  readonly response: unknown;
}

/**
 * Summaries per action, from the answer's parts that are never secret: ids, names, versions,
 * stages, grant names, expiries. Key values, preview tokens and service settings are left out;
 * an action without a summary here has none (its action and target say what it was).
 */
const SUMMARIES: Record<string, (r: HandledRequest) => string> = {
  "POST /tenants": (r) =>
    `tenant ${text(member(r.response, "tenant", "id"))}${member(r.response, "tenant", "default") ? " (default)" : ""}`,
  "POST /tenants/:tenant/sites": (r) => `site ${text(member(r.response, "site", "id"))}`,
  "POST /tenants/:tenant/sites/:site/deploy": (r) =>
    `${text(member(r.response, "deployment", "stage"))} version ${text(member(r.response, "deployment", "version"))}`,
  "POST /tenants/:tenant/sites/:site/documents/:version/publish": (r) => {
    const previous = text(member(r.response, "deployment", "previousVersion"));
    return `live version ${text(member(r.response, "deployment", "version"))}${previous ? ` (was ${previous})` : ""}`;
  },
  "POST /tenants/:tenant/sites/:site/keys": (r) => {
    const permissions = member(r.response, "permissions");
    const list = Array.isArray(permissions) && permissions.length > 0 ? ` [${permissions.join(", ")}]` : "";
    return `key ${text(member(r.response, "id"))} "${text(member(r.response, "name"))}"${list}`;
  },
  "POST /tenants/:tenant/sites/:site/content-keys/:keyId/rotate": (r) =>
    `content key ${text(member(r.response, "contentKey", "id"))} rotated to ${text(member(r.response, "contentKey", "fingerprint"))}`,
  "POST /tenants/:tenant/users": (r) => `user ${text(member(r.response, "user", "id"))}`,
  "POST /tenants/:tenant/users/:user/grants": (r) => {
    const expires = text(member(r.response, "grant", "expiresAt"));
    return `grant ${text(member(r.response, "grant", "grant"))}${expires ? ` until ${expires}` : ""}`;
  },
  "POST /tenants/:tenant/sites/:site/preview-tokens": (r) =>
    `preview token until ${text(member(r.response, "expiresAt"))}`,
  "POST /tenants/:tenant/console-users": (r) =>
    `console user ${text(member(r.response, "user", "email"))} as ${text(member(r.response, "user", "role"))}`,
  "DELETE /tenants/:tenant/console-users/:email": (r) => `console user ${text(member(r.response, "removed"))} removed`,
  "POST /tenants/:tenant/organizations": (r) => `organization ${text(member(r.response, "organization", "slug"))}`,
};

/** Where an audit record goes, and where a failure to record it is logged. */
export interface AuditRecordDeps {
  readonly audit: { record(entry: AuditRecord): Promise<void> };
  readonly logger: Logger;
}

/** Routes that take a POST but change nothing (a body to read): not recorded. */
export const READS_BY_POST: ReadonlySet<string> = new Set([
  "POST /tenants/:tenant/sites/:site/diff",
  "POST /tenants/:tenant/sites/:site/explain",
]);

/** The audit record of a mutating /admin request that succeeded. */
export function auditRecordOf(r: HandledRequest, actor: string, at: Date): AuditRecord {
  const pattern = r.route.replace(/^\/admin/, "");
  const action = `${r.method} ${pattern}`;
  // In the route's order (tenant, then site, then the rest).
  const target = [...pattern.matchAll(/:([A-Za-z]+)/g)]
    .map((m) => m[1] as string)
    .filter((name) => typeof r.params[name] === "string")
    .map((name) => `${name}=${r.params[name]}`)
    .join(" ");
  const summarise = SUMMARIES[action];
  const tenant = r.params.tenant ?? (pattern === "/tenants" ? text(member(r.response, "tenant", "id")) || null : null);
  return {
    at,
    actor,
    tenantId: tenant,
    siteId: r.params.site ?? null,
    action,
    target,
    summary: (summarise ? summarise(r) : "").slice(0, 500),
    words: auditWords(action, r.params, r.response, actor),
  };
}

/**
 * Writes an audit entry. The action itself is already done (and answered): a failed write is
 * logged (action and target, never values), not thrown.
 */
export async function recordAudit(deps: AuditRecordDeps, record: AuditRecord): Promise<void> {
  try {
    await deps.audit.record(record);
  } catch (error) {
    deps.logger.error("audit entry not recorded", {
      action: record.action,
      target: record.target,
      code: (error as { code?: string }).code ?? "unknown",
    });
  }
}
