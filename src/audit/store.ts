import { and, desc, eq, lt, type SQL } from "drizzle-orm";
import type { Db } from "../../db/client";
import { auditLog } from "../../db/schema";
import type { AuditEntry, AuditQuery, AuditRecord } from "./model";
import { wordsOfEntry } from "./words";

/** Where audit entries live: Postgres (both stores) behind this interface. */
export interface AuditStore {
  record(entry: AuditRecord): Promise<void>;
  /** Newest first, at most `limit`, optionally one tenant or site, before an id (paging). */
  list(query: AuditQuery): Promise<AuditEntry[]>;
}

export class DrizzleAuditStore implements AuditStore {
  constructor(private readonly db: Db) {}

  async record(entry: AuditRecord): Promise<void> {
    await this.db.insert(auditLog).values(entry);
  }

  async list(query: AuditQuery): Promise<AuditEntry[]> {
    const where: SQL[] = [];
    if (query.tenantId !== undefined) where.push(eq(auditLog.tenantId, query.tenantId));
    if (query.siteId !== undefined) where.push(eq(auditLog.siteId, query.siteId));
    if (query.before !== undefined) where.push(lt(auditLog.id, query.before));
    const rows = await this.db
      .select()
      .from(auditLog)
      .where(where.length > 0 ? and(...where) : undefined)
      .orderBy(desc(auditLog.id))
      .limit(query.limit);
    return rows.map((r) => ({
      id: Number(r.id),
      at: r.at.toISOString(),
      actor: r.actor,
      tenant: r.tenantId,
      site: r.siteId,
      action: r.action,
      target: r.target,
      summary: r.summary,
      words: r.words || wordsOfEntry(r),
    }));
  }
}
