import { fallbackLogger } from "../infra/fallback-logger";
import { Buckets, STORE_BUCKETS } from "../infra/histogram";
import type { Logger } from "../logger";
import { AbsenceFilter } from "./absence-filter";
import { BatchLoader } from "./batch-loader";
import type { Flushable } from "./flusher";
import { flushTables } from "./meter-flush";
import type { AdmissionTally, MeterName, MeterStore, SeenAdmission } from "./meter-store";
import { MeterTable } from "./meter-table";
import { type Loaded, SEP } from "./meter-values";
import { SiteSubjects } from "./site-subjects";

export type { MeterStore, SeenAdmission } from "./meter-store";
export { MeterTable } from "./meter-table";
export { countOf, holds, type MeterValue, meterKey, type SeenValue } from "./meter-values";

/** A store that batches no admissions into statements has sent none. */
const NO_ADMISSIONS: AdmissionTally = Object.freeze({ calls: 0, statements: 0 });

/** Distinct article ids kept as one shared string each (past this, ids are stored as given). */
const MAX_INTERNED = 200_000;

/**
 * How long a retired table (a past period) is kept after the last flush that found it ticked:
 * longer than any request holds a table across its reads (they end at the read deadline).
 */
const RETIRE_AFTER_MS = 60_000;

/**
 * Meter values held in memory in per-(tenant, site, meter, period) tables, loaded from the
 * store on a miss (batched, single-flight) and flushed as deltas (`count = count + delta`, seen
 * members inserted once; `meter-flush.ts`). Clean entries are evicted oldest-first past
 * `maxEntries`, in a task after the one that went past it; an evicted entry is read back.
 *
 * The jobs are in their own files: the memory layout of one table (`meter-table.ts`) and of a
 * site's subjects (`site-subjects.ts`), the flush protocol (`meter-flush.ts`) and the SQL
 * (`drizzle-meter-store.ts`, behind `meter-store.ts`'s interface, with an in-memory store for
 * tests). This class owns the tables: it finds or creates them, interns article ids, evicts,
 * and drops a past period's table once a later period of the same meter has begun and it holds
 * nothing unflushed (`RETIRE_AFTER_MS`).
 */
export class MeterCounters implements Flushable {
  readonly name = "meters";
  readonly store: MeterStore;
  /**
   * Meters admit through the store (several processes on one Postgres): a seen meter's new
   * members, and a count meter's calls below the allowance.
   */
  readonly exact: boolean;
  private readonly tables = new Map<string, MeterTable>();
  /** Per (tenant, site): the subjects its tables share. */
  private readonly sites = new Map<string, SiteSubjects>();
  /** Per (tenant, site, meter): the table of its latest period. */
  private readonly latest = new Map<string, MeterTable>();
  /** Tables of a period that is over, with when it was found over (`now()`). */
  private readonly retired = new Map<MeterTable, number>();
  /** @internal Tables with unflushed ticks (the flush protocol's). */
  readonly dirtyTables = new Set<MeterTable>();
  /** Ticks waiting for a read (`MeterTable.tickWhenRead`); a flush waits for those it finds. */
  private readonly waitingTicks = new Set<Promise<void>>();
  /** Interned article ids: code -> id (code 0 is none) and id -> code, at most `maxArticleIds`. */
  private readonly articleIds: string[] = [""];
  private readonly articleCodes = new Map<string, number>();
  private readonly maxArticleIds: number;
  private entries = 0;
  /** Values dropped from memory (past `maxEntries`, or with a past period's table) since start, for /metrics. */
  evictedTotal = 0;

  /** Count meters' admissions through the store so far: calls, and the statements they shared (/metrics). */
  get countAdmissions(): AdmissionTally {
    return this.store.admissionTallies?.().count ?? NO_ADMISSIONS;
  }
  /** Seen meters' admissions through the store so far: new members asked, and the statements they shared (/metrics). */
  get seenAdmissions(): AdmissionTally {
    return this.store.admissionTallies?.().seen ?? NO_ADMISSIONS;
  }
  /** Past periods' tables dropped since start. */
  retiredTotal = 0;
  /** How long each batched read of meter values took (seconds), for /metrics. */
  readonly readLatency = new Buckets(STORE_BUCKETS);
  /** An eviction is scheduled (see `installed`). */
  private evictionDue = false;
  private readonly loader: BatchLoader<Loaded>;

  private readonly maxEntries: number;
  /** @internal Keys known to exist in the store; only when this process is its only writer. */
  readonly present: AbsenceFilter | null;
  private readonly now: () => number;
  private readonly retireAfterMs: number;

  /**
   * `store`: the product's is `DrizzleMeterStore` (src/counters/deps.ts builds it), taken built so
   * that the counters load no drizzle.
   */
  constructor(
    store: MeterStore,
    options: {
      maxEntries?: number;
      exclusiveWriter?: boolean;
      maxArticleIds?: number;
      /**
       * Other processes may count the same readers (a Postgres server): a seen meter's new member
       * (`admitSeen`) and a count meter's call below its allowance (`admitCount`) are admitted
       * by the store before decide answers with them.
       */
      exact?: boolean;
      /** Clock for retiring past periods (ms); tests pass their own. */
      now?: () => number;
      retireAfterMs?: number;
    } = {},
  ) {
    this.store = store;
    this.exact = options.exact ?? false;
    this.maxEntries = options.maxEntries ?? 4_000_000;
    this.maxArticleIds = options.maxArticleIds ?? MAX_INTERNED;
    this.present = options.exclusiveWriter ? new AbsenceFilter(Math.max(this.maxEntries, 1_000_000)) : null;
    this.now = options.now ?? (() => performance.now());
    this.retireAfterMs = options.retireAfterMs ?? RETIRE_AFTER_MS;
    this.loader = new BatchLoader(
      (keys) => this.timedLoad(keys),
      () => ({ count: 0, items: null }),
    );
  }

  /**
   * With an exclusive writer (the embedded store), learns every stored key once, so a key never
   * stored before needs no read on its first miss. Without one, does nothing.
   */
  async prime(): Promise<void> {
    if (!this.present) return;
    for (const key of await this.store.storedKeys()) this.present.add(key);
  }

  /**
   * The table of one meter in one period (created empty on first use). A new table retires the
   * one its meter used before (a period that is over, or a document that changed the meter's
   * period). A retired table still ticked stays (each flush renews it); one unticked for
   * `retireAfterMs` is dropped and marked `detached`, and a caller still holding it asks again.
   */
  table(tenant: string, site: string, meter: string, period: string, seenKind: boolean): MeterTable {
    const siteId = tenant + SEP + site;
    const meterId = siteId + SEP + meter;
    const id = meterId + SEP + period;
    let table = this.tables.get(id);
    if (!table) {
      let subjects = this.sites.get(siteId);
      if (subjects === undefined) {
        subjects = new SiteSubjects();
        this.sites.set(siteId, subjects);
      }
      table = new MeterTable(this, subjects, tenant, site, meter, period, seenKind);
      subjects.tables.push(table);
      this.tables.set(id, table);
      const latest = this.latest.get(meterId);
      if (latest !== undefined) this.retired.set(latest, this.now());
      this.latest.set(meterId, table);
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
    for (const t of this.dirtyTables) n += t.dirtyCount;
    return n;
  }

  /** @internal A stored row for a key, or an empty one; skips the read for keys never stored. */
  loadEntry(key: string): Promise<Loaded> | Loaded {
    if (this.present && !this.present.mightContain(key)) return { count: 0, items: null };
    return this.loader.load(key);
  }

  /** @internal */
  admitSeen(name: MeterName, subject: string, item: string, allowance: number): Promise<SeenAdmission> {
    return this.store.admitSeen(name, subject, item, allowance);
  }

  /** @internal */
  admitCount(name: MeterName, subject: string, allowance: number): Promise<SeenAdmission> {
    return this.store.admitCount(name, subject, allowance);
  }

  /** @internal */
  async readNow(key: string): Promise<Loaded> {
    return (await this.store.load([key])).get(key) ?? { count: 0, items: null };
  }

  /** @internal A table took a new subject. */
  installed(): void {
    this.entries += 1;
    if (this.entries > this.maxEntries && !this.evictionDue) {
      // In a task of its own, after this one: a request that read values in this task evaluates
      // and ticks them (in its microtasks) before any can be dropped. Meanwhile the tables hold
      // more than the cap by what this task installed.
      this.evictionDue = true;
      setImmediate(() => {
        this.evictionDue = false;
        if (this.entries > this.maxEntries) this.evict();
      });
    }
  }

  /** @internal A table dropped a subject. */
  evicted(): void {
    this.entries -= 1;
    this.evictedTotal += 1;
  }

  /** @internal A tick that lands once its value is read. */
  deferred(applied: Promise<void>): void {
    const settled = applied.catch(() => {}).finally(() => this.waitingTicks.delete(settled));
    this.waitingTicks.add(settled);
  }

  /** @internal */
  markDirty(table: MeterTable): void {
    this.dirtyTables.add(table);
  }

  /** @internal The code of an article id, interned on first sight; 0 past `maxArticleIds` ids. */
  articleCode(item: string): number {
    const known = this.articleCodes.get(item);
    if (known !== undefined) return known;
    if (this.articleCodes.size >= this.maxArticleIds) return 0;
    const code = this.articleIds.length;
    this.articleIds.push(item);
    this.articleCodes.set(item, code);
    return code;
  }

  /** @internal The article id of a code from `articleCode`. */
  articleAt(code: number): string {
    return this.articleIds[code] as string;
  }

  /** @internal One shared string per distinct article id (bounded). */
  intern(item: string): string {
    const code = this.articleCode(item);
    return code > 0 ? (this.articleIds[code] as string) : item;
  }

  /** @internal A flush waits for the ticks waiting for their reads. */
  waitForTicks(): Promise<void> | null {
    return this.waitingTicks.size > 0 ? Promise.all([...this.waitingTicks]).then(() => {}) : null;
  }

  /**
   * Writes what was dirty when it began (`flushTables`), then drops the past periods' tables
   * that have been over long enough and hold nothing unflushed.
   */
  async flush(logger: Logger = fallbackLogger): Promise<void> {
    if (this.retired.size === 0) return flushTables(this, logger);
    // A retired table ticked since the last flush is still in use: its minute starts again.
    const now = this.now();
    for (const table of this.retired.keys()) if (this.dirtyTables.has(table)) this.retired.set(table, now);
    await flushTables(this, logger);
    this.dropRetired();
  }

  /** Past periods' tables still held (for tests and /metrics). */
  get retiredCount(): number {
    return this.retired.size;
  }

  private dropRetired(): void {
    const now = this.now();
    for (const [table, since] of this.retired) {
      if (now - since < this.retireAfterMs || this.dirtyTables.has(table)) continue;
      table.evictClean(() => false);
      if (table.size > 0) continue; // in flight meanwhile: the next flush tries again
      this.retired.delete(table);
      table.detached = true;
      const { tenant, site, meter, period } = table;
      const siteId = tenant + SEP + site;
      this.tables.delete(siteId + SEP + meter + SEP + period);
      const subjects = this.sites.get(siteId);
      if (subjects !== undefined) {
        const at = subjects.tables.indexOf(table);
        if (at >= 0) subjects.tables.splice(at, 1);
      }
      this.retiredTotal += 1;
    }
  }

  private async timedLoad(keys: string[]): Promise<Map<string, Loaded>> {
    const startedAt = performance.now();
    try {
      return await this.store.load(keys);
    } finally {
      this.readLatency.observe((performance.now() - startedAt) / 1000);
    }
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
