import type { Flusher } from "./flusher";
import type { MeterCounters } from "./meter-counters";
import type { QuotaLeases } from "./quota-leases";

/** What /metrics and /ready read of the meters, the flusher and the keyed window's leases. */
export type MeterFigures = Pick<
  MeterCounters,
  "size" | "evictedTotal" | "countAdmissions" | "seenAdmissions" | "pendingCount" | "readLatency"
>;
export type FlushFigures = Pick<Flusher, "durations" | "failures" | "lastSuccessAt" | "intervalsBehind" | "flushAll">;
export type LeaseFigures = Pick<QuotaLeases, "claims" | "fallbacks">;

/**
 * The counters' figures when they are not this process' own counters alone (the decide thread
 * counts too: src/decide-thread/figures.ts): /metrics, /ready and the operator's flush read these.
 */
export interface CounterFigures {
  readonly meters: MeterFigures;
  readonly flusher: FlushFigures;
  readonly leases: LeaseFigures;
}
