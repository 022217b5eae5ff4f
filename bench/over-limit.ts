/**
 * Over the limit: one fresh key offered 3,000 requests per aligned 10-second window (evenly
 * spaced, open loop) for three windows. Each window must admit exactly 2,000 and refuse the
 * rest with 429 and Retry-After.
 */
import { buildRequest, RequestPool } from "./http-conn";
import { OPEN_LOOP_GENERATOR, runOpenLoop } from "./open-loop";
import { buildSchedule, nextWindowStart, WINDOW_MS } from "./schedule";
import type { ServerHandle } from "./server";
import { BENCH_SITE } from "./site";
import { round } from "./stats";

export interface OverLimitResult {
  generator: string;
  windows: number;
  offered_per_window: number[];
  admitted_per_window: number[];
  refused_per_window: number[];
  refusals: number;
  refusals_with_retry_after: number;
  every_refusal_had_retry_after: boolean;
  status_other: number;
  no_response: number;
  /** Admitted exactly 2,000 in every window. */
  exact: boolean;
  generator_cpu_cores: number;
  /** Smoke: the offered load was squeezed into the first `squeezed_ms` of one window. */
  squeezed_ms?: number;
}

export interface OverLimitOptions {
  server: ServerHandle;
  key: string;
  bodies: readonly string[];
  windows: number;
  perWindow?: number;
  /** Smoke: offer the window's requests within this many ms instead of spreading them over 10 s. */
  squeezeMs?: number;
  startEpoch?: number;
}

const LIMIT = 2_000;

export async function runOverLimit(o: OverLimitOptions): Promise<OverLimitResult> {
  const perWindow = o.perWindow ?? 3_000;
  const headers = { "x-svc-site-id": BENCH_SITE, "x-api-key": o.key, "content-type": "application/json" };
  const requests = RequestPool.from(
    o.bodies.map((b) => buildRequest("/v1/decide", headers, b)),
    o.bodies.length,
  );
  let startEpoch = o.startEpoch ?? nextWindowStart(1_000);
  let segmentMs = WINDOW_MS;
  if (o.squeezeMs !== undefined) {
    // A fresh key starts at zero in the current window: burst now when it fits, else at the next boundary.
    segmentMs = o.squeezeMs + 110;
    const lead = Date.now() + 1_000;
    const windowEnd = Math.floor(lead / WINDOW_MS) * WINDOW_MS + WINDOW_MS;
    startEpoch = lead + segmentMs + 1_000 < windowEnd ? lead : nextWindowStart(200);
  }
  const schedule = buildSchedule({
    keys: 1,
    perKey: perWindow,
    segments: o.windows,
    segmentMs,
    startEpoch,
    requestsPerKey: requests.size,
  });
  const r = await runOpenLoop({ port: o.server.port, requests, ...schedule, connections: 4 });

  const offered = new Array<number>(o.windows).fill(0);
  const admitted = new Array<number>(o.windows).fill(0);
  const refused = new Array<number>(o.windows).fill(0);
  let withRetry = 0;
  let other = 0;
  let none = 0;
  const firstWindow = Math.floor(startEpoch / WINDOW_MS);
  for (let i = 0; i < r.status.length; i++) {
    const w = Math.floor((r.sentEpoch[i] as number) / WINDOW_MS) - firstWindow;
    const code = r.status[i];
    if (Number.isNaN(r.sentEpoch[i] as number) || w < 0 || w >= o.windows) {
      none++;
      continue;
    }
    offered[w] = (offered[w] as number) + 1;
    if (code === 200) admitted[w] = (admitted[w] as number) + 1;
    else if (code === 429) {
      refused[w] = (refused[w] as number) + 1;
      if (r.retryAfter[i]) withRetry++;
    } else if (code === 0) none++;
    else other++;
  }
  const refusals = refused.reduce((a, b) => a + b, 0);
  return {
    generator: OPEN_LOOP_GENERATOR,
    windows: o.windows,
    offered_per_window: offered,
    admitted_per_window: admitted,
    refused_per_window: refused,
    refusals,
    refusals_with_retry_after: withRetry,
    every_refusal_had_retry_after: refusals === withRetry,
    status_other: other,
    no_response: none,
    exact: admitted.every((a) => a === LIMIT),
    generator_cpu_cores: round(r.sender.cores, 2),
    ...(o.squeezeMs !== undefined ? { squeezed_ms: o.squeezeMs } : {}),
  };
}
