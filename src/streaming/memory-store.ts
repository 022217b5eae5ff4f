import type { MemoryUserStore } from "../users/memory-store";
import { isUserId } from "../users/store";
import type { PendingWrite, StoredRow, StreamingStore, WriteOutcome } from "./store";

type Values = Record<string, unknown>;

/** What Postgres's `jsonb_strip_nulls` leaves of a flat object. */
function stripNulls(values: Values): Values {
  const out: Values = {};
  for (const [k, v] of Object.entries(values)) if (v !== null) out[k] = v;
  return out;
}

/**
 * Streaming values in memory, over the user twin's users; held to the drizzle store by one
 * contract suite. Whether a site is served (live, not disabled) is asked of `siteServed`, and
 * `changed` receives what the drizzle store writes to the change log (topic `streaming`).
 */
export class MemoryStreamingStore implements StreamingStore {
  private readonly rows = new Map<string, StoredRow & { tenantId: string; siteId: string }>();

  constructor(
    private readonly users: MemoryUserStore,
    private readonly siteServed: (tenantId: string, siteId: string) => boolean,
    private readonly changed: (tenantId: string, subject: string) => void = () => {},
  ) {}

  private static key(tenantId: string, siteId: string, userId: string, pipeline: string): string {
    return JSON.stringify([tenantId, siteId, userId, pipeline]);
  }

  async writeBatch(
    tenantId: string,
    siteId: string,
    pipeline: string,
    writes: readonly PendingWrite[],
  ): Promise<Map<string, WriteOutcome>> {
    for (const w of writes)
      if (!isUserId(w.userId)) throw new Error(`invalid input syntax for type uuid: "${w.userId}"`);
    const served = this.siteServed(tenantId, siteId);
    const out = new Map<string, WriteOutcome>();
    const written: string[] = [];
    for (const w of [...writes].sort((a, b) => (a.userId < b.userId ? -1 : a.userId > b.userId ? 1 : 0))) {
      const userId = w.userId.toLowerCase();
      const user = this.users.rows.get(userId);
      if (!served) out.set(userId, "unknown_site");
      else if (user?.tenantId !== tenantId) out.set(userId, "unknown_user");
      else if (user.erasedAt !== null) out.set(userId, "erased");
      else {
        const key = MemoryStreamingStore.key(tenantId, siteId, userId, pipeline);
        const held = this.rows.get(key);
        if (held !== undefined && w.windowEnd < held.windowEnd) {
          out.set(userId, "stale");
          continue;
        }
        const values = held === undefined ? structuredClone(w.values) : stripNulls({ ...held.values, ...w.values });
        this.rows.set(key, { tenantId, siteId, userId, pipeline, windowEnd: w.windowEnd, values });
        out.set(userId, null);
        written.push(userId);
      }
    }
    if (written.length > 0) this.changed(tenantId, `${siteId}\n${written.join(",")}`);
    return out;
  }

  async rowsOf(tenantId: string, siteId: string, userIds: readonly string[]): Promise<StoredRow[]> {
    const wanted = new Set(userIds.filter(isUserId).map((id) => id.toLowerCase()));
    const out: StoredRow[] = [];
    for (const row of this.rows.values())
      if (row.tenantId === tenantId && row.siteId === siteId && wanted.has(row.userId))
        out.push({
          userId: row.userId,
          pipeline: row.pipeline,
          windowEnd: row.windowEnd,
          values: structuredClone(row.values),
        });
    return out;
  }

  async eraseUser(tenantId: string, userId: string): Promise<void> {
    for (const [key, row] of this.rows) if (row.tenantId === tenantId && row.userId === userId) this.rows.delete(key);
  }

  /** Drops a user's values in every tenant: what the identity twin's erase does to this table. */
  dropUser(userId: string): void {
    for (const [key, row] of this.rows) if (row.userId === userId) this.rows.delete(key);
  }
}
