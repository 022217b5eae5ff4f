import { type SQL, sql } from "drizzle-orm";
import { type Db, rowsOf } from "../../db/client";
import { createLogger, type Logger } from "../logger";
import { Buckets, STORE_BUCKETS } from "../ops/histogram";
import { AbsenceFilter } from "./absence-filter";
import { BatchLoader } from "./batch-loader";
import type { Flushable } from "./flusher";
import {
  hashForLog,
  isDataError,
  ROW_KEPT,
  ROW_REFUSED,
  ROW_WRITTEN,
  sqlStateOf,
  writeSplitting,
} from "./refused-rows";
import { grown, SubjectIndex } from "./subject-index";

/**
 * A seen meter's members for one subject: one article id (the common case, no array), or an
 * array of them. The count of a seen meter is its number of members.
 */
export type SeenValue = string | readonly string[];

/** A held value: a count meter's count, or a seen meter's members. */
export type MeterValue = number | SeenValue;

const NO_ITEMS: readonly string[] = Object.freeze([]);

/** Where a flush called without a logger (tests, tools) reports a refused row. */
const fallbackLogger = createLogger("warn");

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
  if (typeof value === "string") return value === item;
  if (typeof value === "number") return false;
  // A plain loop: a seen meter holds a handful of ids, too few to pay for a native includes call.
  for (let i = 0; i < value.length; i++) if (value[i] === item) return true;
  return false;
}

/**
 * Rows per statement, and subjects per flush transaction (both stores run statements off the
 * request thread: a server elsewhere, the embedded store in its own thread). Larger statements
 * cost fewer round trips; this size keeps one statement's parameters to a few hundred KB.
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
 * A slot's flush state (bits): ticked since its last take; taken by the running flush; written
 * by this process at least once (so the absence filter already knows its key).
 */
const DIRTY = 1;
const IN_FLIGHT = 2;
const WRITTEN = 4;
const UNFLUSHED = DIRTY | IN_FLIGHT;
/** The table holds a value for the subject in this (shared) slot. */
const HELD = 8;
/**
 * A count meter's row for this subject was refused by the store (a data error on the row
 * alone, see `MeterCounters.isolate`): its ticks are counted in memory but no longer queued for
 * writing (a write would fail again), until the subject is evicted.
 */
const REFUSED = 16;

/**
 * The subjects of one (tenant, site), shared by every meter table of the site (each meter, each
 * period): a reader counted by several meters has its id stored once. A slot is the subject's in
 * every table of the site; each table keeps its values in arrays indexed by the slot and marks
 * the slots it holds, and a slot is freed when no table of the site holds it any more.
 *
 * Measured with the bench's memory scenario (one million subjects on two meters): one index per
 * table settled at 298.6 MB, one per site at 283.6 MB (its hash table, slot arrays and the ids'
 * characters, about 20 MB, are no longer held twice).
 */
export class SiteSubjects {
  private index = new SubjectIndex();
  /** The tables that index their values by this site's slots. */
  readonly tables: MeterTable[] = [];
  /** The last subject found and its slot: a request's meters look up the same subject in turn. */
  private lastSubject: string | null = null;
  private lastSlot = -1;

  /** The slot of a subject, or -1 (no table holds it). */
  get(subject: string): number {
    if (subject === this.lastSubject) return this.lastSlot;
    const slot = this.index.get(subject);
    if (slot >= 0) {
      this.lastSubject = subject;
      this.lastSlot = slot;
    }
    return slot;
  }

  /** The slot of a subject, added when absent. */
  slotFor(subject: string): number {
    const slot = this.get(subject);
    return slot >= 0 ? slot : this.index.add(subject);
  }

  /** The subject in a slot (a new string each call). */
  subjectAt(slot: number): string | undefined {
    return this.index.keyAt(slot);
  }

  /** A table dropped the subject in `slot`: the slot is freed once no table of the site holds it. */
  release(slot: number): void {
    for (let i = 0; i < this.tables.length; i++) if ((this.tables[i] as MeterTable).holdsSlot(slot)) return;
    this.lastSubject = null;
    this.lastSlot = -1;
    this.index.deleteSlot(slot);
    // Emptied (e.g. every table evicted): give back the grown arrays.
    if (this.index.size === 0) this.index = new SubjectIndex();
  }
}

/**
 * The values of one (tenant, site, meter, period), keyed by subject. Subjects sit in the site's
 * compact index (`SiteSubjects`: their characters in one byte arena, no string per subject, one
 * entry for all of a site's meters); counts live in an Int32Array indexed by the subject's slot,
 * and so does a seen meter's single member, as the code of an interned article id. A held
 * subject costs a few bytes a meter beyond its one entry in the site's index, and none of it is
 * a JavaScript value the collector must trace (only subjects with several members have an
 * array).
 *
 * What is not yet durable is kept per slot too (a count meter's delta, or how many of a seen
 * meter's members are durable), with a queue of dirty slots: a backlog of unflushed subjects
 * (a flush falling behind a burst) costs no object per subject. A flush takes slots from the
 * queue in order; a dirty or in-flight slot is never evicted, so it still holds its subject when
 * the flush settles.
 */
export class MeterTable {
  /** Subjects held. */
  private held = 0;
  /** Count meters: slot -> count. */
  private counts = new Int32Array(0);
  /**
   * Seen meters: slot -> members, as a number (no JavaScript value per subject, so a million
   * subjects are one typed array, which the collector never scans): 0 none; c > 0 the one
   * member, the code of an interned article id; c < 0 the members in `several[-c - 1]` (two or
   * more, or one id past the interning bound).
   */
  private seen = new Int32Array(0);
  private several: (string[] | undefined)[] = [];
  /** Free entries of `several`. */
  private severalFree: number[] = [];
  /** Count meters: slot -> unflushed delta. Seen meters: slot -> members durable (or in flight). */
  private pending = new Int32Array(0);
  /** slot -> HELD | DIRTY | IN_FLIGHT | WRITTEN | REFUSED (0: this table does not hold the slot's subject). */
  private state = new Uint8Array(0);
  /** Dirty slots in the order they became dirty (a ring: `head` is the oldest). */
  private queue = new Int32Array(16);
  private head = 0;
  private queued = 0;
  /** Slots with unflushed ticks or in flight (neither evictable nor resettable). */
  private busy = 0;
  /** The running flush's take: slots, what to restore if it fails, and their subjects. */
  private flying: number[] = [];
  private flyingBefore: number[] = [];
  private flyingSubjects: string[] = [];
  /** Where the next eviction sweep starts. */
  private cursor = 0;
  /** @internal This table's row in `meter_keys`, once a flush has committed it (or found it). */
  keyId: number | null = null;

  constructor(
    private readonly owner: MeterCounters,
    private readonly subjects: SiteSubjects,
    readonly tenant: string,
    readonly site: string,
    readonly meter: string,
    readonly period: string,
    readonly seenKind: boolean,
  ) {}

  /** Subjects held. */
  get size(): number {
    return this.held;
  }

  /** Whether this table holds the subject in a slot of its site. */
  holdsSlot(slot: number): boolean {
    return slot < this.state.length && ((this.state[slot] as number) & HELD) !== 0;
  }

  /** Subjects with unflushed ticks. */
  get dirtyCount(): number {
    return this.queued;
  }

  /** The held value, or undefined when it must be read first (no I/O). */
  peek(subject: string): MeterValue | undefined {
    const slot = this.find(subject);
    if (slot < 0) return undefined;
    return this.seenKind ? this.membersAt(slot) : this.counts[slot];
  }

  /** Reads a subject's value into memory (batched with every other miss of this tick). */
  async load(subject: string): Promise<void> {
    if (this.find(subject) >= 0) return;
    const pending = this.owner.loadEntry(meterKey(this.tenant, this.site, this.meter, subject, this.period));
    const loaded = pending instanceof Promise ? await pending : pending;
    // Another request may have installed it while we waited.
    if (this.find(subject) >= 0) return;
    this.owner.installed();
    this.store(this.subjects.slotFor(subject), this.fromLoaded(loaded));
  }

  /**
   * The slot holding a subject, or -1 when it is not held (no I/O). A slot stays the subject's
   * until the caller next awaits: decide finds each meter's slot once, then reads and ticks it.
   */
  find(subject: string): number {
    const slot = this.subjects.get(subject);
    return slot >= 0 && this.holdsSlot(slot) ? slot : -1;
  }

  /**
   * The count in a slot from `find` (a count meter's count, a seen meter's number of members),
   * read from the typed arrays. Decide reads a slot through this and `holdsAt` rather than as a
   * value (`peek`): a seen value is a string or an array, and the compiled hot path, having seen
   * strings, deoptimised each time it met an array and was recompiled every two seconds or so.
   */
  countAt(slot: number): number {
    if (!this.seenKind) return this.counts[slot] as number;
    const c = this.seen[slot] as number;
    return c > 0 ? 1 : c === 0 ? 0 : (this.several[-c - 1] as string[]).length;
  }

  /** Whether a seen meter's slot from `find` holds `item` (always false on a count meter). */
  holdsAt(slot: number, item: string): boolean {
    if (!this.seenKind) return false;
    const c = this.seen[slot] as number;
    if (c > 0) return this.owner.articleAt(c) === item;
    if (c === 0) return false;
    const members = this.several[-c - 1] as string[];
    for (let i = 0; i < members.length; i++) if (members[i] === item) return true;
    return false;
  }

  /** Counts one call on a count meter. The subject must have been loaded first. */
  tickCount(subject: string): void {
    this.tickCountAt(this.slotOf(subject));
  }

  /** `tickCount` for a slot from `find` (found since the caller last awaited). */
  tickCountAt(slot: number): void {
    this.counts[slot] = (this.counts[slot] as number) + 1;
    this.pending[slot] = (this.pending[slot] as number) + 1;
    this.markDirty(slot);
  }

  /** Counts an article once on a seen meter; returns false when it was already counted. */
  tickSeen(subject: string, articleId: string): boolean {
    return this.tickSeenAt(this.slotOf(subject), articleId);
  }

  /** `tickSeen` for a slot from `find` (found since the caller last awaited). */
  tickSeenAt(slot: number, articleId: string): boolean {
    const value = this.membersAt(slot);
    if (holds(value, articleId)) return false;
    if (typeof value === "string") this.putSeveral(slot, [value, this.owner.intern(articleId)]);
    else if (value.length === 0) this.putMembers(slot, articleId);
    else (value as string[]).push(this.owner.intern(articleId));
    this.markDirty(slot);
    return true;
  }

  /**
   * Ticks a subject whose value is not held (decide ran out of rounds of reads at the cap): the
   * stored value is read first, in the background, and the tick lands on it, so this process
   * never holds the tick alone. The next flush waits for it. Should the read fail, the tick goes
   * on an empty value (`tickCount`/`tickSeen`): Postgres still adds it, but this process reads a
   * low figure until the entry is dropped and read back. `articleId` is required on seen meters.
   */
  tickWhenRead(subject: string, articleId: string | null): void {
    if (this.tickIfHeld(subject, articleId)) return;
    const applied = this.load(subject).then(
      // Held now: `load` installed it and nothing ran in between (eviction waits for a task).
      () => {
        if (!this.tickIfHeld(subject, articleId)) this.tickInstalling(subject, articleId);
      },
      () => this.tickInstalling(subject, articleId),
    );
    this.owner.deferred(applied);
  }

  private tickIfHeld(subject: string, articleId: string | null): boolean {
    const slot = this.find(subject);
    if (slot < 0) return false;
    if (!this.seenKind) this.tickCountAt(slot);
    else if (articleId !== null) this.tickSeenAt(slot, articleId);
    return true;
  }

  private tickInstalling(subject: string, articleId: string | null): void {
    if (!this.seenKind) this.tickCount(subject);
    else if (articleId !== null) this.tickSeen(subject, articleId);
  }

  /** A seen meter's members in a slot (no allocation). */
  private membersAt(slot: number): SeenValue {
    const c = this.seen[slot] as number;
    if (c > 0) return this.owner.articleAt(c);
    return c === 0 ? NO_ITEMS : (this.several[-c - 1] as string[]);
  }

  /** Sets the members of a slot that holds none. */
  private putMembers(slot: number, value: SeenValue): void {
    if (typeof value === "string") {
      const code = this.owner.articleCode(value);
      if (code > 0) this.seen[slot] = code;
      else this.putSeveral(slot, [value]);
      return;
    }
    if (value.length === 0) return;
    const owner = this.owner;
    this.putSeveral(
      slot,
      value.map((item) => owner.intern(item)),
    );
  }

  private putSeveral(slot: number, list: string[]): void {
    this.dropMembers(slot);
    const at = this.severalFree.pop() ?? this.several.length;
    this.several[at] = list;
    this.seen[slot] = -at - 1;
  }

  private dropMembers(slot: number): void {
    const c = this.seen[slot] as number;
    if (c < 0) {
      this.several[-c - 1] = undefined;
      this.severalFree.push(-c - 1);
    }
    this.seen[slot] = 0;
  }

  /**
   * Drops clean subjects until `enough()` says stop, sweeping slots from where the last sweep
   * ended (a clock): a slot refilled after a sweep is reached again only a full turn later.
   */
  evictClean(enough: () => boolean): void {
    const limit = this.state.length;
    for (let n = 0; n < limit; n++) {
      if (enough()) break;
      const slot = this.cursor;
      this.cursor = slot + 1 >= limit ? 0 : slot + 1;
      const state = this.state[slot] as number;
      if ((state & HELD) === 0 || (state & UNFLUSHED) !== 0) continue;
      this.state[slot] = 0;
      if (this.seenKind) this.dropMembers(slot);
      this.held -= 1;
      this.owner.evicted();
      this.subjects.release(slot);
    }
    if (this.held === 0 && this.busy === 0) {
      // Emptied (e.g. a past period): give back the grown arrays. The table itself stays
      // registered, since decide holds it for its period and must keep reaching the same one.
      this.counts = new Int32Array(0);
      this.seen = new Int32Array(0);
      this.several = [];
      this.severalFree = [];
      this.pending = new Int32Array(0);
      this.state = new Uint8Array(0);
      this.queue = new Int32Array(16);
      this.head = 0;
      this.cursor = 0;
    }
  }

  /**
   * @internal Moves up to `limit` dirty subjects, oldest first, into `batch` and marks them in
   * flight; returns how many it took. `settle` must follow before the next take.
   */
  take(batch: FlushBatch, limit: number): number {
    let taken = 0;
    // A count table's rows are its taken subjects and deltas (the arrays `settle` also reads); a
    // seen table's are one per member not yet stored, so a subject may appear more than once.
    const subjects = this.seenKind ? ([] as string[]) : this.flyingSubjects;
    const items: string[] = [];
    // A seen table's rows: the take's entry (index in `flying`) each row belongs to.
    const entries: number[] = [];
    while (taken < limit && this.queued > 0) {
      const slot = this.queue[this.head] as number;
      this.head = this.head + 1 === this.queue.length ? 0 : this.head + 1;
      this.queued -= 1;
      if (((this.state[slot] as number) & REFUSED) !== 0) {
        // Ticked while its refused row was in flight: never written (see REFUSED).
        this.state[slot] = (this.state[slot] as number) & ~DIRTY;
        if (((this.state[slot] as number) & UNFLUSHED) === 0) this.busy -= 1;
        continue;
      }
      const subject = this.subjects.subjectAt(slot) as string;
      this.state[slot] = ((this.state[slot] as number) & (HELD | WRITTEN)) | IN_FLIGHT;
      this.flying.push(slot);
      this.flyingSubjects.push(subject);
      taken += 1;
      if (!this.seenKind) {
        this.flyingBefore.push(this.pending[slot] as number);
        this.pending[slot] = 0;
        continue;
      }
      const value = this.membersAt(slot);
      const from = this.pending[slot] as number;
      this.flyingBefore.push(from);
      const entry = this.flying.length - 1;
      if (typeof value === "string") {
        if (from === 0) {
          subjects.push(subject);
          items.push(value);
          entries.push(entry);
        }
        this.pending[slot] = 1;
        continue;
      }
      for (let i = from; i < value.length; i++) {
        subjects.push(subject);
        items.push(value[i] as string);
        entries.push(entry);
      }
      this.pending[slot] = value.length;
    }
    if (taken > 0) {
      batch.parts.push({
        table: this,
        subjects,
        deltas: this.seenKind ? [] : this.flyingBefore,
        items,
        entries: this.seenKind ? entries : null,
      });
    }
    // A drained backlog gives back its queue (4 bytes a subject at its longest).
    if (this.queued === 0 && this.queue.length > 1024) {
      this.queue = new Int32Array(16);
      this.head = 0;
    }
    return taken;
  }

  /**
   * @internal Ends the take: on success the slots are clean unless ticked since; on failure
   * their deltas (or members) are pending again, together with anything ticked since.
   */
  settle(written: boolean, present: AbsenceFilter | null): void {
    const outcome = written ? ROW_WRITTEN : ROW_KEPT;
    for (let i = 0; i < this.flying.length; i++) this.settleEntry(i, outcome, present);
    this.endTake();
  }

  /**
   * @internal `settle` for a take whose rows fared differently (`MeterCounters.isolate`): `rows`
   * holds each row's ROW_* outcome, in the order of the take's part (`entries` maps a seen
   * table's rows to their subjects). A subject with a row still kept is pending again (a seen
   * meter's members already stored are inserted again, which does nothing); one whose rows were
   * all refused is dropped from the write-behind (a count meter's subject is marked REFUSED);
   * the others are written.
   */
  settleRows(rows: Uint8Array, entries: readonly number[] | null, present: AbsenceFilter | null): void {
    if (entries === null) {
      for (let i = 0; i < this.flying.length; i++) this.settleEntry(i, rows[i] as number, present);
    } else {
      // Per subject: bit 1 a row kept, 2 a row written, 4 a row refused (none: nothing to write).
      const seen = new Uint8Array(this.flying.length);
      for (let r = 0; r < rows.length; r++) {
        const o = rows[r] as number;
        const e = entries[r] as number;
        seen[e] = (seen[e] as number) | (o === ROW_KEPT ? 1 : o === ROW_WRITTEN ? 2 : 4);
      }
      for (let i = 0; i < this.flying.length; i++) {
        const s = seen[i] as number;
        this.settleEntry(i, (s & 1) !== 0 ? ROW_KEPT : s === 4 ? ROW_REFUSED : ROW_WRITTEN, present);
      }
    }
    this.endTake();
  }

  private settleEntry(i: number, outcome: number, present: AbsenceFilter | null): void {
    const slot = this.flying[i] as number;
    let state = (this.state[slot] as number) & ~IN_FLIGHT;
    if ((state & UNFLUSHED) === 0) this.busy -= 1;
    if (outcome === ROW_WRITTEN) {
      // The key is in Postgres now: tell the absence filter once per subject, not every write.
      if ((state & WRITTEN) === 0) {
        present?.add(meterKey(this.tenant, this.site, this.meter, this.flyingSubjects[i] as string, this.period));
        state |= WRITTEN;
      }
      this.state[slot] = state;
      return;
    }
    if (outcome === ROW_REFUSED) {
      // Not restored: the row is dropped. A count meter's later ticks are not queued either (a
      // seen meter's new members are other rows, written as usual).
      this.state[slot] = this.seenKind ? state : state | REFUSED;
      return;
    }
    this.state[slot] = state;
    if (this.seenKind) this.pending[slot] = this.flyingBefore[i] as number;
    else this.pending[slot] = (this.pending[slot] as number) + (this.flyingBefore[i] as number);
    this.markDirty(slot);
  }

  private endTake(): void {
    this.flying = [];
    this.flyingBefore = [];
    this.flyingSubjects = [];
  }

  private markDirty(slot: number): void {
    const state = this.state[slot] as number;
    if ((state & (DIRTY | REFUSED)) !== 0) return;
    if ((state & UNFLUSHED) === 0) this.busy += 1;
    this.state[slot] = state | DIRTY;
    if (this.queued === this.queue.length) {
      // Full: unroll the ring into one twice the size.
      const queue = new Int32Array(this.queue.length * 2);
      const tail = this.queue.subarray(this.head);
      queue.set(tail);
      queue.set(this.queue.subarray(0, this.head), tail.length);
      this.queue = queue;
      this.head = 0;
    }
    const at = this.head + this.queued;
    this.queue[at >= this.queue.length ? at - this.queue.length : at] = slot;
    this.queued += 1;
    this.owner.markDirty(this);
  }

  /** A held subject's slot; a subject never loaded starts empty (callers load first). */
  private slotOf(subject: string): number {
    const slot = this.find(subject);
    if (slot >= 0) return slot;
    this.owner.installed();
    const added = this.subjects.slotFor(subject);
    this.store(added, this.seenKind ? NO_ITEMS : 0);
    return added;
  }

  /** Places a loaded (durable) value in a slot of the site this table does not hold yet. */
  private store(slot: number, value: MeterValue): void {
    if (slot >= this.state.length) {
      const size = Math.max(16, this.state.length * 2, slot + 1);
      this.pending = grown(this.pending, size);
      this.state = grown(this.state, size);
      if (this.seenKind) this.seen = grown(this.seen, size);
      else this.counts = grown(this.counts, size);
    }
    this.state[slot] = HELD;
    this.held += 1;
    if (this.seenKind) {
      this.putMembers(slot, value as SeenValue);
      this.pending[slot] = countOf(value);
    } else {
      this.counts[slot] = value as number;
      this.pending[slot] = 0;
    }
  }

  private fromLoaded(loaded: Loaded): MeterValue {
    if (!this.seenKind) return loaded.count;
    const items = loaded.items;
    if (items === null || items.length === 0) return NO_ITEMS;
    return items.length === 1 ? (items[0] as string) : items;
  }
}

/** Counter keys split into the five key columns, passed to Postgres as five text arrays (reads). */
class KeyArrays {
  readonly tenants: string[] = [];
  readonly sites: string[] = [];
  readonly meters: string[] = [];
  readonly subjects: string[] = [];
  readonly periods: string[] = [];

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

/**
 * One table's rows in a flush: the key columns it shares are sent once, as scalars, and only
 * the subjects and their deltas (count meters) or members (seen meters) as arrays. Six arrays
 * per row cost the request thread half as much again to encode (1.3 against 0.85 µs a row, with
 * subject ids decoded natively too), and PGlite about three times as much to decode (5.5 against
 * 1.9 µs a row).
 */
interface FlushPart {
  readonly table: MeterTable;
  readonly subjects: string[];
  /** A count table's deltas, by subject. */
  readonly deltas: number[];
  /** A seen table's new members, by subject. */
  readonly items: string[];
  /** A seen table's rows: the index of each row's subject in the take (null: one row a subject). */
  readonly entries: number[] | null;
}

/** One flush transaction's rows, a part per table. */
class FlushBatch {
  readonly parts: FlushPart[] = [];
}

/**
 * @internal The two reads of a batch of counter keys: stored counts, and stored seen members.
 * Each wanted key is looked up on its own, by the whole (meter_id, subject) primary-key prefix:
 * a lateral subquery behind OFFSET 0, which the planner cannot merge into the join. As a plain
 * join, on tables never analyzed (PGlite never analyzes; a server's autovacuum takes its time),
 * Postgres looked up by meter_id alone and filtered every row of the meter for each wanted
 * subject. Measured on a server store, the memory scenario's load over 100,000 fresh subjects:
 * 490 requests a second that way, 5,800 this way (3,500 with the five-column key before).
 */
export function loadStatements(keys: readonly string[]): { counts: SQL; items: SQL } {
  const wanted = new KeyArrays();
  for (const key of keys) wanted.pushKey(key);
  const rows = sql`unnest(${wanted.params()}) as w(tenant_id, site_id, meter, subject, period)
    join meter_keys m using (tenant_id, site_id, meter, period)`;
  return {
    counts: sql`select w.tenant_id, w.site_id, w.meter, w.subject, w.period, c.count from ${rows}
      cross join lateral (select count from meter_counts where meter_id = m.id and subject = w.subject offset 0) c`,
    items: sql`select w.tenant_id, w.site_id, w.meter, w.subject, w.period, s.item from ${rows}
      cross join lateral (select item from meter_seen where meter_id = m.id and subject = w.subject offset 0) s`,
  };
}

/**
 * A table's row in `meter_keys`, created when missing. Another process may create the same row
 * meanwhile: the insert then does nothing and the select finds theirs.
 */
async function keyIdOf(tx: Pick<Db, "execute">, table: MeterTable): Promise<number> {
  const { tenant, site, meter, period } = table;
  await tx.execute(sql`insert into meter_keys (tenant_id, site_id, meter, period)
    values (${tenant}, ${site}, ${meter}, ${period}) on conflict do nothing`);
  const rows = rowsOf<{ id: number }>(
    await tx.execute(sql`select id from meter_keys
      where tenant_id = ${tenant} and site_id = ${site} and meter = ${meter} and period = ${period}`),
  );
  const id = rows[0]?.id;
  if (id === undefined) throw new Error(`meter key of ${site}/${meter}/${period} was neither created nor found`);
  return Number(id);
}

/**
 * Meter values held in memory in per-(tenant, site, meter, period) tables, loaded from
 * Postgres on a miss (batched, single-flight) and flushed as deltas (`count = count + delta`,
 * seen members inserted once). Clean entries are evicted oldest-first past `maxEntries`, in a
 * task after the one that went past it; an evicted entry is read back from Postgres.
 */
export class MeterCounters implements Flushable {
  readonly name = "meters";
  private readonly tables = new Map<string, MeterTable>();
  /** Per (tenant, site): the subjects its tables share. */
  private readonly sites = new Map<string, SiteSubjects>();
  private dirtyTables = new Set<MeterTable>();
  /** Ticks waiting for a read (`MeterTable.tickWhenRead`); a flush waits for those it finds. */
  private readonly waitingTicks = new Set<Promise<void>>();
  /** Interned article ids: code -> id (code 0 is none) and id -> code, at most `maxArticleIds`. */
  private readonly articleIds: string[] = [""];
  private readonly articleCodes = new Map<string, number>();
  private readonly maxArticleIds: number;
  private entries = 0;
  /** Values dropped from memory past `maxEntries` since start, for /metrics. */
  evictedTotal = 0;
  /** How long each batched read of meter values took (seconds), for /metrics. */
  readonly readLatency = new Buckets(STORE_BUCKETS);
  /** An eviction is scheduled (see `installed`). */
  private evictionDue = false;
  private readonly loader: BatchLoader<Loaded>;

  private readonly maxEntries: number;
  /** Keys known to exist in Postgres; only when this process is the store's only writer. */
  private readonly present: AbsenceFilter | null;

  constructor(
    private readonly db: Db,
    options: { maxEntries?: number; exclusiveWriter?: boolean; maxArticleIds?: number } = {},
  ) {
    this.maxEntries = options.maxEntries ?? 4_000_000;
    this.maxArticleIds = options.maxArticleIds ?? MAX_INTERNED;
    this.present = options.exclusiveWriter ? new AbsenceFilter(Math.max(this.maxEntries, 1_000_000)) : null;
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
    // Seen meters are stored as members only (no count row), so their keys come from meter_seen
    // (distinct: one row per member there; a key in both tables is simply added twice).
    const rows = rowsOf<KeyColumns>(
      await this.db.execute(sql`select k.tenant_id, k.site_id, k.meter, c.subject, k.period
        from meter_counts c join meter_keys k on k.id = c.meter_id
        union all select k.tenant_id, k.site_id, k.meter, s.subject, k.period
        from (select distinct meter_id, subject from meter_seen) s join meter_keys k on k.id = s.meter_id`),
    );
    for (const r of rows) this.present.add(keyOfRow(r));
  }

  /** The table of one meter in one period (created empty on first use). */
  table(tenant: string, site: string, meter: string, period: string, seenKind: boolean): MeterTable {
    const siteId = tenant + SEP + site;
    const id = siteId + SEP + meter + SEP + period;
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

  /**
   * Writes what was dirty when it began, in transactions of at most STATEMENT_ROWS subjects
   * (ticks that arrive meanwhile wait for the next flush). A transaction that fails with a data
   * error is split until the rows the store refuses are found (`isolate`): those are dropped
   * and logged, the others written. Any other failure (the store unreachable) puts the
   * transaction's deltas back and stops; those written before it stay written. `logger` is the
   * flusher's; without one (a test, a tool) refused rows are reported on standard output.
   */
  async flush(logger: Logger = fallbackLogger): Promise<void> {
    // Ticks waiting for their value's read belong to this flush (those that come later, the next).
    if (this.waitingTicks.size > 0) await Promise.all([...this.waitingTicks]);
    let budget = this.pendingCount;
    while (budget > 0 && this.dirtyTables.size > 0) {
      const batch = new FlushBatch();
      const want = Math.min(STATEMENT_ROWS, budget);
      let room = want;
      for (const table of this.dirtyTables) {
        if (room === 0) break;
        room -= table.take(batch, room);
        if (table.dirtyCount === 0) this.dirtyTables.delete(table);
      }
      budget -= want - room;
      if (batch.parts.length === 0) break;
      let keyIds: number[];
      try {
        keyIds = await this.write(batch.parts);
      } catch (error) {
        if (isDataError(error)) {
          // Settles every part; throws (with the unwritten rows kept) on any other failure.
          await this.isolate(batch, logger);
          continue;
        }
        for (const part of batch.parts) part.table.settle(false, this.present);
        throw error;
      }
      for (let i = 0; i < batch.parts.length; i++) {
        const table = (batch.parts[i] as FlushPart).table;
        // Only now: a key row created by a transaction that rolled back does not exist.
        table.keyId = keyIds[i] as number;
        table.settle(true, this.present);
      }
    }
  }

  /**
   * One batch in one transaction: per table, count deltas added or seen members inserted once,
   * under the table's key id (created on its first flush). Returns the parts' key ids.
   */
  private async write(parts: readonly FlushPart[]): Promise<number[]> {
    return this.db.transaction(async (tx) => {
      const keyIds: number[] = [];
      for (const { table, subjects, deltas, items } of parts) {
        const keyId = table.keyId ?? (await keyIdOf(tx, table));
        keyIds.push(keyId);
        // Rows as arrays through unnest: a constant-size statement however many rows.
        if (!table.seenKind) {
          await tx.execute(sql`insert into meter_counts (meter_id, subject, count)
            select ${keyId}::int, u.subject, u.delta
            from unnest(${sql.param(subjects)}::text[], ${sql.param(deltas)}::int[]) as u(subject, delta)
            on conflict (meter_id, subject) do update set count = meter_counts.count + excluded.count`);
        } else if (items.length > 0) {
          await tx.execute(sql`insert into meter_seen (meter_id, subject, item)
            select ${keyId}::int, u.subject, u.item
            from unnest(${sql.param(subjects)}::text[], ${sql.param(items)}::text[]) as u(subject, item)
            on conflict do nothing`);
        }
      }
      return keyIds;
    });
  }

  /**
   * A batch whose transaction failed with a data error (`isDataError`: Postgres refuses a value,
   * e.g. a NUL character in a subject): a table whose key row is not stored yet first writes its
   * key alone (a meter whose names are refused drops its rows with one line), then the rows are
   * written in halves, split again where a half fails, until each refused row fails alone
   * (`writeSplitting`). A refused row is dropped and logged once, with its meter and a hash of
   * its subject, never the subject itself; every other row is written. Should anything else go
   * wrong meanwhile (the store becomes unreachable), the rows not yet written are kept for the
   * next flush and the error is thrown. Every part is settled either way.
   */
  private async isolate(batch: FlushBatch, logger: Logger): Promise<void> {
    const parts = batch.parts;
    const outcomes = parts.map((part) => new Uint8Array(part.subjects.length));
    let failure: unknown = null;
    try {
      for (let i = 0; i < parts.length; i++) {
        const part = parts[i] as FlushPart;
        const table = part.table;
        if (table.keyId !== null) continue;
        try {
          table.keyId = await this.db.transaction((tx) => keyIdOf(tx, table));
        } catch (error) {
          if (!isDataError(error)) throw error;
          (outcomes[i] as Uint8Array).fill(ROW_REFUSED);
          logger.error("meter refused by the store; its unwritten counts are dropped", {
            tenant: table.tenant,
            site: table.site,
            meter: table.meter,
            period: table.period,
            rows: part.subjects.length,
            code: sqlStateOf(error),
          });
        }
      }
      // The rows left, numbered across parts: part `live[j]` holds rows [starts[j], starts[j + 1]).
      const live: number[] = [];
      const starts: number[] = [0];
      for (let i = 0; i < parts.length; i++) {
        const part = parts[i] as FlushPart;
        if (part.table.keyId === null || part.subjects.length === 0) continue;
        live.push(i);
        starts.push((starts[starts.length - 1] as number) + part.subjects.length);
      }
      const total = starts[starts.length - 1] as number;
      const flat = new Uint8Array(total);
      const rowAt = (row: number): [FlushPart, number] => {
        let j = 0;
        while ((starts[j + 1] as number) <= row) j++;
        return [parts[live[j] as number] as FlushPart, row - (starts[j] as number)];
      };
      try {
        await writeSplitting(
          flat,
          0,
          total,
          async (start, end) => {
            const pieces: FlushPart[] = [];
            for (let j = 0; j < live.length; j++) {
              const from = Math.max(start, starts[j] as number) - (starts[j] as number);
              const to = Math.min(end, starts[j + 1] as number) - (starts[j] as number);
              if (from >= to) continue;
              const part = parts[live[j] as number] as FlushPart;
              const seen = part.table.seenKind;
              pieces.push({
                table: part.table,
                subjects: part.subjects.slice(from, to),
                deltas: seen ? [] : part.deltas.slice(from, to),
                items: seen ? part.items.slice(from, to) : [],
                entries: null,
              });
            }
            await this.write(pieces);
          },
          (row, error) => {
            const [part, r] = rowAt(row);
            const { tenant, site, meter, period, seenKind } = part.table;
            logger.error("meter row refused by the store; dropped", {
              tenant,
              site,
              meter,
              period,
              subjectHash: hashForLog(part.subjects[r] as string),
              ...(seenKind ? { itemHash: hashForLog(part.items[r] as string) } : { delta: part.deltas[r] }),
              code: sqlStateOf(error),
            });
          },
        );
      } finally {
        for (let j = 0; j < live.length; j++) {
          (outcomes[live[j] as number] as Uint8Array).set(flat.subarray(starts[j] as number, starts[j + 1] as number));
        }
      }
    } catch (error) {
      failure = error;
    }
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i] as FlushPart;
      part.table.settleRows(outcomes[i] as Uint8Array, part.entries, this.present);
    }
    if (failure !== null) throw failure;
  }

  private async timedLoad(keys: string[]): Promise<Map<string, Loaded>> {
    const startedAt = performance.now();
    try {
      return await this.loadMany(keys);
    } finally {
      this.readLatency.observe((performance.now() - startedAt) / 1000);
    }
  }

  private async loadMany(keys: string[]): Promise<Map<string, Loaded>> {
    const found = new Map<string, Loaded>();
    const chunk = STATEMENT_ROWS;
    for (let i = 0; i < keys.length; i += chunk) {
      const { counts, items } = loadStatements(keys.slice(i, i + chunk));
      // Both reads at once: on a server they run on two pooled connections.
      const [countRows, itemRows] = await Promise.all([this.db.execute(counts), this.db.execute(items)]);
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
