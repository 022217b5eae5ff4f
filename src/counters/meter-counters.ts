import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../../db/client";
import { AbsenceFilter } from "./absence-filter";
import { BatchLoader } from "./batch-loader";
import type { Flushable } from "./flusher";
import { SubjectIndex } from "./subject-index";

/**
 * A seen meter's members for one subject: one article id (the common case, no array), or an
 * array of them. The count of a seen meter is its number of members.
 */
export type SeenValue = string | readonly string[];

/** A held value: a count meter's count, or a seen meter's members. */
export type MeterValue = number | SeenValue;

const NO_ITEMS: readonly string[] = Object.freeze([]);

/** What a loaded row gives: the stored count and, for seen meters, the stored members. */
interface Loaded {
  count: number;
  items: string[] | null;
}

const SEP = "\u0001";

/** The counter key of (tenant, site, meter, subject, period): the loader's and the filter's key. */
export function meterKey(tenant: string, site: string, meter: string, subject: string, period: string): string {
  return tenant + SEP + site + SEP + meter + SEP + subject + SEP + period;
}

/** Count of a held value. */
export function countOf(value: MeterValue): number {
  return typeof value === "number" ? value : typeof value === "string" ? 1 : value.length;
}

/** Whether a held seen value holds `item`. */
export function holds(value: MeterValue, item: string): boolean {
  return typeof value === "string" ? value === item : typeof value === "number" ? false : value.includes(item);
}

/**
 * Rows per statement (both stores run statements off the request thread: a server elsewhere,
 * the embedded store in its own thread). Larger statements cost fewer round trips; this size
 * keeps one statement's parameters to a few hundred KB.
 */
const STATEMENT_ROWS = 5000;
/** Distinct article ids kept as one shared string each (past this, ids are stored as given). */
const MAX_INTERNED = 200_000;

interface KeyColumns {
  tenant_id: string;
  site_id: string;
  meter: string;
  subject: string;
  period: string;
}

const keyOfRow = (r: KeyColumns) => meterKey(r.tenant_id, r.site_id, r.meter, r.subject, r.period);

/**
 * The values of one (tenant, site, meter, period), keyed by subject. Subjects sit in a compact
 * index (the same string object across a subject's meters); counts live in an Int32Array and
 * seen members are shared article-id strings, so a held subject costs a few dozen bytes a meter.
 */
export class MeterTable {
  private index = new SubjectIndex();
  /** Count meters: slot -> count. */
  private counts = new Int32Array(0);
  /** Seen meters: slot -> members. */
  private members: (SeenValue | undefined)[] = [];
  /** Unflushed: a count meter's delta, or a seen meter's new members. */
  dirty = new Map<string, number | string[]>();
  /** Where the next eviction sweep starts. */
  private cursor = 0;

  constructor(
    private readonly owner: MeterCounters,
    readonly tenant: string,
    readonly site: string,
    readonly meter: string,
    readonly period: string,
    readonly seenKind: boolean,
  ) {}

  /** Subjects held. */
  get size(): number {
    return this.index.size;
  }

  /** The held value, or undefined when it must be read first (no I/O). */
  peek(subject: string): MeterValue | undefined {
    const slot = this.index.get(subject);
    if (slot < 0) return undefined;
    return this.seenKind ? this.members[slot] : this.counts[slot];
  }

  /** Reads a subject's value into memory (batched with every other miss of this tick). */
  async load(subject: string): Promise<void> {
    if (this.index.get(subject) >= 0) return;
    const pending = this.owner.loadEntry(meterKey(this.tenant, this.site, this.meter, subject, this.period));
    const loaded = pending instanceof Promise ? await pending : pending;
    // Another request may have installed it while we waited.
    if (this.index.get(subject) >= 0) return;
    // Counted (and any eviction done) before the subject is placed, so it is never the one evicted.
    this.owner.installed();
    this.store(this.index.add(subject), this.fromLoaded(loaded));
  }

  /** Counts one call on a count meter. The subject must have been loaded first. */
  tickCount(subject: string): void {
    const slot = this.slotOf(subject);
    this.counts[slot] = (this.counts[slot] as number) + 1;
    const pending = this.dirty.get(subject);
    this.dirty.set(subject, (typeof pending === "number" ? pending : 0) + 1);
    this.owner.markDirty(this);
  }

  /** Counts an article once on a seen meter; returns false when it was already counted. */
  tickSeen(subject: string, articleId: string): boolean {
    const slot = this.slotOf(subject);
    const value = this.members[slot] ?? NO_ITEMS;
    if (holds(value, articleId)) return false;
    const item = this.owner.intern(articleId);
    if (typeof value === "string") this.members[slot] = [value, item];
    else if (value.length === 0) this.members[slot] = item;
    else (value as string[]).push(item);
    const pending = this.dirty.get(subject);
    if (Array.isArray(pending)) pending.push(item);
    else this.dirty.set(subject, [item]);
    this.owner.markDirty(this);
    return true;
  }

  /**
   * Drops clean subjects until `enough()` says stop, sweeping slots from where the last sweep
   * ended (a clock): a slot refilled after a sweep is reached again only a full turn later.
   */
  evictClean(enough: () => boolean): void {
    const limit = this.index.slotLimit;
    for (let n = 0; n < limit; n++) {
      if (enough()) break;
      const slot = this.cursor;
      this.cursor = slot + 1 >= limit ? 0 : slot + 1;
      const subject = this.index.keyAt(slot);
      if (subject === undefined || this.dirty.has(subject)) continue;
      this.index.delete(subject);
      if (this.seenKind) this.members[slot] = undefined;
      this.owner.evicted();
    }
    if (this.index.size === 0 && this.dirty.size === 0) {
      // Emptied (e.g. a past period): give back the grown arrays. The table itself stays
      // registered, since decide holds it for its period and must keep reaching the same one.
      this.index = new SubjectIndex();
      this.counts = new Int32Array(0);
      this.members = [];
      this.cursor = 0;
    }
  }

  /** A held subject's slot; a subject never loaded starts empty (callers load first). */
  private slotOf(subject: string): number {
    const slot = this.index.get(subject);
    if (slot >= 0) return slot;
    this.owner.installed();
    const added = this.index.add(subject);
    this.store(added, this.seenKind ? NO_ITEMS : 0);
    return added;
  }

  private store(slot: number, value: MeterValue): void {
    if (this.seenKind) {
      this.members[slot] = value as SeenValue;
      return;
    }
    if (slot >= this.counts.length) {
      const counts = new Int32Array(Math.max(16, this.counts.length * 2, slot + 1));
      counts.set(this.counts);
      this.counts = counts;
    }
    this.counts[slot] = value as number;
  }

  private fromLoaded(loaded: Loaded): MeterValue {
    if (!this.seenKind) return loaded.count;
    const items = loaded.items;
    if (items === null || items.length === 0) return NO_ITEMS;
    if (items.length === 1) return this.owner.intern(items[0] as string);
    return items.map((i) => this.owner.intern(i));
  }
}

/** Counter keys split into the five key columns, passed to Postgres as five text arrays. */
class KeyArrays {
  readonly tenants: string[] = [];
  readonly sites: string[] = [];
  readonly meters: string[] = [];
  readonly subjects: string[] = [];
  readonly periods: string[] = [];

  push(table: MeterTable, subject: string): void {
    this.tenants.push(table.tenant);
    this.sites.push(table.site);
    this.meters.push(table.meter);
    this.subjects.push(subject);
    this.periods.push(table.period);
  }

  pushKey(key: string): void {
    const [t, s, m, subj, per] = key.split(SEP) as [string, string, string, string, string];
    this.tenants.push(t);
    this.sites.push(s);
    this.meters.push(m);
    this.subjects.push(subj);
    this.periods.push(per);
  }

  get length(): number {
    return this.subjects.length;
  }

  params() {
    const p = (values: string[]) => sql`${sql.param(values)}::text[]`;
    return sql.join([p(this.tenants), p(this.sites), p(this.meters), p(this.subjects), p(this.periods)], sql`, `);
  }
}

/** One flush's worth of a table: the dirty map it took, to merge back if the write fails. */
interface Taken {
  table: MeterTable;
  dirty: Map<string, number | string[]>;
}

/**
 * Meter values held in memory in per-(tenant, site, meter, period) tables, loaded from
 * Postgres on a miss (batched, single-flight) and flushed as deltas (`count = count + delta`,
 * seen members inserted once). Clean entries are evicted oldest-first past `maxEntries`; an
 * evicted entry is read back from Postgres.
 */
export class MeterCounters implements Flushable {
  readonly name = "meters";
  private readonly tables = new Map<string, MeterTable>();
  private dirtyTables = new Set<MeterTable>();
  private readonly interned = new Map<string, string>();
  private entries = 0;
  private readonly loader: BatchLoader<Loaded>;

  private readonly maxEntries: number;
  /** Keys known to exist in Postgres; only when this process is the store's only writer. */
  private readonly present: AbsenceFilter | null;

  constructor(
    private readonly db: Db,
    options: { maxEntries?: number; exclusiveWriter?: boolean } = {},
  ) {
    this.maxEntries = options.maxEntries ?? 4_000_000;
    this.present = options.exclusiveWriter ? new AbsenceFilter(Math.max(this.maxEntries, 1_000_000)) : null;
    this.loader = new BatchLoader(
      (keys) => this.loadMany(keys),
      () => ({ count: 0, items: null }),
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

  /** The table of one meter in one period (created empty on first use). */
  table(tenant: string, site: string, meter: string, period: string, seenKind: boolean): MeterTable {
    const id = tenant + SEP + site + SEP + meter + SEP + period;
    let table = this.tables.get(id);
    if (!table) {
      table = new MeterTable(this, tenant, site, meter, period, seenKind);
      this.tables.set(id, table);
    }
    return table;
  }

  /** Values held in memory, over every table. */
  get size(): number {
    return this.entries;
  }

  /** Entries with unflushed deltas, over every table. */
  get pendingCount(): number {
    let n = 0;
    for (const t of this.dirtyTables) n += t.dirty.size;
    return n;
  }

  /** @internal A stored row for a key, or an empty one; skips the read for keys never stored. */
  loadEntry(key: string): Promise<Loaded> | Loaded {
    if (this.present && !this.present.mightContain(key)) return { count: 0, items: null };
    return this.loader.load(key);
  }

  /** @internal A table took a new subject. */
  installed(): void {
    this.entries += 1;
    if (this.entries > this.maxEntries) this.evict();
  }

  /** @internal A table dropped a subject. */
  evicted(): void {
    this.entries -= 1;
  }

  /** @internal */
  markDirty(table: MeterTable): void {
    this.dirtyTables.add(table);
  }

  /** @internal One shared string per distinct article id (bounded). */
  intern(item: string): string {
    const known = this.interned.get(item);
    if (known !== undefined) return known;
    if (this.interned.size < MAX_INTERNED) this.interned.set(item, item);
    return item;
  }

  async flush(): Promise<void> {
    if (this.dirtyTables.size === 0) return;
    const taken: Taken[] = [];
    for (const table of this.dirtyTables) {
      taken.push({ table, dirty: table.dirty });
      table.dirty = new Map();
    }
    this.dirtyTables = new Set();
    try {
      await this.db.transaction(async (tx) => {
        let counts = new KeyArrays();
        let deltas: number[] = [];
        let seen = new KeyArrays();
        let items: string[] = [];
        const write = async () => {
          // Columns as arrays through unnest: a constant-size statement however many rows.
          if (counts.length > 0) {
            await tx.execute(sql`insert into meter_counts (tenant_id, site_id, meter, subject, period, count)
              select * from unnest(${counts.params()}, ${sql.param(deltas)}::int[])
              on conflict (tenant_id, site_id, meter, subject, period)
              do update set count = meter_counts.count + excluded.count`);
          }
          if (items.length > 0) {
            await tx.execute(sql`insert into meter_seen (tenant_id, site_id, meter, subject, period, item)
              select * from unnest(${seen.params()}, ${sql.param(items)}::text[]) on conflict do nothing`);
          }
          counts = new KeyArrays();
          deltas = [];
          seen = new KeyArrays();
          items = [];
        };
        for (const { table, dirty } of taken) {
          for (const [subject, pending] of dirty) {
            counts.push(table, subject);
            if (typeof pending === "number") deltas.push(pending);
            else {
              deltas.push(pending.length);
              for (const item of pending) {
                seen.push(table, subject);
                items.push(item);
              }
            }
            if (counts.length >= STATEMENT_ROWS) await write();
          }
        }
        await write();
      });
      if (this.present) {
        for (const { table, dirty } of taken) {
          for (const subject of dirty.keys())
            this.present.add(meterKey(table.tenant, table.site, table.meter, subject, table.period));
        }
      }
    } catch (error) {
      for (const { table, dirty } of taken) this.mergeBack(table, dirty);
      throw error;
    }
  }

  /** A failed flush's deltas go back in front of whatever was ticked since. */
  private mergeBack(table: MeterTable, failed: Map<string, number | string[]>): void {
    for (const [subject, p] of failed) {
      const now = table.dirty.get(subject);
      if (now === undefined) table.dirty.set(subject, p);
      else if (typeof p === "number") table.dirty.set(subject, p + (now as number));
      else table.dirty.set(subject, [...p, ...(now as string[])]);
    }
    if (table.dirty.size > 0) this.dirtyTables.add(table);
  }

  private async loadMany(keys: string[]): Promise<Map<string, Loaded>> {
    const found = new Map<string, Loaded>();
    const chunk = STATEMENT_ROWS;
    for (let i = 0; i < keys.length; i += chunk) {
      const wanted = new KeyArrays();
      for (const key of keys.slice(i, i + chunk)) wanted.pushKey(key);
      const list = sql`select * from unnest(${wanted.params()}) as k(tenant_id, site_id, meter, subject, period)`;
      // Both reads at once: on a server they run on two pooled connections.
      const [countRows, itemRows] = await Promise.all([
        this.db.execute(sql`select c.tenant_id, c.site_id, c.meter, c.subject, c.period, c.count
          from meter_counts c join (${list}) k using (tenant_id, site_id, meter, subject, period)`),
        this.db.execute(sql`select s.tenant_id, s.site_id, s.meter, s.subject, s.period, s.item
          from meter_seen s join (${list}) k using (tenant_id, site_id, meter, subject, period)`),
      ]);
      for (const r of rowsOf<KeyColumns & { count: number }>(countRows)) {
        found.set(keyOfRow(r), { count: Number(r.count), items: null });
      }
      for (const r of rowsOf<KeyColumns & { item: string }>(itemRows)) {
        const key = keyOfRow(r);
        const loaded = found.get(key) ?? { count: 0, items: null };
        if (loaded.items === null) loaded.items = [r.item];
        else loaded.items.push(r.item);
        found.set(key, loaded);
      }
    }
    return found;
  }

  /** Drops the oldest clean entries until 90% of the cap; dirty ones stay until flushed. */
  private evict(): void {
    const target = Math.floor(this.maxEntries * 0.9);
    const enough = () => this.entries <= target;
    for (const table of this.tables.values()) {
      table.evictClean(enough);
      if (enough()) return;
    }
  }
}
