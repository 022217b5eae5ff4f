/**
 * Keyed decide's server CPU per request, thread by thread: `npx bun bench/thread-cpu.ts [seconds]`.
 *
 * Starts svc on CPU 0 (embedded store unless DATABASE_URL; SVC_HTTP_SERVER, h1 by default; more
 * server environment as JSON in SERVER_ENV), deploys the bench site, issues 300 keys, warms it
 * with wrk for 5 s on CPU 1, then loads it for `seconds` (10) as the pinned bench's svc rows are
 * loaded, and prints each of the server's threads' CPU µs per request over that window (utime +
 * stime of /proc/<pid>/task/<tid>/stat), grouped by thread name. With LOG_FILE and
 * SERVER_ENV='{"BUN_JSC_logGC":"1"}', also the bytes the request thread allocated per request.
 * SVC_ROOT runs another checkout's server (a worktree of an earlier commit) to compare.
 */
import { readFileSync } from "node:fs";
import { keyedLoad } from "./keyed-load";
import { cleanupAll, threadCpu } from "./proc";
import { startDecideServer } from "./server";

const seconds = Number(process.argv[2] ?? 10);

/**
 * What the heap with the most eden collections (the request thread's) allocated over a window of
 * `BUN_JSC_logGC=1` lines: each collection's size at its start less the size the one before it
 * left. Undefined without such lines.
 */
function allocatedKb(log: string): { kb: number; collections: number } | undefined {
  const heaps = new Map<string, { kb: number; collections: number; left: number | undefined }>();
  for (const m of log.matchAll(/\[GC<(0x[0-9a-f]+)>: START M (\d+)kb => (\w+)Collection.*?=> (\d+)kb, p=/g)) {
    const heap = heaps.get(m[1] as string) ?? { kb: 0, collections: 0, left: undefined };
    if (heap.left !== undefined) heap.kb += Number(m[2]) - heap.left;
    if (m[3] === "Eden") heap.collections++;
    heap.left = Number(m[4]);
    heaps.set(m[1] as string, heap);
  }
  return [...heaps.values()].sort((a, b) => b.collections - a.collections)[0];
}

const server = await startDecideServer({
  label: "threads",
  cpus: "0",
  databaseUrl: process.env.DATABASE_URL,
  // LOG_FILE: everything the server prints (with SERVER_ENV='{"BUN_JSC_logGC":"1"}', its collections).
  logFile: process.env.LOG_FILE,
  // SVC_ROOT: another checkout's server (a worktree of an earlier commit), to compare.
  root: process.env.SVC_ROOT,
  env: { SVC_HTTP_SERVER: process.env.SVC_HTTP_SERVER ?? "h1", ...JSON.parse(process.env.SERVER_ENV ?? "{}") },
});
try {
  const load = await keyedLoad(server, "threads");
  await load(5);
  // PERF_OUT=<file>: a `perf record` of the server (all threads, call graphs) over the window.
  const perf = process.env.PERF_OUT
    ? Bun.spawn(
        [
          "perf",
          "record",
          "-q",
          "-e",
          "cpu-clock",
          "-F",
          "2999",
          "-g",
          "-p",
          String(server.pid),
          "-o",
          process.env.PERF_OUT,
        ],
        {
          stdout: "ignore",
          stderr: "inherit",
        },
      )
    : undefined;
  const logFrom = process.env.LOG_FILE ? readFileSync(process.env.LOG_FILE, "latin1").length : 0;
  const before = threadCpu(server.pid);
  const measured = await load(seconds);
  const after = threadCpu(server.pid);
  const logged = process.env.LOG_FILE ? readFileSync(process.env.LOG_FILE, "latin1").slice(logFrom) : "";
  if (perf !== undefined) {
    perf.kill("SIGINT");
    await perf.exited;
  }
  const requests = measured.rps * seconds;
  console.log(`${measured.rps} req/s over ${seconds} s; server CPU µs per request by thread:`);
  let total = 0;
  const rows = [...after].map(([name, cpu]) => [name, ((cpu - (before.get(name) ?? 0)) * 1e6) / requests] as const);
  for (const [name, us] of rows.sort((a, b) => b[1] - a[1])) {
    total += us;
    if (us > 0) console.log(`${us.toFixed(1).padStart(7)}  ${name}`);
  }
  console.log(`${total.toFixed(1).padStart(7)}  all`);
  const allocated = allocatedKb(logged);
  if (allocated !== undefined) {
    console.log(
      `the busiest heap: ${allocated.collections} eden collections in the window, ` +
        `${((allocated.kb * 1024) / requests).toFixed(0)} bytes allocated per request`,
    );
  }
} finally {
  await server.stop();
  await cleanupAll();
}
