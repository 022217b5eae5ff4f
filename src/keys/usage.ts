import type { Flushable } from "../counters/flusher";
import { isDataError, ROW_KEPT, sqlStateOf, writeSplitting } from "../counters/refused-rows";
import { fallbackLogger } from "../infra/fallback-logger";
import type { Logger } from "../logger";
import type { KeyStore } from "./store";

/** UTC calendar date of an instant, as YYYY-MM-DD; cached per day since it runs per request. */
function createDayOf(): (nowMs: number) => string {
  let dayStart = -1;
  let dayEnd = -1;
  let label = "";
  return (nowMs) => {
    if (nowMs < dayStart || nowMs >= dayEnd) {
      dayStart = nowMs - (nowMs % 86_400_000);
      dayEnd = dayStart + 86_400_000;
      label = new Date(dayStart).toISOString().slice(0, 10);
    }
    return label;
  };
}

/** The later of two YYYY-MM-DD dates (they sort as strings). */
function laterDay(a: string, b: string): string {
  return a < b ? b : a;
}

interface Usage {
  delta: number;
  lastUsedOn: string;
}

/**
 * Per-key request counts and last-used dates, counted in memory and flushed in batches. What a
 * flush is writing stays visible to `unflushed` until its write commits (listings add it to the
 * stored values, so they never dip while a write is in flight), and goes back to the pending
 * usage if the write fails.
 */
export class KeyUsage implements Flushable {
  readonly name = "key-usage";
  private pending = new Map<string, Usage>();
  /** The running flush's usage, until its write has committed or been merged back. */
  private inFlight: Map<string, Usage> | null = null;
  /** The running flush (a second one waits for it: one batch in flight at a time). */
  private running: Promise<void> | null = null;
  private readonly dayOf = createDayOf();

  constructor(private readonly store: KeyStore) {}

  record(keyId: string, nowMs: number): void {
    const day = this.dayOf(nowMs);
    const entry = this.pending.get(keyId);
    if (entry) {
      entry.delta += 1;
      if (day > entry.lastUsedOn) entry.lastUsedOn = day;
    } else {
      this.pending.set(keyId, { delta: 1, lastUsedOn: day });
    }
  }

  /** Usage of one key not yet committed, pending or in flight (listings add it to the stored values). */
  unflushed(keyId: string): Usage | undefined {
    const pending = this.pending.get(keyId);
    const flying = this.inFlight?.get(keyId);
    if (flying === undefined) return pending;
    if (pending === undefined) return flying;
    return {
      delta: pending.delta + flying.delta,
      lastUsedOn: laterDay(pending.lastUsedOn, flying.lastUsedOn),
    };
  }

  /**
   * Writes the pending usage in one statement. Should the store refuse it with a data error (not
   * expected: key ids and dates are ours), the rows are written in halves until the refused ones
   * are found alone, and those are dropped and logged to `logger`. On any other failure the usage not yet
   * written is merged back for the next flush.
   */
  async flush(logger: Logger = fallbackLogger): Promise<void> {
    while (this.running !== null) await this.running.catch(() => {});
    if (this.pending.size === 0) return;
    const running = this.write(logger);
    this.running = running;
    try {
      await running;
    } finally {
      this.running = null;
    }
  }

  private async write(logger: Logger): Promise<void> {
    const batch = this.pending;
    this.pending = new Map();
    this.inFlight = batch;
    const rows = [...batch].map(([id, u]) => ({ id, ...u }));
    try {
      try {
        await this.store.addUsage(rows);
      } catch (error) {
        if (!isDataError(error)) throw error;
        const outcome = new Uint8Array(rows.length);
        try {
          await writeSplitting(
            outcome,
            0,
            rows.length,
            (start, end) => this.store.addUsage(rows.slice(start, end)),
            (row, refused) =>
              logger.error("key usage refused by the store; dropped", {
                keyId: rows[row]?.id,
                delta: rows[row]?.delta,
                code: sqlStateOf(refused),
              }),
          );
        } catch (failure) {
          // Only the rows not yet written (nor refused) go back.
          for (let i = 0; i < rows.length; i++)
            if (outcome[i] !== ROW_KEPT) batch.delete((rows[i] as { id: string }).id);
          throw failure;
        }
      }
    } catch (error) {
      this.mergeBack(batch);
      throw error;
    } finally {
      this.inFlight = null;
    }
  }

  private mergeBack(batch: Map<string, Usage>): void {
    for (const [id, u] of batch) {
      const now = this.pending.get(id);
      if (!now) this.pending.set(id, u);
      else {
        now.delta += u.delta;
        if (u.lastUsedOn > now.lastUsedOn) now.lastUsedOn = u.lastUsedOn;
      }
    }
  }
}
