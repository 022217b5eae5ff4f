import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../../db/client";
import { AbsenceFilter } from "./absence-filter";
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

/**
 * Rows per statement. Embedded Postgres runs each statement on this thread (WASM), so smaller
 * statements keep the event loop free between them; a server runs them elsewhere.
 */
const SERVER_CHUNK = 5000;
const EMBEDDED_CHUNK = 500;

interface KeyColumns {
  tenant_id: string;
  site_id: string;
  meter: string;
  subject: string;
  period: string;
}

const keyOfRow = (r: KeyColumns) => meterKey(r.tenant_id, r.site_id, r.meter, r.subject, r.period);

/** Counter keys split into the five key columns, passed to Postgres as five text arrays. */
class KeyArrays {
  readonly tenants: string[] = [];
  readonly sites: string[] = [];
  readonly meters: string[] = [];
  readonly subjects: string[] = [];
  readonly periods: string[] = [];

  push(key: string): void {
    const [t, s, m, subj, per] = key.split(SEP) as [string, string, string, string, string];
    this.tenants.push(t);
    this.sites.push(s);
    this.meters.push(m);
    this.subjects.push(subj);
    this.periods.push(per);
  }

  params() {
    const p = (values: string[]) => sql`${sql.param(values)}::text[]`;
    return sql.join([p(this.tenants), p(this.sites), p(this.meters), p(this.subjects), p(this.periods)], sql`, `);
  }
}

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

  private readonly maxEntries: number;
  private readonly chunk: number;
  /** Keys known to exist in Postgres; only when this process is the store's only writer. */
  private readonly present: AbsenceFilter | null;

  constructor(
    private readonly db: Db,
    options: { maxEntries?: number; exclusiveWriter?: boolean } = {},
  ) {
    this.maxEntries = options.maxEntries ?? 2_000_000;
    this.chunk = options.exclusiveWriter ? EMBEDDED_CHUNK : SERVER_CHUNK;
    this.present = options.exclusiveWriter ? new AbsenceFilter(Math.max(this.maxEntries, 1_000_000)) : null;
    this.loader = new BatchLoader(
      (keys) => this.loadMany(keys),
      () => ({ count: 0, seen: null }),
    );
  }

  /**
   * With an exclusive writer (the embedded store), learns every stored key once, so a key never
   * stored before needs no read on its first miss. Without one, does nothing.
   */
  async prime(): Promise<void> {
    if (!this.present) return;
    const rows = rowsOf<KeyColumns>(
      await this.db.execute(sql`select tenant_id, site_id, meter, subject, period from meter_counts`),
    );
    for (const r of rows) this.present.add(keyOfRow(r));
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
    const loaded =
      this.present && !this.present.mightContain(key) ? { count: 0, seen: null } : await this.loader.load(key);
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
        const chunk = this.chunk;
        for (let i = 0; i < entries.length; i += chunk) {
          // Columns as arrays through unnest: a constant-size statement however many rows.
          const counts = new KeyArrays();
          const deltas: number[] = [];
          const seen = new KeyArrays();
          const items: string[] = [];
          for (const [key, p] of entries.slice(i, i + chunk)) {
            counts.push(key);
            deltas.push(p.delta);
            for (const item of p.items ?? []) {
              seen.push(key);
              items.push(item);
            }
          }
          await tx.execute(sql`insert into meter_counts (tenant_id, site_id, meter, subject, period, count)
            select * from unnest(${counts.params()}, ${sql.param(deltas)}::int[])
            on conflict (tenant_id, site_id, meter, subject, period)
            do update set count = meter_counts.count + excluded.count`);
          if (items.length > 0) {
            await tx.execute(sql`insert into meter_seen (tenant_id, site_id, meter, subject, period, item)
              select * from unnest(${seen.params()}, ${sql.param(items)}::text[]) on conflict do nothing`);
          }
        }
      });
      if (this.present) for (const key of batch.keys()) this.present.add(key);
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
    const chunk = this.chunk;
    for (let i = 0; i < keys.length; i += chunk) {
      const wanted = new KeyArrays();
      for (const key of keys.slice(i, i + chunk)) wanted.push(key);
      const list = sql`select * from unnest(${wanted.params()}) as k(tenant_id, site_id, meter, subject, period)`;
      // Both reads at once: on a server they run on two pooled connections.
      const [countRows, itemRows] = await Promise.all([
        this.db.execute(sql`select c.tenant_id, c.site_id, c.meter, c.subject, c.period, c.count
          from meter_counts c join (${list}) k using (tenant_id, site_id, meter, subject, period)`),
        this.db.execute(sql`select s.tenant_id, s.site_id, s.meter, s.subject, s.period, s.item
          from meter_seen s join (${list}) k using (tenant_id, site_id, meter, subject, period)`),
      ]);
      const counts = rowsOf<KeyColumns & { count: number }>(countRows);
      const items = rowsOf<KeyColumns & { item: string }>(itemRows);
      for (const r of counts) found.set(keyOfRow(r), { count: Number(r.count), seen: null });
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
