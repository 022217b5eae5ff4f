/**
 * What keyed decide allocates, by kind of object: `npx bun bench/decide-census.ts [root]`.
 *
 * Runs the server of the checkout at `root` (this one by default) in this process
 * (bench/in-process.ts: embedded store, the bench site, 300 keys, the h1 transport's handlers
 * driven with sockets of our own, 64 connections of the pinned bench's keyed decide). After
 * a warm-up it collects, answers a few hundred requests, and counts the heap's objects by type
 * (`bun:jsc`'s `heapStats`, which counts what was allocated and not yet swept), so the census
 * less the one taken before is what those requests allocated. The window is short enough for no
 * collection to run in it; a window that saw one (the heap shrank) is measured again. Prints
 * objects per request by type, and CPU µs per request (all threads) of a longer run.
 */

import { heapStats } from "bun:jsc";
import { join } from "node:path";
import { serveInProcess } from "./in-process";

const root = process.argv[2] ?? join(import.meta.dir, "..");
const { driver, run } = await serveInProcess(root);

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
