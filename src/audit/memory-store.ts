import type { AuditEntry, AuditQuery, AuditRecord } from "./model";
import type { AuditStore } from "./store";
import { wordsOfEntry } from "./words";

/** The audit log in memory, for tests that need no Postgres; held to the drizzle store by one contract suite. */
export class MemoryAuditStore implements AuditStore {
  private readonly entries: AuditEntry[] = [];

  async record(entry: AuditRecord): Promise<void> {
    this.entries.push({
      id: this.entries.length + 1,
      at: entry.at.toISOString(),
      actor: entry.actor,
      tenant: entry.tenantId,
      site: entry.siteId,
      action: entry.action,
      target: entry.target,
      summary: entry.summary,
      words: entry.words || wordsOfEntry(entry),
    });
  }

  async list(query: AuditQuery): Promise<AuditEntry[]> {
    const out: AuditEntry[] = [];
    for (let i = this.entries.length - 1; i >= 0 && out.length < query.limit; i--) {
      const e = this.entries[i] as AuditEntry;
      if (query.tenantId !== undefined && e.tenant !== query.tenantId) continue;
      if (query.siteId !== undefined && e.site !== query.siteId) continue;
      if (query.before !== undefined && e.id >= query.before) continue;
      out.push({ ...e });
    }
    return out;
  }
}
