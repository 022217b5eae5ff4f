import type { CounterFigures, FlushFigures, LeaseFigures, MeterFigures } from "../counters/figures";
import type { Flusher } from "../counters/flusher";
import type { MeterCounters } from "../counters/meter-counters";
import type { MeterStore } from "../counters/meter-store";
import type { KeyedRate } from "../counters/quota-leases";
import { QuotaLeases } from "../counters/quota-leases";
import { Buckets } from "../infra/histogram";
import type { Channel } from "./channel";

interface BucketsData {
  readonly counts: Float64Array;
  readonly sum: number;
  readonly count: number;
}

/** The thread's figures, as it reports them every `REPORT_MS`. */
interface Report {
  readonly meters: {
    readonly size: number;
    readonly evictedTotal: number;
    readonly pendingCount: number;
    readonly readLatency: BucketsData;
  };
  readonly flusher: {
    readonly durations: BucketsData;
    readonly failures: number;
    /** How many flush intervals behind it was when it reported. */
    readonly intervalsBehind: number;
    readonly sinceSuccessMs: number;
  };
  readonly leases: LeaseFigures | null;
}

/** How often the thread reports; a report older than STALE_MS counts as a flusher that is not flushing. */
const REPORT_MS = 1000;
const STALE_MS = 5000;

const dataOf = (b: Buckets): BucketsData => ({ counts: b.counts.slice(), sum: b.sum, count: b.count });

/** The thread's side: reports its counters' figures to the main thread every second. */
export function reportFigures(channel: Channel, meters: MeterCounters, flusher: Flusher, rate: KeyedRate): () => void {
  const report = () => {
    const now = performance.now();
    const figures: Report = {
      meters: {
        size: meters.size,
        evictedTotal: meters.evictedTotal,
        pendingCount: meters.pendingCount,
        readLatency: dataOf(meters.readLatency),
      },
      flusher: {
        durations: dataOf(flusher.durations),
        failures: flusher.failures,
        intervalsBehind: flusher.intervalsBehind(now),
        sinceSuccessMs: now - flusher.lastSuccessAt,
      },
      leases: rate instanceof QuotaLeases ? { claims: rate.claims, fallbacks: rate.fallbacks } : null,
    };
    channel.emit("figures", figures);
  };
  report();
  const timer = setInterval(report, REPORT_MS);
  timer.unref();
  return () => clearInterval(timer);
}

/** Two histograms of the same bounds as one. */
function merged(own: Buckets, other: BucketsData | undefined): Buckets {
  const out = new Buckets(own.bounds);
  for (let i = 0; i < out.counts.length; i++) {
    out.counts[i] = (own.counts[i] as number) + ((other?.counts[i] as number | undefined) ?? 0);
  }
  out.sum = own.sum + (other?.sum ?? 0);
  out.count = own.count + (other?.count ?? 0);
  return out;
}

/**
 * The main thread's side: its own counters' figures and the thread's latest report, together, as
 * /metrics, /ready and the operator's flush read them (sums; the flusher as far behind as the
 * further of the two, and failing once the thread has not reported for STALE_MS).
 */
export class ThreadFigures implements CounterFigures {
  private latest: Report | null = null;
  private receivedAt = performance.now();

  /**
   * `threadStore`: the meter store this thread serves the thread's meters with; the admissions it
   * sends for them are counted there (the thread's own counters hold no store to count them).
   */
  constructor(
    channel: Channel,
    flushThread: () => Promise<unknown>,
    main: { meters: MeterCounters; flusher: Flusher },
    threadStore: Pick<MeterStore, "admissionTallies">,
  ) {
    channel.on("figures", (payload) => {
      this.latest = payload as Report;
      this.receivedAt = performance.now();
    });
    const figures = this;
    const mainMeters = main.meters;
    const mainFlusher = main.flusher;
    this.meters = {
      get size() {
        return mainMeters.size + (figures.latest?.meters.size ?? 0);
      },
      get evictedTotal() {
        return mainMeters.evictedTotal + (figures.latest?.meters.evictedTotal ?? 0);
      },
      get countAdmissions() {
        const other = threadStore.admissionTallies?.().count;
        const own = mainMeters.countAdmissions;
        return { calls: own.calls + (other?.calls ?? 0), statements: own.statements + (other?.statements ?? 0) };
      },
      get seenAdmissions() {
        const other = threadStore.admissionTallies?.().seen;
        const own = mainMeters.seenAdmissions;
        return { calls: own.calls + (other?.calls ?? 0), statements: own.statements + (other?.statements ?? 0) };
      },
      get pendingCount() {
        return mainMeters.pendingCount + (figures.latest?.meters.pendingCount ?? 0);
      },
      get readLatency() {
        return merged(mainMeters.readLatency, figures.latest?.meters.readLatency);
      },
    };
    this.flusher = {
      get durations() {
        return merged(mainFlusher.durations, figures.latest?.flusher.durations);
      },
      get failures() {
        return mainFlusher.failures + (figures.latest?.flusher.failures ?? 0);
      },
      get lastSuccessAt() {
        const thread =
          figures.latest === null
            ? Number.NEGATIVE_INFINITY
            : figures.receivedAt - figures.latest.flusher.sinceSuccessMs;
        return Math.min(mainFlusher.lastSuccessAt, thread);
      },
      intervalsBehind: (now = performance.now()) => {
        // Before its first report the thread counts as flushing; silent for STALE_MS, as not.
        const stale = now - figures.receivedAt > STALE_MS;
        const thread = stale ? Number.POSITIVE_INFINITY : (figures.latest?.flusher.intervalsBehind ?? 0);
        return Math.max(mainFlusher.intervalsBehind(now), thread);
      },
      flushAll: async () => {
        await mainFlusher.flushAll();
        await flushThread();
      },
    };
    this.leases = {
      get claims() {
        return figures.latest?.leases?.claims ?? 0;
      },
      get fallbacks() {
        return figures.latest?.leases?.fallbacks ?? 0;
      },
    };
  }

  readonly meters: MeterFigures;
  readonly flusher: FlushFigures;
  readonly leases: LeaseFigures;
}
