/**
 * Where keyed decide's tail comes from, by elimination: `VARIANTS='{"name":{"ENV":"value"},...}'
 * ROUNDS=N npx bun bench/tail-variants.ts`. Starts one svc per variant (its environment over the
 * bench's; `"BENCH_NO_SMOL":"1"` runs it without --smol), all on CPU 0 (embedded store, 300 keys,
 * the pinned bench's bodies), warms each with wrk for 5 s, then in each round sends each 5,000
 * req/s for 8 s from the open-loop sender on CPU 1 and prints p50, p99, p99.9 and the slowest
 * answer (ms).
 */
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildRequest, RequestPool } from "./http-conn";
import { answeredLatencies, ensureOpenLoopSender, runOpenLoop } from "./open-loop";
import { cleanupAll } from "./proc";
import { writeLoadFiles } from "./saturation";
import { startDecideServer } from "./server";
import { BENCH_SITE, buildBenchSite, optionalFeatures } from "./site";
import { percentileSorted } from "./stats";
import { buildBodies, issueKeys, setupSite, signArticles } from "./workload";
import { runWrk } from "./wrk";

await ensureOpenLoopSender();
const variants: Record<string, Record<string, string>> = JSON.parse(process.env.VARIANTS ?? '{"default":{}}');
const articles = signArticles(2_000, Date.now());
const optional = optionalFeatures(buildBenchSite());
const bodies = buildBodies({ count: 20_000, articles, optional, devices: 5_000, users: [], seed: 12 });
const servers = [];
for (const [name, env] of Object.entries(variants)) {
  const work = mkdtempSync(join(tmpdir(), "tail-"));
  const server = await startDecideServer({
    label: `tail-${name}`,
    cpus: "0",
    env,
    smol: env.BENCH_NO_SMOL === undefined,
  });
  await setupSite(server, work);
  const keys = await issueKeys(server, 300, `t${name}`);
  const files = writeLoadFiles(work, keys, bodies);
  await runWrk({
    url: server.url,
    threads: 1,
    connections: 64,
    durationS: 5,
    ...files,
    site: BENCH_SITE,
    workDir: work,
    cpus: "1",
  });
  servers.push({ name, server, keys });
}
for (let round = 0; round < Number(process.env.ROUNDS ?? 2); round++) {
  for (const { name, server, keys } of servers) {
    const pool = RequestPool.from(
      bodies.slice(0, 10_000).map((b, i) =>
        buildRequest(
          "/v1/decide",
          {
            "x-svc-site-id": BENCH_SITE,
            "x-api-key": keys[i % keys.length] as string,
            "content-type": "application/json",
          },
          b,
        ),
      ),
      10_000,
    );
    const n = 5_000 * 8;
    const start = Date.now() + 1_000;
    const sendAtEpoch = new Float64Array(n);
    const requestOf = new Uint32Array(n);
    for (let i = 0; i < n; i++) {
      sendAtEpoch[i] = start + i / 5;
      requestOf[i] = i % pool.size;
    }
    const r = await runOpenLoop({
      port: server.port,
      requests: pool,
      sendAtEpoch,
      requestOf,
      connections: 64,
      cpus: "1",
    });
    const lat = answeredLatencies(r).sort();
    console.log(
      `${round} ${name}: p50 ${percentileSorted(lat, 0.5).toFixed(3)} p99 ${percentileSorted(lat, 0.99).toFixed(3)} p999 ${percentileSorted(lat, 0.999).toFixed(3)} max ${lat[lat.length - 1]?.toFixed(1)} n ${lat.length}`,
    );
  }
}
for (const { server } of servers) await server.stop();
await cleanupAll();
