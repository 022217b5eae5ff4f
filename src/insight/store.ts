import type { DecisionCountRow, DecisionCountSink } from "../counters/decision-counts";

export type Grain = "minute" | "hour" | "day";

/** One stored decision count: a bucket of one (feature, outcome, experiment, variant). */
export interface DecisionCountBucket {
  readonly bucket: number;
  readonly feature: string;
  readonly outcome: string;
  readonly experiment: string;
  readonly variant: string;
  readonly verdict: string;
  readonly offer: string;
  readonly count: number;
}

/** A site's checkout sessions, counted per UTC day and offer: started, completed, granted. */
export interface CheckoutDay {
  readonly day: number;
  readonly offer: string;
  readonly started: number;
  readonly completed: number;
  readonly granted: number;
}

/** A completed checkout's reader (the granted user), for crediting experiment variants. */
export interface CheckoutConversion {
  readonly userId: string;
  readonly offer: string;
  readonly completedAt: number;
}

/** How many readers hold each value of a meter in one period. */
export interface MeterValueCount {
  readonly value: number;
  readonly readers: number;
}

export interface BucketQuery {
  readonly tenantId: string;
  readonly siteId: string;
  readonly grain: Grain;
  /** Epoch ms, inclusive. */
  readonly from: number;
  /** Epoch ms, exclusive. */
  readonly to: number;
}

/** What insight reads and writes (src/insight/drizzle-store.ts; the memory twin beside it). */
export interface InsightStore extends DecisionCountSink {
  decisionBuckets(q: BucketQuery): Promise<DecisionCountBucket[]>;
  checkoutDays(tenantId: string, siteId: string, from: number, to: number): Promise<CheckoutDay[]>;
  conversions(tenantId: string, siteId: string, from: number, to: number): Promise<CheckoutConversion[]>;
  meterValues(
    tenantId: string,
    siteId: string,
    meter: string,
    period: string,
    kind: "seen" | "count",
  ): Promise<MeterValueCount[]>;
}

const HOUR_MS = 3_600_000;
const DAY_MS = 86_400_000;

/** The three buckets (minute, hour, day, UTC) a minute's count is added to. */
export function bucketsOf(minute: number): readonly [Grain, number][] {
  return [
    ["minute", minute],
    ["hour", minute - (minute % HOUR_MS)],
    ["day", minute - (minute % DAY_MS)],
  ];
}

/** Flushed rows summed per stored row (one insert may not touch a row twice). */
export function summedRows(rows: readonly DecisionCountRow[]): Map<string, DecisionCountBucket & StoredKey> {
  const out = new Map<string, DecisionCountBucket & StoredKey>();
  for (const r of rows) {
    for (const [grain, bucket] of bucketsOf(r.minute)) {
      const k = r.key;
      const id = [r.tenantId, r.siteId, grain, bucket, k.feature, k.outcome, k.experiment, k.variant].join("\u0001");
      const known = out.get(id);
      const count = (known?.count ?? 0) + r.count;
      out.set(id, {
        tenantId: r.tenantId,
        siteId: r.siteId,
        grain,
        bucket,
        feature: k.feature,
        outcome: k.outcome,
        experiment: k.experiment,
        variant: k.variant,
        verdict: k.type ?? "",
        offer: k.offer ?? "",
        count,
      });
    }
  }
  return out;
}

export interface StoredKey {
  readonly tenantId: string;
  readonly siteId: string;
  readonly grain: Grain;
}
