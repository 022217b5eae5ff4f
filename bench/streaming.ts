/**
 * Streaming: closed-loop batches of 1,000 rows to POST /v1/streaming/{pipeline} from a few
 * concurrent clients, each batch over 1,000 distinct readers with a window newer than the last,
 * so every row lands (an upsert per row, one statement per batch). Reports rows per second
 * landed and the per-request latency (p50 / p95 / p99).
 */
import { admin, cli, mapLimit, type ServerHandle } from "./server";
import { BENCH_SITE, STREAMING_PIPELINE } from "./site";
import { percentileSorted, round, summarise } from "./stats";
import { prng } from "./workload";

export const STREAMING_BATCH_ROWS = 1_000;
const SEGMENTS = ["new", "casual", "loyal", "lapsing"] as const;

export interface StreamingResult {
  batch_rows: number;
  clients: number;
  readers: number;
  requests: number;
  rows_sent: number;
  rows_received: number;
  /** Rows refused, by reason (none expected). */
  rejected: Record<string, number>;
  status_other: number;
  duration_s: number;
  rows_per_s: number;
  p50_ms: number;
  p95_ms: number;
  p99_ms: number;
  max_ms: number;
}

export interface StreamingOptions {
  server: ServerHandle;
  /** Distinct readers the batches cycle through (at least one batch's worth per client). */
  readers: number;
  clients: number;
  durationS: number;
  /** Distinguishes the readers' emails of one run from another's on the same server. */
  label: string;
}

/** Creates the scenario's readers and a streaming:write key (CLI), then drives the load. */
export async function runStreaming(o: StreamingOptions): Promise<StreamingResult> {
  const { key } = await cli<{ key: string }>(o.server, [
    "keys",
    "issue",
    BENCH_SITE,
    "--name",
    `streaming ${o.label}`,
    "--permission",
    "streaming:write",
  ]);
  const readers = Math.max(o.readers, STREAMING_BATCH_ROWS * o.clients);
  const users = await mapLimit(
    Array.from({ length: readers }, (_, i) => i),
    8,
    async (i) =>
      (
        await admin<{ user: { id: string } }>(o.server, "POST", "/tenants/default/users", {
          email: `streamed-${o.label}-${i}@bench.example`,
        })
      ).user.id,
  );

  const rand = prng(31);
  let sequence = 0;
  // Windows must lie within 10 years before and 1 day after the server's clock: start a week back.
  const firstWindow = Date.now() - 7 * 86_400_000;
  // Client c writes its own share of the readers, 1,000 at a time, each batch with a window one
  // second past the previous one: a client's batches never race each other, so every row lands.
  const share = Math.floor(users.length / o.clients);
  const nextBody = (c: number, k: number) => {
    const windowEnd = firstWindow + sequence++ * 1_000;
    const rows = new Array(STREAMING_BATCH_ROWS);
    for (let i = 0; i < STREAMING_BATCH_ROWS; i++) {
      const row: Record<string, unknown> = {
        user_id: users[c * share + ((k * STREAMING_BATCH_ROWS + i) % share)],
        window_end: windowEnd,
        score: round(rand(), 4),
        visits: Math.floor(rand() * 50),
      };
      if (rand() < 0.2) row.churn_risk = rand() < 0.5;
      if (rand() < 0.1) row.segment = SEGMENTS[Math.floor(rand() * SEGMENTS.length)];
      rows[i] = row;
    }
    return JSON.stringify({ rows });
  };

  const url = `${o.server.url}/v1/streaming/${STREAMING_PIPELINE}`;
  const headers = { "x-api-key": key, "content-type": "application/json" };
  const latencies: number[] = [];
  const rejected: Record<string, number> = {};
  let received = 0;
  let other = 0;
  const started = performance.now();
  const until = started + o.durationS * 1000;
  const client = async (c: number) => {
    for (let k = 0; performance.now() < until; k++) {
      const body = nextBody(c, k);
      const t0 = performance.now();
      const res = await fetch(url, { method: "POST", headers, body });
      const text = await res.text();
      latencies.push(performance.now() - t0);
      if (res.status !== 200) {
        other += 1;
        continue;
      }
      const reply = JSON.parse(text) as { received: number; rejected: Record<string, number> };
      received += reply.received;
      for (const [reason, count] of Object.entries(reply.rejected)) rejected[reason] = (rejected[reason] ?? 0) + count;
    }
  };
  await Promise.all(Array.from({ length: o.clients }, (_, c) => client(c)));
  const elapsedS = (performance.now() - started) / 1000;
  const s = summarise(Float64Array.from(latencies));
  const p95 = percentileSorted(Float64Array.from(latencies).sort(), 0.95);
  return {
    batch_rows: STREAMING_BATCH_ROWS,
    clients: o.clients,
    readers,
    requests: latencies.length,
    rows_sent: latencies.length * STREAMING_BATCH_ROWS,
    rows_received: received,
    rejected,
    status_other: other,
    duration_s: round(elapsedS, 2),
    rows_per_s: round(received / elapsedS, 0),
    p50_ms: s.p50_ms,
    p95_ms: round(p95),
    p99_ms: s.p99_ms,
    max_ms: s.max_ms,
  };
}
