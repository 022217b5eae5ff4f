import type { AbsenceFilter } from "./absence-filter";
import type { MeterName, SeenAdmission } from "./meter-store";
import { countOf, holds, type Loaded, type MeterValue, meterKey, NO_ITEMS, type SeenValue } from "./meter-values";
import { ROW_KEPT, ROW_REFUSED, ROW_WRITTEN } from "./refused-rows";
import type { SiteSubjects, SlotHolder } from "./site-subjects";
import { grown } from "./subject-index";

/**
 * What a table asks of the counters that own it (`MeterCounters`): reads, the entry count that
 * drives eviction, deferred ticks, the dirty set and the shared article-id interning.
 */
export interface TableOwner {
  loadEntry(key: string): Promise<Loaded> | Loaded;
  /** The stored row of a key read now, past the batching and the absence filter. */
  readNow(key: string): Promise<Loaded>;
  /** Whether meters admit through the store (`MeterCounters.exact`). */
  readonly exact: boolean;
  admitSeen(name: MeterName, subject: string, item: string, allowance: number): Promise<SeenAdmission>;
  admitCount(name: MeterName, subject: string, allowance: number): Promise<SeenAdmission>;
  installed(): void;
  evicted(): void;
  deferred(applied: Promise<void>): void;
  markDirty(table: MeterTable): void;
  articleCode(item: string): number;
  articleAt(code: number): string;
  intern(item: string): string;
}

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
export class MeterTable implements SlotHolder {
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
  /**
   * Dropped by its counters (a past period no longer used): it holds nothing and is no longer
   * found by `MeterCounters.table`; whoever still holds it must ask for the table again.
   */
  detached = false;
  /**
   * A seen meter's new members, and a count meter's calls below the allowance, are admitted by
   * the store first (other processes count too).
   */
  readonly exact: boolean;

  constructor(
    private readonly owner: TableOwner,
    private readonly subjects: SiteSubjects,
    readonly tenant: string,
    readonly site: string,
    readonly meter: string,
    readonly period: string,
    readonly seenKind: boolean,
  ) {
    this.exact = owner.exact;
  }

  /**
   * Admits through the store while under `allowance`: `item` to a seen meter's stored members
   * (`MeterStore.admitSeen`), or one call to a count meter's stored count (`admitCount`; `item`
   * unused). The table keeps the key id the store answers, so later admissions skip finding it.
   */
  async admit(subject: string, item: string, allowance: number): Promise<SeenAdmission> {
    const admission = this.seenKind
      ? await this.owner.admitSeen(this, subject, item, allowance)
      : await this.owner.admitCount(this, subject, allowance);
    this.keyId = admission.keyId;
    return admission;
  }

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
   * What the store has just admitted (`admit`), for a slot from `find`, held as durable so the
   * flush does not write it again: a seen meter's member (written again only if members before
   * it are unwritten), or a count meter's call (the count, at least `before` + 1 as stored).
   */
  admittedAt(slot: number, articleId: string, before: number): void {
    if (!this.seenKind) {
      this.counts[slot] = Math.max((this.counts[slot] as number) + 1, before + 1);
      return;
    }
    const value = this.membersAt(slot);
    if (holds(value, articleId)) return;
    const durable = (this.pending[slot] as number) === countOf(value);
    if (typeof value === "string") this.putSeveral(slot, [value, this.owner.intern(articleId)]);
    else if (value.length === 0) this.putMembers(slot, articleId);
    else (value as string[]).push(this.owner.intern(articleId));
    if (durable) this.pending[slot] = countOf(this.membersAt(slot));
    else this.markDirty(slot);
  }

  /**
   * The store refused a count meter's call (its allowance is reached, `admit`), for a slot from
   * `find`: the held count is at least the allowance from now on.
   */
  fullAt(slot: number, allowance: number): void {
    if (!this.seenKind) this.counts[slot] = Math.max(this.counts[slot] as number, allowance);
  }

  /**
   * Reads a subject's stored value again (another process admitted some): the held value
   * becomes the stored one, unless this process still has ticks of it to write (then it stays
   * as it is). Installs the value when it is not held.
   */
  async refresh(subject: string): Promise<void> {
    const loaded = await this.owner.readNow(meterKey(this.tenant, this.site, this.meter, subject, this.period));
    const slot = this.find(subject);
    if (slot < 0) {
      this.owner.installed();
      this.store(this.subjects.slotFor(subject), this.fromLoaded(loaded));
      return;
    }
    // A slot with ticks not yet written (or in flight) keeps its value: the flush owns it.
    if (((this.state[slot] as number) & UNFLUSHED) !== 0) return;
    if (!this.seenKind) {
      this.counts[slot] = Math.max(this.counts[slot] as number, loaded.count);
      return;
    }
    const stored = loaded.items ?? [];
    this.dropMembers(slot);
    if (stored.length > 0) this.putMembers(slot, stored.length === 1 ? (stored[0] as string) : stored);
    this.pending[slot] = stored.length;
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
      // Emptied: give back the grown arrays. The table stays registered (decide holds it for its
      // period); only `MeterCounters` drops a past period's table, marking it `detached`.
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

/**
 * One table's rows in a flush: the key columns it shares are sent once, as scalars, and only
 * the subjects and their deltas (count meters) or members (seen meters) as arrays: six arrays
 * per row cost both the request thread's encoding and PGlite's decoding more (docs/performance.md,
 * "Memory").
 */
export interface FlushPart {
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
export class FlushBatch {
  readonly parts: FlushPart[] = [];
}
