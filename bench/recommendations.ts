/**
 * Recommendation cache hits: the keyed GET /v1/recommendations for one URL, answered from the
 * 15-minute cache after one engine call. The engine is a small stand-in on 127.0.0.1 speaking
 * Recombee's answer shape (the server's client signs its calls; the stand-in does not check
 * them: the tests do). Closed loop, a few clients, one request at a time each. Reports the
 * per-request latency (p50 / p99) and how many engine calls the run made (1 expected).
 */
import { admin, cli, type ServerHandle } from "./server";
import { BENCH_SITE } from "./site";
import { round, summarise } from "./stats";

export interface RecommendationCacheResult {
  clients: number;
  requests: number;
  status_other: number;
  engine_calls: number;
  duration_s: number;
  rps: number;
  p50_ms: number;
  p99_ms: number;
  max_ms: number;
}

export async function runRecommendationCache(o: {
  server: ServerHandle;
  clients: number;
  durationS: number;
}): Promise<RecommendationCacheResult> {
  let engineCalls = 0;
  const engine = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch() {
      engineCalls += 1;
      return Response.json({ recommId: "bench-recomm", recomms: [{ id: "1" }, { id: "2" }, { id: "3" }] });
    },
  });
  try {
    await admin(o.server, "PUT", "/tenants/default/services/recombee", {
      databaseId: "bench",
      token: "bench-token",
      baseUri: `http://127.0.0.1:${engine.port}`,
    });
    const { key } = await cli<{ key: string }>(o.server, ["keys", "issue", BENCH_SITE, "--name", "recommendations"]);
    const url = `${o.server.url}/v1/recommendations?userId=bench-reader&scenario=homepage&count=3&edition=bench`;
    const headers = { "x-api-key": key };
    const warm = await fetch(url, { headers });
    await warm.text();
    if (warm.status !== 200) throw new Error(`recommendations answered ${warm.status} while warming`);
    const latencies: number[] = [];
    let other = 0;
    const started = performance.now();
    const until = started + o.durationS * 1000;
    const client = async () => {
      while (performance.now() < until) {
        const t0 = performance.now();
        const res = await fetch(url, { headers });
        await res.arrayBuffer();
        latencies.push(performance.now() - t0);
        if (res.status !== 200) other += 1;
      }
    };
    await Promise.all(Array.from({ length: o.clients }, () => client()));
    const elapsedS = (performance.now() - started) / 1000;
    const s = summarise(Float64Array.from(latencies));
    return {
      clients: o.clients,
      requests: latencies.length,
      status_other: other,
      engine_calls: engineCalls,
      duration_s: round(elapsedS, 2),
      rps: round(latencies.length / elapsedS, 0),
      p50_ms: s.p50_ms,
      p99_ms: s.p99_ms,
      max_ms: s.max_ms,
    };
  } finally {
    engine.stop(true);
  }
}

/**
 * On its own: `npx bun bench/recommendations.ts [clients] [seconds] [rounds]`, against a fresh
 * embedded server with the bench site; prints one JSON line per round.
 */
if (import.meta.main) {
  const { mkdtempSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const { startDecideServer } = await import("./server");
  const { setupSite } = await import("./workload");
  const [clients = 4, seconds = 5, rounds = 3] = process.argv.slice(2).map(Number);
  const server = await startDecideServer({ label: "recommendations" });
  try {
    await setupSite(server, mkdtempSync(join(tmpdir(), "svc-bench-rec-")));
    for (let i = 0; i < rounds; i++) {
      console.log(JSON.stringify(await runRecommendationCache({ server, clients, durationS: seconds })));
    }
  } finally {
    await server.stop();
  }
}
