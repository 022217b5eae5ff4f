/**
 * What keyed decide allocates, by kind of object: `npx bun bench/decide-census.ts [root]`.
 *
 * Runs the server of the checkout at `root` (this one by default) in this process: the embedded
 * store in a fresh folder, the bench site deployed and 300 keys issued through the admin API, and
 * the h1 transport's socket handlers driven with sockets of our own (no kernel; what they are
 * handed is taken whole), 64 connections sending the pinned bench's keyed decide requests. After
 * a warm-up it collects, answers a few hundred requests, and counts the heap's objects by type
 * (`bun:jsc`'s `heapStats`, which counts what was allocated and not yet swept), so the census
 * less the one taken before is what those requests allocated. The window is short enough for no
 * collection to run in it; a window that saw one (the heap shrank) is measured again. Prints
 * objects per request by type, and CPU µs per request (all threads) of a longer run.
 */

import { heapStats } from "bun:jsc";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { drive, takeHandlers } from "./h1-driver";
import { benchBodies } from "./keyed-load";
import { BENCH_SITE, buildBenchSite } from "./site";

const root = process.argv[2] ?? join(import.meta.dir, "..");
const TOKEN = "census-operator-token-0123456789";
process.env.SVC_DATA_DIR = mkdtempSync(join(tmpdir(), "svc-census-"));
process.env.SVC_OPERATOR_TOKEN = TOKEN;
process.env.SVC_SEED_DEMO = "0";
process.env.SVC_LOG_LEVEL = "warn";
process.env.PORT = "0";
process.env.HOST = "127.0.0.1";
const { loadConfig } = await import(join(root, "src/config.ts"));
const { createDeps, startDeps } = await import(join(root, "src/deps.ts"));
const { createApp, listen } = await import(join(root, "src/app.ts"));

const deps = await createDeps(loadConfig());
await startDeps(deps);
const app = createApp(deps);
const admin = async (path: string, body: unknown) => {
  const response: Response = await app.handle(
    new Request(`http://127.0.0.1/admin${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}`, "content-type": "application/json" },
      body: JSON.stringify(body),
    }),
  );
  if (response.status >= 300) throw new Error(`${path}: ${response.status} ${await response.text()}`);
  return response.json();
};
await admin("/tenants", { id: "default", default: true });
await admin("/tenants/default/sites", { id: BENCH_SITE });
await admin(`/tenants/default/sites/${BENCH_SITE}/deploy`, { document: buildBenchSite() });
const keys: string[] = [];
for (let i = 0; i < 300; i++) {
  const issued = (await admin(`/tenants/default/sites/${BENCH_SITE}/keys`, { name: `census-${i}` })) as { key: string };
  keys.push(issued.key);
}
const requests = benchBodies().map((text, i) =>
  Buffer.from(
    `POST /v1/decide HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nx-svc-site-id: ${BENCH_SITE}\r\nx-api-key: ${keys[i % keys.length]}\r\n` +
      `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
  ),
);

// The transport's socket handlers, taken as `listen` hands them to Bun.listen (which still listens).
const driver = drive(
  takeHandlers(() => listen(app, deps), true),
  64,
);
let next = 0;
const run = (count: number) => driver.run(count, () => requests[next++ % requests.length] as Uint8Array);

await run(60_000);
const window = 640;
let census: { types: [string, number][]; answered: number } | undefined;
for (let attempt = 0; attempt < 10 && census === undefined; attempt++) {
  Bun.gc(true);
  const before = heapStats();
  const from = driver.counts.answered;
  await run(window);
  const after = heapStats();
  if (after.heapSize < before.heapSize) continue;
  const types = Object.entries(after.objectTypeCounts)
    .map(([type, n]) => [type, n - (before.objectTypeCounts[type] ?? 0)] as [string, number])
    .filter(([, n]) => n > 0)
    .sort((a, b) => b[1] - a[1]);
  census = { types, answered: driver.counts.answered - from };
}
const cpuFrom = process.cpuUsage();
const cpuAnswered = driver.counts.answered;
await run(100_000);
const cpu = process.cpuUsage(cpuFrom);
if (census === undefined) console.log("every window saw a collection: no census");
else {
  const n = census.answered;
  console.log(`${n} requests counted (${driver.counts.ok} of ${driver.counts.answered} answers 2xx)`);
  console.log(`objects per request: ${(census.types.reduce((a, [, c]) => a + c, 0) / n).toFixed(1)}`);
  for (const [type, count] of census.types.slice(0, 25)) console.log(`${(count / n).toFixed(2).padStart(8)}  ${type}`);
}
console.log(
  `CPU (all threads) µs per request over 100,000: ${((cpu.user + cpu.system) / (driver.counts.answered - cpuAnswered)).toFixed(2)}`,
);
process.exit(0);
