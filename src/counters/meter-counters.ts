import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../../db/client";
import { BatchLoader } from "./batch-loader";
import type { Flushable } from "./flusher";

/** In-memory value of one meter for one subject and period. */
export interface MeterState {
  count: number;
  /** Article ids already counted (seen meters only). */
  seen: string[] | null;
}

interface Pending {
  delta: number;
  items: string[] | null;
}

const SEP = "\u0001";

/** The counter key of (tenant, site, meter, subject, period). */
export function meterKey(tenant: string, site: string, meter: string, subject: string, period: string): string {
  return tenant + SEP + site + SEP + meter + SEP + subject + SEP + period;
}

const CHUNK = 2000;

interface KeyColumns {
  tenant_id: string;
  site_id: string;
  meter: string;
  subject: string;
  period: string;
}

const keyOfRow = (r: KeyColumns) => meterKey(r.tenant_id, r.site_id, r.meter, r.subject, r.period);

/**
 * Meter values held in memory, loaded from Postgres on a miss (batched, single-flight) and
 * flushed as deltas (`count = count + delta`, seen members inserted once). Clean entries are
 * evicted oldest-first past `maxEntries`; an evicted entry is read back from Postgres.
 */
export class MeterCounters implements Flushable {
  readonly name = "meters";
  private readonly values = new Map<string, MeterState>();
  private dirty = new Map<string, Pending>();
  private readonly loader: BatchLoader<MeterState>;

  constructor(
    private readonly db: Db,
    private readonly maxEntries = 2_000_000,
  ) {
    this.loader = new BatchLoader(
      (keys) => this.loadMany(keys),
      () => ({ count: 0, seen: null }),
    );
  }

  get size(): number {
    return this.values.size;
  }

  /** The state if held in memory (no I/O). */
  peek(key: string): MeterState | undefined {
    return this.values.get(key);
  }

  /** The state, loading it from Postgres on a miss. */
  async read(key: string, seenMeter: boolean): Promise<MeterState> {
    const held = this.values.get(key);
    if (held) return held;
    const loaded = await this.loader.load(key);
    // Another request may have installed it while we waited.
    const again = this.values.get(key);
    if (again) return again;
    const state: MeterState = { count: loaded.count, seen: seenMeter ? (loaded.seen ?? []) : null };
    this.values.set(key, state);
    if (this.values.size > this.maxEntries) this.evict();
    return state;
  }

  /** Counts one call on a count meter. The state must have been read first. */
  tickCount(key: string, state: MeterState): void {
    state.count += 1;
    const pending = this.dirty.get(key);
    if (pending) pending.delta += 1;
    else this.dirty.set(key, { delta: 1, items: null });
  }

  /** Counts an article once on a seen meter; returns false when it was already counted. */
  tickSeen(key: string, state: MeterState, item: string): boolean {
    if (state.seen === null) state.seen = [];
    const seen = state.seen;
    if (seen.includes(item)) return false;
    seen.push(item);
    state.count += 1;
    const pending = this.dirty.get(key);
    if (pending) {
      pending.delta += 1;
      if (pending.items === null) pending.items = [item];
      else pending.items.push(item);
    } else {
      this.dirty.set(key, { delta: 1, items: [item] });
    }
    return true;
  }

  get pendingCount(): number {
    return this.dirty.size;
  }

  async flush(): Promise<void> {
    if (this.dirty.size === 0) return;
    const batch = this.dirty;
    this.dirty = new Map();
    try {
      const entries = [...batch];
      await this.db.transaction(async (tx) => {
        for (let i = 0; i < entries.length; i += CHUNK) {
          const chunk = entries.slice(i, i + CHUNK);
          const counts = chunk.map(([key, p]) => {
            const [t, s, m, subj, per] = key.split(SEP);
            return sql`(${t}, ${s}, ${m}, ${subj}, ${per}, ${p.delta}::int)`;
          });
          await tx.execute(sql`insert into meter_counts (tenant_id, site_id, meter, subject, period, count)
            values ${sql.join(counts, sql`, `)}
            on conflict (tenant_id, site_id, meter, subject, period)
            do update set count = meter_counts.count + excluded.count`);
          const seen = chunk.flatMap(([key, p]) => {
            if (!p.items) return [];
            const [t, s, m, subj, per] = key.split(SEP);
            return p.items.map((item) => sql`(${t}, ${s}, ${m}, ${subj}, ${per}, ${item})`);
          });
          if (seen.length > 0) {
            await tx.execute(sql`insert into meter_seen (tenant_id, site_id, meter, subject, period, item)
              values ${sql.join(seen, sql`, `)} on conflict do nothing`);
          }
        }
      });
    } catch (error) {
      for (const [key, p] of batch) {
        const now = this.dirty.get(key);
        if (!now) this.dirty.set(key, p);
        else {
          now.delta += p.delta;
          if (p.items) now.items = [...p.items, ...(now.items ?? [])];
        }
      }
      throw error;
    }
  }

  private async loadMany(keys: string[]): Promise<Map<string, MeterState>> {
    const found = new Map<string, MeterState>();
    for (let i = 0; i < keys.length; i += CHUNK) {
      const tuples = keys.slice(i, i + CHUNK).map((key) => {
        const [t, s, m, subj, per] = key.split(SEP);
        return sql`(${t}, ${s}, ${m}, ${subj}, ${per})`;
      });
      const list = sql.join(tuples, sql`, `);
      const counts = rowsOf<KeyColumns & { count: number }>(
        await this.db.execute(sql`select tenant_id, site_id, meter, subject, period, count from meter_counts
          where (tenant_id, site_id, meter, subject, period) in (${list})`),
      );
      for (const r of counts) found.set(keyOfRow(r), { count: Number(r.count), seen: null });
      const items = rowsOf<KeyColumns & { item: string }>(
        await this.db.execute(sql`select tenant_id, site_id, meter, subject, period, item from meter_seen
          where (tenant_id, site_id, meter, subject, period) in (${list})`),
      );
      for (const r of items) {
        const key = keyOfRow(r);
        const state = found.get(key) ?? { count: 0, seen: [] };
        if (state.seen === null) state.seen = [r.item];
        else state.seen.push(r.item);
        found.set(key, state);
      }
    }
    return found;
  }

  /** Drops the oldest clean entries until 90% of the cap; dirty ones stay until flushed. */
  private evict(): void {
    const target = Math.floor(this.maxEntries * 0.9);
    for (const key of this.values.keys()) {
      if (this.values.size <= target) break;
      if (!this.dirty.has(key)) this.values.delete(key);
    }
  }
}
