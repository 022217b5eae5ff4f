/**
 * Spec rate: K keys, each driven open loop at exactly 2,000 requests per aligned 10-second
 * window (5,000 req/s with 25 keys), latency measured from the intended send time.
 */
import { buildRequest, RequestPool } from "./http-conn";
import { answeredLatencies, OPEN_LOOP_GENERATOR, runOpenLoop } from "./open-loop";
import { procCpu } from "./proc";
import { buildSchedule, nextWindowStart, WINDOW_MS } from "./schedule";
import type { ServerHandle } from "./server";
import { BENCH_SITE } from "./site";
import { round, summarise } from "./stats";

export interface SpecRateResult {
  generator: string;
  keys: number;
  per_key_per_window: number;
  windows: number;
  aligned_to_windows: boolean;
  /** Connections opened up front (one request in flight each); the pool grows when all are busy. */
  connections: number;
  connections_used: number;
  /** Connections the sender closed after 5 s idle rather than reuse (bench/open-loop.ts). */
  connections_retired: number;
  planned_s: number;
  offered: number;
  completed: number;
  achieved_rps: number;
  p50_ms: number;
  p90_ms: number;
  p99_ms: number;
  p999_ms: number;
  max_ms: number;
  mean_ms: number;
  status_200: number;
  status_429: number;
  status_other: number;
  no_response: number;
  /** Highest count of 200s one key got in one aligned window (must not exceed 2,000). */
  max_admitted_per_key_window: number;
  /** Requests whose send and response fell in different windows (0 thanks to the tail guard). */
  boundary_straddles: number;
  send_lag_p99_ms: number;
  send_lag_max_ms: number;
  /** Write minus intended time: lag plus waiting for a free connection (the server holding them all). */
  write_delay_p99_ms: number;
  /** The sender was ready this late for the first send (0 unless set-up overran). */
  late_start_ms: number;
  /**
   * Set by the runner: how long it waited, before the first window, for the decide server to go
   * quiet (the store thread done writing the counters of the prime and warm-up loads), and
   * whether it did within the limit.
   */
  server_quiet_before?: { seconds: number; quiet: boolean };
  /** The sender ran as a real-time thread (bench/open-loop.c says why); false: its lag may show. */
  sender_realtime: boolean;
  generator_cpu_cores: number;
  server_cpu_cores: number;
  connection_errors: string[];
  /**
   * Requests slower than 5 ms by the phase of their intended send time within the server's
   * 250 ms flush interval (10 bins of 25 ms). A periodic stall (a flush blocking the event loop)
   * piles them into one or two bins; a flat spread means no periodic cause.
   */
  slow_by_flush_phase: number[];
  /** Latency per segment (aligned 10 s window), to show whether the tail grows as the run goes on. */
  by_window: { p50_ms: number; p99_ms: number; max_ms: number }[];
}

/** Key k's requests are [k * bodiesPerKey, (k + 1) * bodiesPerKey): each key sends its own bodies. */
export function buildSpecRequests(
  keys: readonly string[],
  bodies: readonly string[],
  bodiesPerKey: number,
): RequestPool {
  function* requests() {
    for (let key = 0; key < keys.length; key++) {
      const headers = {
        "x-svc-site-id": BENCH_SITE,
        "x-api-key": keys[key] as string,
        "content-type": "application/json",
      };
      for (let b = 0; b < bodiesPerKey; b++) {
        yield buildRequest("/v1/decide", headers, bodies[key * bodiesPerKey + b] as string);
      }
    }
  }
  return RequestPool.from(requests(), keys.length * bodiesPerKey);
}

export interface SpecRateOptions {
  /** The decide server, or the ceiling server to measure the sender's own floor. */
  server: Pick<ServerHandle, "port" | "pid">;
  keys: number;
  /** From buildSpecRequests. */
  requests: RequestPool;
  bodiesPerKey: number;
  windows: number;
  /** Smoke: one short unaligned segment of this many ms at the same per-key rate. */
  shortSegmentMs?: number;
  /** Start at this window boundary (epoch ms) instead of the next one. */
  startEpoch?: number;
  /** Connections opened before the first send (default: SPEC_CONNECTIONS, at least one per key). */
  connections?: number;
}

const PER_WINDOW = 2_000;
/**
 * Connections opened up front. The pool only grows when every connection is busy, and opening
 * one costs the sender about a millisecond of its own time, which shows up as send lag; with
 * enough open from the start, a short server stall does not make the sender late as well.
 */
export const SPEC_CONNECTIONS = 64;
/** The server's default SVC_FLUSH_INTERVAL_MS. */
const FLUSH_MS = 250;

export async function runSpecRate(o: SpecRateOptions): Promise<SpecRateResult> {
  const k = o.keys;
  const requests = o.requests;
  const short = o.shortSegmentMs;
  const segmentMs = short ?? WINDOW_MS;
  const perKey = short ? Math.round((PER_WINDOW * short) / WINDOW_MS) : PER_WINDOW;
  const segments = short ? 1 : o.windows;
  // The lead covers a full collection and connecting (runOpenLoop) before the first send.
  const startEpoch = o.startEpoch ?? (short ? Date.now() + 1_500 : nextWindowStart(1_500));
  const connections = o.connections ?? Math.max(k, SPEC_CONNECTIONS);
  const schedule = buildSchedule({
    keys: k,
    perKey,
    segments,
    segmentMs,
    startEpoch,
    requestsPerKey: o.bodiesPerKey,
  });
  const server = procCpu(o.server.pid);
  const r = await runOpenLoop({ port: o.server.port, requests, ...schedule, connections });
  const serverCpu = server.stop();

  let s200 = 0;
  let s429 = 0;
  let other = 0;
  let none = 0;
  let straddles = 0;
  const admitted = new Map<number, number>();
  for (let i = 0; i < r.status.length; i++) {
    const code = r.status[i];
    if (code === 200) {
      s200++;
      const window = Math.floor((r.sentEpoch[i] as number) / WINDOW_MS);
      const cell = window * 65_536 + (schedule.keyOf[i] as number);
      admitted.set(cell, (admitted.get(cell) ?? 0) + 1);
    } else if (code === 429) s429++;
    else if (code === 0) none++;
    else other++;
    if (
      code !== 0 &&
      Math.floor((r.sentEpoch[i] as number) / WINDOW_MS) !== Math.floor((r.recvEpoch[i] as number) / WINDOW_MS)
    ) {
      straddles++;
    }
  }
  const phase = new Array<number>(10).fill(0);
  for (let i = 0; i < r.latencyMs.length; i++) {
    if (!((r.latencyMs[i] as number) > 5)) continue;
    const bin = Math.floor(((schedule.sendAtEpoch[i] as number) % FLUSH_MS) / (FLUSH_MS / 10));
    phase[bin] = (phase[bin] as number) + 1;
  }
  const lat = summarise(answeredLatencies(r));
  const byWindow = Array.from({ length: segments }, (_, w) => {
    const l = summarise(answeredLatencies(r, (i) => schedule.segmentOf[i] === w));
    return { p50_ms: l.p50_ms, p99_ms: l.p99_ms, max_ms: l.max_ms };
  });
  const lag = summarise(r.sendLagMs.filter((v) => !Number.isNaN(v)));
  const writeDelay = summarise(r.writeDelayMs.filter((v) => !Number.isNaN(v)));
  const plannedS = (segments * segmentMs) / 1000;
  return {
    generator: OPEN_LOOP_GENERATOR,
    keys: k,
    per_key_per_window: short ? perKey : PER_WINDOW,
    windows: segments,
    aligned_to_windows: !short,
    connections,
    connections_used: r.connectionsUsed,
    connections_retired: r.connectionsRetired,
    planned_s: plannedS,
    offered: r.sends,
    completed: r.completed,
    achieved_rps: round(r.completed / plannedS, 1),
    p50_ms: lat.p50_ms,
    p90_ms: lat.p90_ms,
    p99_ms: lat.p99_ms,
    p999_ms: lat.p999_ms,
    max_ms: lat.max_ms,
    mean_ms: lat.mean_ms,
    status_200: s200,
    status_429: s429,
    status_other: other,
    no_response: none,
    max_admitted_per_key_window: Math.max(0, ...admitted.values()),
    boundary_straddles: straddles,
    send_lag_p99_ms: lag.p99_ms,
    send_lag_max_ms: lag.max_ms,
    write_delay_p99_ms: writeDelay.p99_ms,
    late_start_ms: round(r.lateStartMs),
    sender_realtime: r.realtime,
    generator_cpu_cores: round(r.sender.cores, 2),
    server_cpu_cores: round(serverCpu.cores, 2),
    connection_errors: r.connectionErrors,
    slow_by_flush_phase: phase,
    by_window: byWindow,
  };
}
