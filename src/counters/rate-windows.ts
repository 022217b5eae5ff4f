/**
 * Fixed windows: at most `limit` admissions per `windowMs` per key, one flat window, no burst.
 * `take` returns 0 when admitted, else the whole seconds until the window ends (Retry-After).
 */
export class RateWindows {
  private readonly counts = new Map<string, number>();
  private currentWindow = -1;

  constructor(
    readonly limit: number,
    readonly windowMs: number,
  ) {}

  take(key: string, nowMs: number): number {
    const window = Math.floor(nowMs / this.windowMs);
    if (window !== this.currentWindow) {
      // Windows are aligned for every key, so a new window starts every key afresh.
      this.counts.clear();
      this.currentWindow = window;
    }
    const used = this.counts.get(key) ?? 0;
    if (used >= this.limit) {
      const end = (window + 1) * this.windowMs;
      return Math.max(1, Math.ceil((end - nowMs) / 1000));
    }
    this.counts.set(key, used + 1);
    return 0;
  }

  /** What is left of `key`'s window at `nowMs` (reads; admits nothing). */
  remaining(key: string, nowMs: number): number {
    if (Math.floor(nowMs / this.windowMs) !== this.currentWindow) return this.limit;
    return Math.max(0, this.limit - (this.counts.get(key) ?? 0));
  }
}
