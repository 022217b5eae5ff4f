import { collectDefaultMetrics, type Metric, Registry } from "prom-client";
import type { ChangeFeed } from "../changes/change-feed";
import type { Config } from "../config";
import type { CounterFigures, FlushFigures, LeaseFigures, MeterFigures } from "../counters/figures";
import { type KeyedRate, QuotaLeases } from "../counters/quota-leases";
import type { RequestStats } from "../http/request-stats";
import { withinDeadline } from "../infra/deadline";
import type { Buckets } from "../infra/histogram";
import type { JobQueue } from "../jobs/queue";
import type { Outbox } from "../mail/outbox";
import type { MailBudget } from "../mail-budget/mail-budget";
import type { StoreSizes, StoreSizesSnapshot } from "./store-sizes";

type Labels = Record<string, string | number>;
interface Sample {
  readonly value: number;
  readonly labels: Labels;
  readonly metricName?: string;
}

/**
 * A metric whose values are read from the service's own plain counters when /metrics is
 * scraped (`read`), so the code that counts never calls prom-client: prom-client's registry
 * formats these like its own metrics.
 */
class Scraped {
  readonly aggregator = "sum";

  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: "counter" | "gauge" | "histogram",
    private readonly read: () => Sample[] | Promise<Sample[]>,
  ) {}

  async get() {
    return {
      name: this.name,
      help: this.help,
      type: this.type,
      aggregator: this.aggregator,
      values: await this.read(),
    };
  }
}

/** Prometheus samples of one histogram: cumulative `le` buckets, then sum and count. */
function histogramSamples(name: string, buckets: Buckets, labels: Labels): Sample[] {
  const samples: Sample[] = [];
  let cumulative = 0;
  for (let i = 0; i <= buckets.bounds.length; i++) {
    cumulative += buckets.counts[i] as number;
    const le = i < buckets.bounds.length ? String(buckets.bounds[i]) : "+Inf";
    samples.push({ metricName: `${name}_bucket`, labels: { ...labels, le }, value: cumulative });
  }
  samples.push({ metricName: `${name}_sum`, labels, value: buckets.sum });
  samples.push({ metricName: `${name}_count`, labels, value: buckets.count });
  return samples;
}

/** What /metrics reads at scrape time: the counters, the flusher, the feed, the outbox and the job queue. */
export interface MetricsDeps {
  readonly config: Config;
  readonly now: () => number;
  readonly requests: RequestStats;
  readonly meters: MeterFigures;
  readonly flusher: FlushFigures;
  readonly changes: ChangeFeed;
  readonly keyedDecideRate: KeyedRate;
  readonly outbox: Outbox;
  readonly mailBudget: MailBudget;
  readonly jobs: JobQueue;
  readonly storeSizes: StoreSizes;
  /** The counters' figures with the decide thread's in them (src/decide-thread), when it runs. */
  readonly figures?: CounterFigures;
}

/**
 * The registry /metrics serves: every value is read from the running service at scrape time,
 * beside prom-client's default runtime metrics under their usual names (`process_*` CPU, memory
 * and file descriptors; `nodejs_*` heap, event-loop lag and GC), which the usual dashboards read.
 */
export function metricsRegistry(served: MetricsDeps): Registry {
  const deps = served.figures === undefined ? served : { ...served, ...served.figures };
  const registry = new Registry();
  collectDefaultMetrics({ register: registry });
  const add = (metric: Scraped) => registry.registerMetric(metric as unknown as Metric);
  const requests = () => [...deps.requests.routes()];

  add(
    new Scraped("svc_http_requests_total", "Requests answered, by method, route and status.", "counter", () =>
      requests().flatMap((r) =>
        [...r.byStatus].map(([status, b]) => ({
          labels: { method: r.method, route: r.route, status },
          value: b.count,
        })),
      ),
    ),
  );
  add(
    new Scraped(
      "svc_http_request_duration_seconds",
      "Time from a request's arrival to its answer written, by method, route and status.",
      "histogram",
      () =>
        requests().flatMap((r) =>
          [...r.byStatus].flatMap(([status, b]) =>
            histogramSamples("svc_http_request_duration_seconds", b, { method: r.method, route: r.route, status }),
          ),
        ),
    ),
  );
  add(
    new Scraped("svc_http_rate_limited_total", "Requests refused by a rate window (429), by route.", "counter", () =>
      requests().flatMap((r) => {
        const limited = r.byStatus.get(429);
        return limited ? [{ labels: { method: r.method, route: r.route }, value: limited.count }] : [];
      }),
    ),
  );
  add(
    new Scraped("svc_meter_entries", "Meter values (subject and meter pairs) held in memory.", "gauge", () => [
      { labels: {}, value: deps.meters.size },
    ]),
  );
  add(
    new Scraped(
      "svc_meter_entries_evicted_total",
      "Meter values dropped from memory past SVC_METER_ENTRIES (read back from the store when needed).",
      "counter",
      () => [{ labels: {}, value: deps.meters.evictedTotal }],
    ),
  );
  add(
    new Scraped(
      "svc_meter_count_admissions_total",
      "Count meters' calls admitted through the store (a Postgres server: other processes count too).",
      "counter",
      () => [{ labels: {}, value: deps.meters.countAdmissions.calls }],
    ),
  );
  add(
    new Scraped(
      "svc_meter_count_admission_statements_total",
      "Statements those admissions took: calls that came together share one.",
      "counter",
      () => [{ labels: {}, value: deps.meters.countAdmissions.statements }],
    ),
  );
  add(
    new Scraped(
      "svc_meter_seen_admissions_total",
      "Seen meters' new members (and gift links' new readers) asked of the store (a Postgres server: other processes count too).",
      "counter",
      () => [{ labels: {}, value: deps.meters.seenAdmissions.calls }],
    ),
  );
  add(
    new Scraped(
      "svc_meter_seen_admission_statements_total",
      "Statements those admissions took: new members that came together share one.",
      "counter",
      () => [{ labels: {}, value: deps.meters.seenAdmissions.statements }],
    ),
  );
  add(
    new Scraped("svc_flush_duration_seconds", "Time each counter flush took.", "histogram", () =>
      histogramSamples("svc_flush_duration_seconds", deps.flusher.durations, {}),
    ),
  );
  add(
    new Scraped(
      "svc_flush_failures_total",
      "Counter flushes that failed (their deltas are kept for the next flush).",
      "counter",
      () => [{ labels: {}, value: deps.flusher.failures }],
    ),
  );
  add(
    new Scraped("svc_flush_backlog", "Meter values with deltas not flushed to the store yet.", "gauge", () => [
      { labels: {}, value: deps.meters.pendingCount },
    ]),
  );
  add(
    new Scraped(
      "svc_flush_last_success_age_seconds",
      "Seconds since the last counter flush in which every counter succeeded.",
      "gauge",
      () => [{ labels: {}, value: (performance.now() - deps.flusher.lastSuccessAt) / 1000 }],
    ),
  );
  add(
    new Scraped(
      "svc_change_feed_lag_seconds",
      "Seconds since this process last read the change log (0 on the embedded store, which has no other writer).",
      "gauge",
      () => [{ labels: {}, value: deps.changes.lagSeconds() }],
    ),
  );
  const leases: LeaseFigures | null =
    served.figures?.leases ?? (deps.keyedDecideRate instanceof QuotaLeases ? deps.keyedDecideRate : null);
  if (leases) {
    add(
      new Scraped(
        "svc_rate_lease_claims_total",
        "Claims of keyed rate-window quota sent to Postgres (round trips; server store only).",
        "counter",
        () => [{ labels: {}, value: leases.claims }],
      ),
    );
    add(
      new Scraped(
        "svc_rate_lease_fallbacks_total",
        "Key windows counted by this process alone after a claim failed or missed the read deadline.",
        "counter",
        () => [{ labels: {}, value: leases.fallbacks }],
      ),
    );
  }
  add(
    new Scraped(
      "svc_store_read_duration_seconds",
      "Time each batched read of meter values from the store took.",
      "histogram",
      () => histogramSamples("svc_store_read_duration_seconds", deps.meters.readLatency, {}),
    ),
  );
  const budgetSamples = (counts: ReadonlyMap<string, number>): Sample[] =>
    [...counts].map(([key, value]) => {
      const [kind = "", scope = ""] = key.split("\u0001");
      return { labels: { kind, scope }, value };
    });
  add(
    new Scraped(
      "svc_mail_budget_refused_total",
      "Mails refused because a mail budget was spent, by mail kind and budget scope (this process).",
      "counter",
      () => budgetSamples(deps.mailBudget.counts().refused),
    ),
  );
  add(
    new Scraped(
      "svc_mail_budget_warnings_total",
      "Site mail ceilings crossed their warning level (80%) in a window, by mail kind (this process).",
      "counter",
      () => budgetSamples(deps.mailBudget.counts().warned),
    ),
  );
  add(
    new Scraped(
      "svc_outbox_backlog",
      "Mails waiting to be sent (pending or being sent); absent when the store did not answer in time.",
      "gauge",
      async () => {
        try {
          return [{ labels: {}, value: await withinDeadline(deps.outbox.backlog(), deps.config.readDeadlineMs) }];
        } catch {
          return [];
        }
      },
    ),
  );
  add(
    new Scraped(
      "svc_jobs",
      "Background jobs by kind and state (queued, running, dead); absent when the store did not answer in time.",
      "gauge",
      async () => {
        try {
          const stats = await withinDeadline(deps.jobs.stats(), deps.config.readDeadlineMs);
          return stats.flatMap((k) =>
            (["queued", "running", "dead"] as const).map((state) => ({
              labels: { kind: k.kind, state },
              value: k[state],
            })),
          );
        } catch {
          return [];
        }
      },
    ),
  );
  add(
    new Scraped(
      "svc_jobs_oldest_age_seconds",
      "Seconds since the oldest job still owed was first enqueued, by kind (0 when none is owed).",
      "gauge",
      async () => {
        try {
          const stats = await withinDeadline(deps.jobs.stats(), deps.config.readDeadlineMs);
          const now = deps.now();
          return stats.map((k) => ({
            labels: { kind: k.kind },
            value: k.oldest === null ? 0 : Math.max(0, (now - Date.parse(k.oldest)) / 1000),
          }));
        } catch {
          return [];
        }
      },
    ),
  );
  // Read from the catalog at most every 30 s (src/ops/store-sizes.ts); absent when the store did not answer in time.
  const sizes = async (pick: (s: StoreSizesSnapshot) => Sample[]): Promise<Sample[]> => {
    try {
      return pick(await withinDeadline(deps.storeSizes.read(), deps.config.readDeadlineMs));
    } catch {
      return [];
    }
  };
  add(
    new Scraped("svc_store_database_bytes", "Size of the database on disk (pg_database_size).", "gauge", () =>
      sizes((s) => [{ labels: {}, value: s.databaseBytes }]),
    ),
  );
  add(
    new Scraped(
      "svc_store_table_rows",
      "Rows per table, Postgres' estimate (pg_class.reltuples); absent for a table never vacuumed or analysed.",
      "gauge",
      () =>
        sizes((s) => s.tables.flatMap((t) => (t.rows === null ? [] : [{ labels: { table: t.table }, value: t.rows }]))),
    ),
  );
  add(
    new Scraped(
      "svc_store_table_bytes",
      "Bytes per table with its indexes and TOAST (pg_total_relation_size).",
      "gauge",
      () => sizes((s) => s.tables.map((t) => ({ labels: { table: t.table }, value: t.bytes }))),
    ),
  );
  return registry;
}
