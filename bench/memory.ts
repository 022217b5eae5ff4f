/**
 * Memory: on a fresh server, touch N distinct meter subjects (each request names a new device
 * id; the paywall and recirculation features hold its seen and count meters), wait until the
 * server has written its backlog, run its quiet-time collection and gone quiet, and its RSS has
 * stopped falling, then read VmRSS from /proc/<pid>/status. Closed loop, keys rotated so no key reaches
 * its window. Bodies are built per request from pre-signed articles: only the device id varies,
 * nothing is signed here.
 */

import { IDLE_QUIET_MS } from "../src/runtime/idle-collection";
import { type DriveResult, driveClosedLoop } from "./closed-loop";
import { buildRequest } from "./http-conn";
import { rssMb, waitUntilQuiet, waitUntilRssSteady } from "./proc";
import type { ServerHandle } from "./server";
import { BENCH_SITE } from "./site";
import { round } from "./stats";
import { type Article, buildBody, prng } from "./workload";

export const CLOSED_LOOP_GENERATOR = "bench/closed-loop.ts (Bun.connect, HTTP/1.1 keep-alive, closed loop)";
const ONE_MILLION = 1_000_000;

/**
 * The closed loop's own counts come as it reports them (`rps`: requests that each name a new
 * subject, so every one is a meter miss).
 */
export interface MemoryResult
  extends Pick<
    DriveResult,
    | "status_other"
    | "no_response"
    | "duration_s"
    | "rps"
    | "time_limit_hit"
    | "server_cpu_cores"
    | "generator_cpu_cores"
  > {
  generator: string;
  store: string;
  subjects_target: number;
  /** Distinct subjects answered 200 (each request names a new one). */
  subjects_touched: number;
  /** Meters held per subject: `articles` (seen) and `api_views` (count). */
  meters_per_subject: number;
  /**
   * RSS after `subjects_touched`, once the server went quiet (its write backlog flushed) and its
   * RSS stopped falling; the one-million figure is set only when a million were touched.
   */
  rss_mb: number;
  /** RSS the moment the load stopped, before the backlog was written. */
  rss_mb_at_load_end: number;
  /** RSS once the server went quiet, before its RSS stopped falling (what was read until e35999f). */
  rss_mb_at_quiet: number;
  /**
   * Seconds from the end of the load until the server went quiet and its RSS stopped falling, and
   * whether both came in time.
   */
  settle_s: number;
  settled: boolean;
  rss_mb_at_1m_subjects: number | null;
  /** RSS of the fresh server after deploy and key issue, before any subject. */
  rss_mb_baseline: number;
  /** Growth per 1,000 subjects between the baseline and the end (null under 100,000 subjects). */
  rss_kb_per_1k_subjects: number | null;
  rss_mb_peak: number;
  rss_curve: { subjects: number; rss_mb: number }[];
  requests: number;
}

export interface MemoryOptions {
  server: ServerHandle;
  keys: readonly string[];
  articles: readonly Article[];
  optional: readonly string[];
  subjects: number;
  timeLimitS: number;
  /** Longest wait for the server to go quiet after the load. */
  settleLimitS: number;
  /** Called with every sample (every 5 s), so an interrupted run still knows how far it got. */
  onProgress?: (p: { subjects_touched: number; rss_mb: number; elapsed_s: number }) => void;
}

export async function runMemory(o: MemoryOptions): Promise<MemoryResult> {
  const requestFor = subjectRequests(o, 99);
  const baseline = rssMb(o.server.pid);
  const t0 = performance.now();
  const curve: { subjects: number; rss_mb: number }[] = [{ subjects: 0, rss_mb: round(baseline, 1) }];
  const run = await driveClosedLoop({
    port: o.server.port,
    serverPid: o.server.pid,
    count: o.subjects,
    timeLimitS: o.timeLimitS,
    requestFor: (n) => requestFor(n, n),
    onSample: (touched) => {
      const rss = round(rssMb(o.server.pid), 1);
      curve.push({ subjects: touched, rss_mb: rss });
      o.onProgress?.({ subjects_touched: touched, rss_mb: rss, elapsed_s: round((performance.now() - t0) / 1000, 1) });
      // A line every minute on long runs: the full run spends most of its time here.
      if (curve.length % 12 === 0) {
        console.log(`[bench] memory: ${touched.toLocaleString("en-US")} subjects touched, RSS ${rss} MB`);
      }
    },
    sampleMs: 5_000,
  });
  // Every request names a new subject, so the store's writes fall behind the load; the figure
  // is read once the server has written its backlog and gone quiet (its CPU near zero), and no
  // sooner than its quiet-time collection (src/runtime/idle-collection.ts: a check every half of
  // IDLE_QUIET_MS, so within twice it of the last answer), which hands the burst's garbage back.
  // Without that floor the read raced the collection: a server quiet at once was read before it.
  // And once quiet, until its RSS stops falling: on a slower machine the read came while the
  // collection was still handing memory back (`rss_mb_at_quiet`, the old read, against `rss_mb`;
  // bench/HISTORY.md, 2026-11-28, seventeenth session).
  const rssAtLoadEnd = rssMb(o.server.pid);
  await Bun.sleep(IDLE_QUIET_MS * 2);
  const quiet = await waitUntilQuiet(o.server.pid, o.settleLimitS);
  const rssAtQuiet = rssMb(o.server.pid);
  const steady = await waitUntilRssSteady(o.server.pid, Math.max(0, o.settleLimitS - quiet.seconds));
  const settled = {
    quiet: quiet.quiet && steady.steady,
    seconds: round(quiet.seconds + steady.seconds + (IDLE_QUIET_MS * 2) / 1000, 1),
  };
  const rss = steady.rssMb;
  const touched = run.status_200;
  curve.push({ subjects: touched, rss_mb: round(rss, 1) });
  return {
    generator: CLOSED_LOOP_GENERATOR,
    store: o.server.store,
    subjects_target: o.subjects,
    subjects_touched: touched,
    meters_per_subject: 2,
    rss_mb: round(rss, 1),
    rss_mb_at_load_end: round(rssAtLoadEnd, 1),
    rss_mb_at_quiet: round(rssAtQuiet, 1),
    settle_s: settled.seconds,
    settled: settled.quiet,
    rss_mb_at_1m_subjects: touched >= ONE_MILLION ? round(rss, 1) : null,
    rss_mb_baseline: round(baseline, 1),
    // Only meaningful once growth dwarfs garbage-collection noise (tens of MB either way).
    rss_kb_per_1k_subjects: touched >= 100_000 ? round(((rss - baseline) * 1024 * 1000) / touched, 1) : null,
    rss_mb_peak: round(rssMb(o.server.pid, "VmHWM"), 1),
    rss_curve: curve,
    requests: run.sent,
    status_other: run.status_other,
    no_response: run.no_response,
    duration_s: run.duration_s,
    rps: run.rps,
    time_limit_hit: run.time_limit_hit,
    server_cpu_cores: run.server_cpu_cores,
    generator_cpu_cores: run.generator_cpu_cores,
  };
}

/**
 * The memory and read-back scenarios' requests: the n-th goes to key n (mod the keys) and names
 * the subject `mem-<subject in base 36>`, with features and an article drawn from `seed`.
 */
export function subjectRequests(
  o: { keys: readonly string[]; articles: readonly Article[]; optional: readonly string[] },
  seed: number,
): (n: number, subject: number) => Uint8Array {
  const rand = prng(seed);
  const bodyOptions = { count: 0, articles: o.articles, optional: o.optional, devices: 0, users: [] };
  const headers = o.keys.map((key) => ({
    "x-svc-site-id": BENCH_SITE,
    "x-api-key": key,
    "content-type": "application/json",
  }));
  return (n, subject) =>
    buildRequest(
      "/v1/decide",
      headers[n % headers.length] as Record<string, string>,
      buildBody(rand, bodyOptions, { deviceId: `mem-${subject.toString(36)}` }),
    );
}

export interface ReadBackResult extends DriveResult {
  generator: string;
  store: string;
  /** Subjects the memory scenario stored; the read-back reads `sent` of them, spread evenly. */
  subjects_stored: number;
}

export interface ReadBackOptions {
  /** A server started over the memory scenario's data (`startDecideServer({ reuse })`). */
  server: ServerHandle;
  keys: readonly string[];
  articles: readonly Article[];
  optional: readonly string[];
  /** How many subjects the memory scenario stored (its `subjects_touched`). */
  stored: number;
  count: number;
  timeLimitS: number;
}

/**
 * Read back: one request for each of `count` subjects the memory scenario stored, on a freshly
 * started server, so every request reads its meters from Postgres (as every reader's first
 * request does after a restart or once its entries were dropped). The memory scenario itself only
 * touches new subjects, which the embedded store answers without a read.
 */
export async function runReadBack(o: ReadBackOptions): Promise<ReadBackResult> {
  const requestFor = subjectRequests(o, 101);
  const count = Math.min(o.count, o.stored);
  const run = await driveClosedLoop({
    port: o.server.port,
    serverPid: o.server.pid,
    count,
    timeLimitS: o.timeLimitS,
    requestFor: (n) => requestFor(n, Math.floor((n * o.stored) / count)),
  });
  return { generator: CLOSED_LOOP_GENERATOR, store: o.server.store, subjects_stored: o.stored, ...run };
}
