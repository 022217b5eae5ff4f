/** Latency statistics over recorded samples (milliseconds). */

export interface LatencySummary {
  count: number;
  mean_ms: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  p999_ms: number;
  max_ms: number;
}

/** Nearest-rank percentile of an ascending array (`q` in 0..1). */
export function percentileSorted(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.ceil(q * sorted.length);
  const index = Math.min(sorted.length - 1, Math.max(0, rank - 1));
  return sorted[index] as number;
}

/** Summarises the first `count` samples (copied and sorted; the input is left as is). */
export function summarise(samples: Float64Array, count = samples.length): LatencySummary {
  const sorted = samples.slice(0, count).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    count,
    mean_ms: round(count > 0 ? sum / count : Number.NaN),
    p50_ms: round(percentileSorted(sorted, 0.5)),
    p90_ms: round(percentileSorted(sorted, 0.9)),
    p99_ms: round(percentileSorted(sorted, 0.99)),
    p999_ms: round(percentileSorted(sorted, 0.999)),
    max_ms: round(count > 0 ? (sorted[count - 1] as number) : Number.NaN),
  };
}

/** Rounds to three decimals (microsecond resolution for milliseconds); NaN becomes null in JSON. */
export function round(value: number, digits = 3): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}
