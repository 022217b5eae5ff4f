/** The console table and the results file (`bench/results/<timestamp>.json`). */
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { DriveResult } from "./closed-loop";
import type { ClusterResult } from "./cluster";
import type { MemoryResult, ReadBackResult } from "./memory";
import type { OverLimitResult } from "./over-limit";
import type { MachineInfo, SystemUsage, sourceState } from "./proc";
import type { ProfileSummary } from "./profile";
import type { RecommendationCacheResult } from "./recommendations";
import type { SegmentSummary } from "./saturation";
import type { ScalingResult } from "./scaling";
import { printSoak, type SoakResults } from "./soak-report";
import type { SpecRateResult } from "./spec-rate";
import { round } from "./stats";
import type { StreamingResult } from "./streaming";
import type { WrkResult } from "./wrk";

type SourceState = ReturnType<typeof sourceState>;

export type ClosedLoopResult = WrkResult & { generator: string; segments?: SegmentSummary[] };

export interface Target {
  target: string;
  measured: number | string | boolean | null;
  met: boolean | null;
}

export interface BenchResults {
  timestamp: string;
  mode: string;
  store: string;
  machine: MachineInfo;
  versions: { bun: string; node: string; wrk: string; cc: string };
  /** The project's code at the start (main server) and when the memory server started. */
  source?: { at_start: SourceState; at_memory_server?: SourceState };
  config: Record<string, unknown>;
  setup?: Record<string, unknown>;
  /** One request per reader of the pools before measuring: each a meter miss (cold subject). */
  prime?: DriveResult & { generator: string; subjects: number };
  ceiling?: ClosedLoopResult & { server: string };
  saturation?: ClosedLoopResult & { ratio_to_ceiling: number | null; keys: number };
  spec_rate?: SpecRateResult;
  /** The same open-loop schedule against the bare Bun.serve: what the sender and machine add. */
  open_loop_floor?: SpecRateResult;
  over_limit?: OverLimitResult;
  /** 1,000-row batches to POST /v1/streaming/{pipeline}: rows landed per second, latency per request. */
  streaming?: StreamingResult;
  /** The same with one client: a single writer's latency, without queueing behind other writers. */
  streaming_one_writer?: StreamingResult;
  /** Keyed GET /v1/recommendations answered from the 15-minute cache: latency per request. */
  recommendation_cache?: RecommendationCacheResult;
  /** One server process and two on one Postgres server (DATABASE_URL only; not in smoke runs). */
  cluster?: ClusterResult | { skipped: string };
  /** Server CPU per request as features defined and readers known grow (not in smoke runs). */
  scaling?: ScalingResult;
  memory?: MemoryResult;
  /** Stored size over simulated weeks with the clock injected (bench/soak.ts). */
  soak?: SoakResults;
  /** Stored subjects read back by a server restarted over the memory scenario's data. */
  read_back?: ReadBackResult;
  /** The memory scenario's latest sample while it runs (kept when a run is interrupted). */
  memory_progress?: { subjects_touched: number; rss_mb: number; elapsed_s: number };
  /** Set when the run was stopped early (signal, time limit); the scenarios present are real. */
  interrupted?: string;
  targets?: Record<string, Target>;
  /**
   * Machine-wide CPU per scenario: busy cores, interrupts (loopback networking), the hypervisor's
   * steal (cores our guest wanted but another guest got) and what neither the generator nor the
   * server used: well above zero means other processes shared the machine.
   */
  contention?: Record<string, Contention>;
  /** The decide server under `bun --cpu-prof` (--profile): the saturation and spec-rate windows. */
  profile?: { saturation?: ProfileSummary; spec_rate?: ProfileSummary; file?: string; error?: string };
  errors: string[];
  duration_s?: number;
}

/**
 * The targets judged for a run: none for a smoke run, which only shows that the bench runs (its
 * seconds-long windows measure nothing a target could be judged on).
 */
export function targetsFor(r: BenchResults): Record<string, Target> | undefined {
  if (r.mode === "smoke") return undefined;
  const all = evaluateTargets(r);
  return r.config.scenario === "soak" && all.soak_flat ? { soak_flat: all.soak_flat } : all;
}

export function evaluateTargets(r: BenchResults): Record<string, Target> {
  const t: Record<string, Target> = {};
  const ratio = r.saturation?.ratio_to_ceiling ?? null;
  t.saturation_ratio = {
    target: ">= 0.40 of the Bun.serve ceiling",
    measured: ratio,
    met: ratio === null ? null : ratio >= 0.4,
  };
  const p99 = r.spec_rate?.p99_ms ?? null;
  t.spec_rate_p99 = { target: "p99 <= 1 ms at the spec rate", measured: p99, met: p99 === null ? null : p99 <= 1 };
  const floor = r.open_loop_floor?.p99_ms ?? null;
  t.open_loop_floor_p99 = {
    target:
      "(context) the sender's own p99 against a bare Bun.serve; above 1 ms the spec p99 target cannot be shown here",
    measured: floor,
    met: null,
  };
  const s429 = r.spec_rate?.status_429 ?? null;
  t.spec_rate_429 = { target: "zero 429s at the spec rate", measured: s429, met: s429 === null ? null : s429 === 0 };
  const rowsPerS = r.streaming?.rows_per_s ?? null;
  t.streaming_rows_per_s = {
    target: ">= 20,000 streaming rows/s in 1,000-row batches",
    measured: rowsPerS,
    met: rowsPerS === null ? null : rowsPerS >= 20_000,
  };
  const oneWriterP95 = r.streaming_one_writer?.p95_ms ?? null;
  t.streaming_p95 = {
    target: "p95 < 50 ms per 1,000-row streaming request (one writer)",
    measured: oneWriterP95,
    met: oneWriterP95 === null ? null : oneWriterP95 < 50,
  };
  const streamingP95 = r.streaming?.p95_ms ?? null;
  t.streaming_p95_concurrent = {
    target: `(context) p95 per 1,000-row request with ${r.streaming?.clients ?? "several"} writers at once`,
    measured: streamingP95,
    met: null,
  };
  const recommendationP99 = r.recommendation_cache?.p99_ms ?? null;
  t.recommendation_cache_hit_p99 = {
    target: "p99 <= 2 ms for a keyed recommendation answered from the cache",
    measured: recommendationP99,
    met: recommendationP99 === null ? null : recommendationP99 <= 2,
  };
  const admitted = r.over_limit?.admitted_per_window ?? null;
  t.over_limit_exact = {
    target: "exactly 2,000 admitted per window, every refusal with Retry-After",
    measured: admitted ? admitted.join(", ") : null,
    met: r.over_limit ? r.over_limit.exact && r.over_limit.every_refusal_had_retry_after : null,
  };
  const runs = r.cluster && "runs" in r.cluster ? r.cluster.runs : null;
  t.cluster_exact = {
    target: "one and two processes: exactly 2,000 admitted per window, every refusal with Retry-After",
    measured: runs ? runs.map((c) => `${c.workers}: ${c.admitted_per_window.join("/")}`).join("; ") : null,
    met: runs ? runs.every((c) => c.exact && c.every_refusal_had_retry_after) : null,
  };
  t.cluster_false_429 = {
    target: "false 429s at most 0.1% of requests offered at the limit",
    measured: runs ? runs.map((c) => `${c.workers}: ${c.false_429}/${c.at_limit_requests}`).join("; ") : null,
    met: runs ? runs.every((c) => c.false_429_rate <= 0.001) : null,
  };
  const m = r.memory;
  t.memory_rss = {
    target: "< 300 MB RSS with 1,000,000 meter subjects",
    measured: m ? `${m.rss_mb} MB at ${m.subjects_touched} subjects` : null,
    met: m?.rss_mb_at_1m_subjects != null ? m.rss_mb_at_1m_subjects < 300 : null,
  };
  const f = r.soak?.flatness;
  t.soak_flat = {
    target: `stored size flat after the first simulated month: from week ${f?.fromWeek ?? 6}, the later weeks peak within ${(f?.tolerance ?? 0.05) * 100}% of the earlier`,
    measured: f ? `${(f.growth * 100).toFixed(1)}% (weeks ${f.fromWeek}-${f.toWeek})` : null,
    met: f?.held ?? null,
  };
  return t;
}

export interface Contention {
  machine_busy_cores: number;
  interrupt_cores: number;
  steal_cores: number | null;
  other_cores: number | null;
}

/** Machine-wide CPU over a scenario, and what neither our generator nor our server used (`ours`). */
export function contentionOf(usage: SystemUsage, ours: number): Contention {
  return {
    machine_busy_cores: usage.busy,
    interrupt_cores: usage.irq,
    steal_cores: Number.isNaN(usage.steal) ? null : usage.steal,
    other_cores: Number.isNaN(usage.busy) ? null : round(Math.max(0, usage.busy - usage.irq - usage.steal - ours), 2),
  };
}

/** Other processes' CPU above this (cores, averaged over a scenario) is called out under the table. */
const OTHER_NOTE_CORES = 0.25;
/** Steal at or above this is called out too. */
const STEAL_NOTE_CORES = 0.05;

/** The lines printed under the table for scenarios that shared the machine or lost CPU to steal. */
export function contentionNotes(contention: BenchResults["contention"]): string[] {
  const entries = Object.entries(contention ?? {});
  const notes: string[] = [];
  const noisy = entries.filter(([, c]) => (c.other_cores ?? 0) > OTHER_NOTE_CORES);
  if (noisy.length > 0) {
    notes.push(
      `note: other processes used CPU during ${noisy.map(([k, c]) => `${k} (${c.other_cores} cores)`).join(", ")}`,
    );
  }
  const stolen = entries.filter(([, c]) => (c.steal_cores ?? 0) >= STEAL_NOTE_CORES);
  if (stolen.length > 0) {
    notes.push(
      `note: the hypervisor took CPU from this machine (steal) during ${stolen.map(([k, c]) => `${k} (${c.steal_cores} cores)`).join(", ")}; those rows ran slower than the machine can, so compare them with care`,
    );
  }
  return notes;
}

/** "over N alternating segments, ratio a–b": how steady the machine was while measuring. */
function segmentsNote(decide: SegmentSummary[] | undefined, bare: SegmentSummary[] | undefined): string {
  if (!decide || !bare || decide.length < 2 || bare.length !== decide.length) return "";
  const ratios = decide.map((d, i) => d.rps / ((bare[i] as SegmentSummary).rps || Number.NaN));
  return ` (${decide.length} alternating segments, each ${fmt(Math.min(...ratios), 3)}–${fmt(Math.max(...ratios), 3)})`;
}

const fmt = (v: number | null | undefined, digits = 2) =>
  v === null || v === undefined || Number.isNaN(v) ? "-" : v.toLocaleString("en-US", { maximumFractionDigits: digits });

/** One row per scenario, printed with console.table. */
export function printTable(r: BenchResults): void {
  const rows: Record<string, string>[] = [];
  const cpu = (gen?: number | null, srv?: number | null) => `gen ${fmt(gen)} / srv ${fmt(srv)}`;
  if (r.prime) {
    const p = r.prime;
    rows.push({
      scenario: `prime (${fmt(p.subjects, 0)} cold subjects)`,
      generator: "closed-loop",
      throughput: `${fmt(p.rps, 0)} req/s`,
      "p50 / p99 / p99.9 ms": "-",
      result: `200s ${p.status_200}; other ${p.status_other + p.no_response}`,
      "cpu cores": cpu(p.generator_cpu_cores, p.server_cpu_cores),
    });
  }
  if (r.ceiling) {
    const c = r.ceiling;
    rows.push({
      scenario: "ceiling (bare Bun.serve)",
      generator: "wrk",
      throughput: `${fmt(c.rps, 0)} req/s`,
      "p50 / p99 / p99.9 ms": `${fmt(c.p50_ms, 3)} / ${fmt(c.p99_ms, 3)} / ${fmt(c.p999_ms, 3)}`,
      result: `non-2xx ${c.non_2xx}`,
      "cpu cores": cpu(c.generator_cpu_cores, c.server_cpu_cores),
    });
  }
  if (r.saturation) {
    const s = r.saturation;
    rows.push({
      scenario: `saturation (${s.keys} keys)`,
      generator: "wrk",
      throughput: `${fmt(s.rps, 0)} req/s`,
      "p50 / p99 / p99.9 ms": `${fmt(s.p50_ms, 3)} / ${fmt(s.p99_ms, 3)} / ${fmt(s.p999_ms, 3)}`,
      result: `${fmt(s.ratio_to_ceiling, 3)} of ceiling${segmentsNote(s.segments, r.ceiling?.segments)}; non-200 ${fmt(s.non_2xx_share * 100, 3)}%`,
      "cpu cores": cpu(s.generator_cpu_cores, s.server_cpu_cores),
    });
  }
  if (r.spec_rate) {
    const s = r.spec_rate;
    rows.push({
      scenario: `spec rate (${s.keys} keys x ${s.per_key_per_window}/10 s)`,
      generator: "open-loop",
      throughput: `${fmt(s.achieved_rps, 0)} req/s`,
      "p50 / p99 / p99.9 ms": `${fmt(s.p50_ms, 3)} / ${fmt(s.p99_ms, 3)} / ${fmt(s.p999_ms, 3)}`,
      result: `429s ${s.status_429}; other ${s.status_other + s.no_response}; send lag p99 ${fmt(s.send_lag_p99_ms, 3)} ms`,
      "cpu cores": cpu(s.generator_cpu_cores, s.server_cpu_cores),
    });
  }
  if (r.open_loop_floor) {
    const s = r.open_loop_floor;
    rows.push({
      scenario: `open-loop floor (same schedule, bare Bun.serve)`,
      generator: "open-loop",
      throughput: `${fmt(s.achieved_rps, 0)} req/s`,
      "p50 / p99 / p99.9 ms": `${fmt(s.p50_ms, 3)} / ${fmt(s.p99_ms, 3)} / ${fmt(s.p999_ms, 3)}`,
      result: `send lag p99 ${fmt(s.send_lag_p99_ms, 3)} ms; write delay p99 ${fmt(s.write_delay_p99_ms, 3)} ms`,
      "cpu cores": cpu(s.generator_cpu_cores, s.server_cpu_cores),
    });
  }
  if (r.over_limit) {
    const o = r.over_limit;
    rows.push({
      scenario: `over limit (1 key, ${o.offered_per_window.join("/")} offered)`,
      generator: "open-loop",
      throughput: "-",
      "p50 / p99 / p99.9 ms": "-",
      result: `admitted ${o.admitted_per_window.join("/")}; Retry-After ${o.refusals_with_retry_after}/${o.refusals}`,
      "cpu cores": cpu(o.generator_cpu_cores, null),
    });
  }
  for (const st of [r.streaming_one_writer, r.streaming]) {
    if (!st) continue;
    const refused = Object.entries(st.rejected).map(([k, v]) => `${k} ${v}`);
    rows.push({
      scenario: `streaming (${st.clients} client${st.clients === 1 ? "" : "s"} x ${fmt(st.batch_rows, 0)}-row batches)`,
      generator: "closed-loop (fetch)",
      throughput: `${fmt(st.rows_per_s, 0)} rows/s`,
      "p50 / p99 / p99.9 ms": `${fmt(st.p50_ms, 3)} / ${fmt(st.p99_ms, 3)} / - (p95 ${fmt(st.p95_ms, 3)})`,
      result: `${st.requests} requests; rejected ${refused.length ? refused.join(", ") : "none"}; other ${st.status_other}`,
      "cpu cores": "-",
    });
  }
  if (r.recommendation_cache) {
    const rc = r.recommendation_cache;
    rows.push({
      scenario: `recommendation cache hits (${rc.clients} clients)`,
      generator: "closed-loop (fetch)",
      throughput: `${fmt(rc.rps, 0)} req/s`,
      "p50 / p99 / p99.9 ms": `${fmt(rc.p50_ms, 3)} / ${fmt(rc.p99_ms, 3)} / -`,
      result: `${rc.requests} requests; engine calls ${rc.engine_calls}; other ${rc.status_other}`,
      "cpu cores": "-",
    });
  }
  for (const sc of r.scaling?.runs ?? []) {
    rows.push({
      scenario: `scaling (${fmt(sc.features_defined, 0)} features, ${fmt(sc.readers_known, 0)} readers known)`,
      generator: "closed-loop",
      throughput: `${fmt(sc.requests, 0)} requests`,
      "p50 / p99 / p99.9 ms": "-",
      result: `${fmt(sc.server_cpu_us_per_request, 1)} µs server CPU per request; other ${sc.status_other}`,
      "cpu cores": "-",
    });
  }
  if (r.cluster && "runs" in r.cluster) {
    for (const c of r.cluster.runs) {
      rows.push({
        scenario: `cluster (${c.workers} process${c.workers === 1 ? "" : "es"}, ${c.at_limit_keys + 1} keys)`,
        generator: "open-loop",
        throughput: `${fmt(c.requests, 0)} requests`,
        "p50 / p99 / p99.9 ms": "-",
        result: `admitted ${c.admitted_per_window.join("/")}; false 429 ${c.false_429}; ${fmt(c.db_xacts_per_request, 3)} db xacts/req; ${fmt(c.server_cpu_us_per_request, 1)} µs CPU/req`,
        "cpu cores": "-",
      });
    }
  }
  if (r.memory) {
    const m = r.memory;
    rows.push({
      scenario: `memory (${fmt(m.subjects_touched, 0)} subjects)`,
      generator: "closed-loop",
      throughput: `${fmt(m.rps, 0)} req/s`,
      "p50 / p99 / p99.9 ms": "-",
      result: `RSS ${fmt(m.rss_mb, 1)} MB settled ${m.settled ? "" : "(not quiet) "}after ${fmt(m.settle_s, 0)} s (at load end ${fmt(m.rss_mb_at_load_end, 1)}, once quiet ${fmt(m.rss_mb_at_quiet, 1)}, baseline ${fmt(m.rss_mb_baseline, 1)}, peak ${fmt(m.rss_mb_peak, 1)})`,
      "cpu cores": cpu(m.generator_cpu_cores, m.server_cpu_cores),
    });
  }
  if (r.read_back) {
    const b = r.read_back;
    rows.push({
      scenario: `read back (${fmt(b.sent, 0)} stored subjects, restarted server)`,
      generator: "closed-loop",
      throughput: `${fmt(b.rps, 0)} req/s`,
      "p50 / p99 / p99.9 ms": "-",
      result: `200s ${b.status_200}; other ${b.status_other}; no answer ${b.no_response}${b.time_limit_hit ? "; time limit hit" : ""}`,
      "cpu cores": cpu(b.generator_cpu_cores, b.server_cpu_cores),
    });
  }
  if (r.soak) {
    const k = r.soak;
    const last = k.results.at(-1);
    rows.push({
      scenario: `soak (${fmt(k.mix.readers, 0)} readers, ${k.weeks} simulated weeks)`,
      generator: "in-process, clock injected",
      throughput: "-",
      "p50 / p99 / p99.9 ms": "-",
      result: last
        ? `database ${fmt(last.databaseBytes / 1e6, 2)} MB at week ${last.week}, ${fmt(last.storedBytesPerLiveReader, 0)} B stored per live reader; ${k.flatness.held === null ? "too short to judge flatness" : k.flatness.held ? "flat" : "NOT flat"}`
        : "no week measured",
      "cpu cores": "-",
    });
  }
  console.log(`\nsvc bench (${r.mode}, ${r.store} store) on ${r.machine.cores} cores, ${r.machine.cpu_model}`);
  console.table(rows);
  for (const note of contentionNotes(r.contention)) console.log(note);
  if (r.soak) printSoak(r.soak);
  if (r.mode === "smoke") {
    console.log("smoke run: it checks that the bench runs; no target is judged (run --quick or a full run).");
  } else if (r.targets) {
    console.table(
      Object.fromEntries(
        Object.entries(r.targets).map(([k, t]) => [
          k,
          { target: t.target, measured: String(t.measured), met: t.met === null ? "n/a" : t.met ? "yes" : "NO" },
        ]),
      ),
    );
  }
}

export function writeResults(dir: string, r: BenchResults): string {
  mkdirSync(dir, { recursive: true });
  const file = join(dir, `${r.timestamp.replace(/[:.]/g, "-")}.json`);
  writeFileSync(file, `${JSON.stringify(r, null, 2)}\n`);
  return file;
}
