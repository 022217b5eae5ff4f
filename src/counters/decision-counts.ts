import type { CompiledSite } from "../core/compile";
import type { BatchResult, Exposure, FeatureResult, OutcomeKey } from "../core/types";
import type { Logger } from "../logger";
import type { Flushable } from "./flusher";

const MINUTE_MS = 60_000;

/** One (site, feature, outcome, variant, minute) count that moved since the last flush. */
export interface DecisionCountRow {
  readonly tenantId: string;
  readonly siteId: string;
  readonly key: OutcomeKey;
  /** Epoch milliseconds of the minute's start (UTC). */
  readonly minute: number;
  readonly count: number;
}

/** Where flushed deltas go: added to the minute, hour and day rows (`src/insight/store.ts`). */
export interface DecisionCountSink {
  addDecisionCounts(rows: readonly DecisionCountRow[]): Promise<void>;
}

/** Which site a document is counted under (a narrow view of `SiteState`). */
export interface CountedSite {
  readonly tenantId: string;
  readonly id: string;
}

/** One document's counts: the current minute in a typed array indexed by a result's `slot`. */
interface Tally {
  readonly tenantId: string;
  readonly siteId: string;
  readonly keys: readonly OutcomeKey[];
  minuteStart: number;
  counts: Uint32Array;
  /** Minutes that ended before a flush took them (rare: a flush runs every few hundred ms). */
  ended: { readonly minute: number; readonly counts: Uint32Array }[];
  active: boolean;
}

/**
 * Decisions counted per site, feature, outcome and variant and minute, in memory on the decide
 * path (one typed-array increment per answered feature, no allocation), and flushed with the
 * meters: each process writes only its own deltas (`count = count + delta`), so the counts of
 * several processes add up. A failed write keeps its rows for the next flush.
 */
export class DecisionCounts implements Flushable {
  readonly name = "decision counts";
  private readonly tallies = new WeakMap<CompiledSite, Tally>();
  private readonly active = new Set<Tally>();
  private lastDocument: CompiledSite | null = null;
  private lastTally: Tally | null = null;
  private retry: DecisionCountRow[] = [];

  constructor(private readonly sink: DecisionCountSink) {}

  /** Counts one decided batch: each answered feature's ending once, in the minute of `now`. */
  count(site: CountedSite, document: CompiledSite, result: BatchResult, now: number): void {
    const t = document === this.lastDocument ? (this.lastTally as Tally) : this.tallyOf(site, document);
    if (now - t.minuteStart >= MINUTE_MS || now < t.minuteStart) roll(t, now);
    const results = result.results;
    const counts = t.counts;
    for (let i = 0; i < results.length; i++) {
      const slot = (results[i] as FeatureResult).slot;
      counts[slot] = (counts[slot] as number) + 1;
    }
    // One exposure per experiment in a batch (deduplicated by evaluate), each counted once.
    const exposures = result.exposures;
    for (let i = 0; i < exposures.length; i++) {
      const slot = document.exposureSlots.get(exposures[i] as Exposure) as number;
      counts[slot] = (counts[slot] as number) + 1;
    }
    if (!t.active) {
      t.active = true;
      this.active.add(t);
    }
  }

  private tallyOf(site: CountedSite, document: CompiledSite): Tally {
    let t = this.tallies.get(document);
    if (t === undefined) {
      t = {
        tenantId: site.tenantId,
        siteId: site.id,
        keys: document.outcomeKeys,
        minuteStart: 0,
        counts: new Uint32Array(document.outcomeKeys.length),
        ended: [],
        active: false,
      };
      this.tallies.set(document, t);
    }
    this.lastDocument = document;
    this.lastTally = t;
    return t;
  }

  /** The deltas not yet written, taken (zeroed) in one synchronous run. */
  take(): DecisionCountRow[] {
    const rows = this.retry;
    this.retry = [];
    for (const t of this.active) {
      let moved = false;
      for (const e of t.ended) moved = rowsOf(t, e.minute, e.counts, rows) || moved;
      t.ended = [];
      moved = rowsOf(t, t.minuteStart, t.counts, rows) || moved;
      if (!moved) {
        t.active = false;
        this.active.delete(t);
      }
    }
    return rows;
  }

  async flush(_logger?: Logger): Promise<void> {
    const rows = this.take();
    if (rows.length === 0) return;
    try {
      await this.sink.addDecisionCounts(rows);
    } catch (error) {
      this.retry = rows.concat(this.retry);
      throw error;
    }
  }
}

function roll(t: Tally, now: number): void {
  if (t.counts.some((c) => c !== 0)) {
    t.ended.push({ minute: t.minuteStart, counts: t.counts });
    t.counts = new Uint32Array(t.keys.length);
  }
  t.minuteStart = now - (now % MINUTE_MS);
}

/** Appends a minute's non-zero counts as rows and zeroes them; whether any was non-zero. */
function rowsOf(t: Tally, minute: number, counts: Uint32Array, out: DecisionCountRow[]): boolean {
  let moved = false;
  for (let slot = 0; slot < counts.length; slot++) {
    const count = counts[slot] as number;
    if (count === 0) continue;
    counts[slot] = 0;
    moved = true;
    out.push({ tenantId: t.tenantId, siteId: t.siteId, key: t.keys[slot] as OutcomeKey, minute, count });
  }
  return moved;
}
