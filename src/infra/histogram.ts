/**
 * A latency histogram kept as plain numbers: `observe` finds the bucket with a short scan and
 * increments it, allocating nothing. Prometheus' cumulative `le` buckets are built only when
 * /metrics is scraped (src/ops/metrics.ts).
 */
export class Buckets {
  /** Non-cumulative counts; the last slot is +Inf. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  /** `bounds`: ascending upper bounds, in seconds. */
  constructor(readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(seconds: number): void {
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && seconds > (bounds[i] as number)) i++;
    (this.counts as Float64Array)[i] = (this.counts[i] as number) + 1;
    this.sum += seconds;
    this.count++;
  }
}

/** Request latency buckets (seconds): keyed decide answers in well under a millisecond. */
export const REQUEST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];
/** Store and flush latency buckets (seconds). */
export const STORE_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
