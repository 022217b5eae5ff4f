/**
 * What a counter flush costs the request thread: `npx bun --smol bench/flush-cost.ts [root]`
 * (with `taskset -c 0` in front, the embedded store's thread shares the request thread's core as
 * in the pinned bench).
 *
 * Serves svc in this process (bench/in-process.ts) with the flush timer off, answers 60,000 keyed
 * decide requests and flushes 60 times (250 requests each) to warm the flush's code. Then ROUNDS
 * times (default 10): answers 1,250 more (a 250 ms flush interval's worth at 5,000 req/s), waits
 * 20 ms, and flushes each counter by hand. Prints, per counter, the request thread's CPU
 * (`/proc/thread-self/schedstat`, so the embedded store's thread is not in it), the embedded
 * store's thread's CPU (the thread named `Worker`) and the wall time until the flush was durable.
 * Then as many flushes again with a 0 ms timer running, for the longest the event loop went
 * without running it during each (`NO_FLUSH=1`: a 40 ms wait
 * instead, the timer's own resolution; its ticks cost CPU, hence the separate rounds). Then the
 * request thread's CPU in 10 ms of waiting with no flush (its idle cost, ROUNDS times), and its
 * CPU and the wall time of 200 `select 1` round trips, one at a time: one statement's fixed cost.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import type { Flushable } from "../src/counters/flusher";
import { serveInProcess } from "./in-process";
import { median } from "./stats";

const root = process.argv[2] ?? join(import.meta.dir, "..");
const rounds = Number(process.env.ROUNDS ?? 10);
const { deps, run } = await serveInProcess(root, { SVC_FLUSH_INTERVAL_MS: "60000" });
/** A thread's time on a CPU, ms (this thread's by default). */
const threadCpuMs = (stat = "/proc/thread-self/schedstat") => Number(readFileSync(stat, "utf8").split(" ")[0]) / 1e6;
/** The embedded store's thread: the process' thread named `Worker` (Bun's name for a worker thread). */
const storeThread = readdirSync("/proc/self/task")
  .map((tid) => `/proc/self/task/${tid}`)
  .find((dir) => readFileSync(`${dir}/comm`, "utf8").trim() === "Worker");
if (storeThread === undefined) throw new Error("no thread named Worker: is the embedded store running in its thread?");
const storeCpuMs = () => threadCpuMs(`${storeThread}/schedstat`);

await run(60_000);
// The flush's own code warmed too (a server flushes 4 times a second): 60 flushes of 250 requests.
for (let i = 0; i < 60; i++) {
  await run(250);
  await deps.flusher.flushAll();
}
// The server's modules are imported by path (any checkout), so their types are named here.
const parts: readonly Flushable[] = deps.flusher.parts;
const seen = new Map<string, { cpu: number[]; store: number[]; wall: number[] }>(
  parts.map((p) => [p.name, { cpu: [], store: [], wall: [] }]),
);
for (let r = 0; r < rounds; r++) {
  await run(1_250);
  await Bun.sleep(20);
  for (const part of parts) {
    const cpu = threadCpuMs();
    const store = storeCpuMs();
    const wall = performance.now();
    await part.flush();
    seen.get(part.name)?.cpu.push(threadCpuMs() - cpu);
    seen.get(part.name)?.store.push(storeCpuMs() - store);
    seen.get(part.name)?.wall.push(performance.now() - wall);
  }
}
// Then, apart (its own ticks cost the thread CPU), the event loop's longest gap during a flush.
let last = performance.now();
let longest = 0;
const probe = setInterval(() => {
  const now = performance.now();
  longest = Math.max(longest, now - last);
  last = now;
}, 0);
const blocks: number[] = [];
for (let r = 0; r < rounds; r++) {
  await run(1_250);
  await Bun.sleep(20);
  last = performance.now();
  longest = 0;
  // `NO_FLUSH=1`: the same wait with no flush, for the gap the timer shows on its own.
  if (process.env.NO_FLUSH === "1") await Bun.sleep(40);
  else await deps.flusher.flushAll();
  blocks.push(longest);
}
clearInterval(probe);
// And the same thread's CPU while it only waits as long as a flush does: its idle cost, for comparison.
const idle: number[] = [];
for (let r = 0; r < rounds; r++) {
  const cpu = threadCpuMs();
  await Bun.sleep(10);
  idle.push(threadCpuMs() - cpu);
}
// The mean too: a collection every few flushes lands in one counter's flush, beyond the median.
const fmt = (xs: number[]) =>
  `median ${median(xs).toFixed(2)} (${Math.min(...xs).toFixed(2)}–${Math.max(...xs).toFixed(2)}), mean ${(xs.reduce((a, b) => a + b, 0) / xs.length).toFixed(2)}`;
console.log(`${rounds} flushes of 1,250 requests' counters (ms):`);
for (const [name, s] of seen) {
  console.log(`  ${name}: request thread CPU ${fmt(s.cpu)}, store thread CPU ${fmt(s.store)}, wall ${fmt(s.wall)}`);
}
console.log(`  longest event-loop block per flush: ${fmt(blocks)}`);
console.log(`  request thread CPU in 10 ms of waiting, no flush: ${fmt(idle)}`);
const cpu = threadCpuMs();
const wall = performance.now();
for (let i = 0; i < 200; i++) await deps.database.db.execute(sql`select 1`);
console.log(
  `select 1 round trip: request thread CPU ${((threadCpuMs() - cpu) / 200).toFixed(3)} ms, wall ${((performance.now() - wall) / 200).toFixed(2)} ms`,
);
process.exit(0);
