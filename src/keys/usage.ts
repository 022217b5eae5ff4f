import type { Flushable } from "../counters/flusher";
import type { KeyStore } from "./store";

/** UTC calendar date of an instant, as YYYY-MM-DD; cached per day since it runs per request. */
export function createDayOf(): (nowMs: number) => string {
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

/** Per-key request counts and last-used dates, counted in memory and flushed in batches. */
export class KeyUsage implements Flushable {
  readonly name = "key-usage";
  private pending = new Map<string, { delta: number; lastUsedOn: string }>();
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

  /** Unflushed usage of one key (listings add it to the stored values). */
  unflushed(keyId: string): { delta: number; lastUsedOn: string } | undefined {
    return this.pending.get(keyId);
  }

  async flush(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      await this.store.addUsage([...batch].map(([id, u]) => ({ id, ...u })));
    } catch (error) {
      for (const [id, u] of batch) {
        const now = this.pending.get(id);
        if (!now) this.pending.set(id, u);
        else {
          now.delta += u.delta;
          if (u.lastUsedOn > now.lastUsedOn) now.lastUsedOn = u.lastUsedOn;
        }
      }
      throw error;
    }
  }
}
