import { Buckets, STORE_BUCKETS } from "../infra/histogram";
import type { Logger } from "../logger";

/**
 * Something holding unflushed deltas. A flush that fails must keep its deltas for the next one;
 * a row the store refuses (a data error on that row alone) is dropped and reported to `logger`
 * (the flusher's), so that one bad row never blocks the others.
 */
export interface Flushable {
  readonly name: string;
  flush(logger?: Logger): Promise<void>;
}

/**
 * Drains every counter's deltas to Postgres on a short timer and on demand (shutdown).
 * Flushes never overlap: a tick that finds one running waits for the next interval.
 */
export class Flusher {
  private timer: ReturnType<typeof setInterval> | null = null;
  private running: Promise<void> | null = null;
  /** How long each flush took (seconds), for /metrics. */
  readonly durations = new Buckets(STORE_BUCKETS);
  /** Flushes of a part that failed (its deltas kept for the next one). */
  failures = 0;
  /** When the last flush in which every part succeeded ended (performance.now()); set at start. */
  lastSuccessAt = performance.now();

  constructor(
    /** What it flushes, in order (read by bench/flush-cost.ts, which flushes each by hand). */
    readonly parts: readonly Flushable[],
    private readonly intervalMs: number,
    private readonly logger: Logger,
  ) {}

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      if (!this.running) void this.flushAll();
    }, this.intervalMs);
    // The timer alone must not keep a process alive (tests, CLI).
    (this.timer as { unref?: () => void }).unref?.();
  }

  /** How many flush intervals have passed since the last flush that fully succeeded. */
  intervalsBehind(now = performance.now()): number {
    return (now - this.lastSuccessAt) / this.intervalMs;
  }

  stop(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
  }

  /** Flushes every part; resolves when all deltas known now are durable (or merged back). */
  async flushAll(): Promise<void> {
    while (this.running) await this.running;
    this.running = (async () => {
      const startedAt = performance.now();
      let failed = false;
      for (const part of this.parts) {
        try {
          await part.flush(this.logger);
        } catch (error) {
          failed = true;
          this.failures++;
          this.logger.error("counter flush failed; deltas kept for the next flush", {
            counter: part.name,
            error: String(error),
          });
        }
      }
      const endedAt = performance.now();
      this.durations.observe((endedAt - startedAt) / 1000);
      if (!failed) this.lastSuccessAt = endedAt;
    })();
    try {
      await this.running;
    } finally {
      this.running = null;
    }
  }
}
