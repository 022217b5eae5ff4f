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

/** Parts the timer flushes only on every `everyTicks`th tick (their deltas are statistics). */
export interface SlowParts {
  readonly parts: ReadonlySet<Flushable>;
  readonly everyTicks: number;
}

/**
 * Drains every counter's deltas to Postgres on a short timer and on demand (shutdown).
 * Flushes never overlap: a tick that finds one running waits for the next interval. `slow`
 * parts are flushed on every `everyTicks`th tick only: each of their flushes costs the store
 * about as much whatever it holds (a row per key, per outcome), so writing them less often
 * saves that cost; `flushAll` always flushes every part.
 */
export class Flusher {
  private timer: ReturnType<typeof setInterval> | null = null;
  private running: Promise<void> | null = null;
  private ticks = 0;
  /** The parts flushed on every tick. */
  private readonly fast: readonly Flushable[];
  /** The parts whose latest flush failed. */
  private readonly failing = new Set<Flushable>();
  /** How long each flush took (seconds), for /metrics. */
  readonly durations = new Buckets(STORE_BUCKETS);
  /** Flushes of a part that failed (its deltas kept for the next one). */
  failures = 0;
  /**
   * When the last flush ended after which every part's latest flush had succeeded
   * (performance.now()); set at start.
   */
  lastSuccessAt = performance.now();

  constructor(
    /** What it flushes, in order (read by bench/flush-cost.ts, which flushes each by hand). */
    readonly parts: readonly Flushable[],
    private readonly intervalMs: number,
    private readonly logger: Logger,
    private readonly slow: SlowParts = { parts: new Set(), everyTicks: 1 },
  ) {
    this.fast = parts.filter((p) => !slow.parts.has(p));
  }

  start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => void this.tick(), this.intervalMs);
    // The timer alone must not keep a process alive (tests, CLI).
    (this.timer as { unref?: () => void }).unref?.();
  }

  /**
   * What the timer does each interval: unless a flush is running (then it does nothing), flushes
   * the parts that are not slow, and on every `everyTicks`th tick every part.
   */
  tick(): Promise<void> | undefined {
    if (this.running) return undefined;
    this.ticks = (this.ticks + 1) % this.slow.everyTicks;
    return this.flush(this.ticks === 0 ? this.parts : this.fast);
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
  flushAll(): Promise<void> {
    return this.flush(this.parts);
  }

  private async flush(parts: readonly Flushable[]): Promise<void> {
    while (this.running) await this.running;
    this.running = (async () => {
      const startedAt = performance.now();
      for (const part of parts) {
        try {
          await part.flush(this.logger);
          this.failing.delete(part);
        } catch (error) {
          this.failing.add(part);
          this.failures++;
          this.logger.error("counter flush failed; deltas kept for the next flush", {
            counter: part.name,
            error: String(error),
          });
        }
      }
      const endedAt = performance.now();
      this.durations.observe((endedAt - startedAt) / 1000);
      if (this.failing.size === 0) this.lastSuccessAt = endedAt;
    })();
    try {
      await this.running;
    } finally {
      this.running = null;
    }
  }
}
