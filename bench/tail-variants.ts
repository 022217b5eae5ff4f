/**
 * Where keyed decide's tail comes from, by elimination: `VARIANTS='{"name":{"ENV":"value"},...}'
 * ROUNDS=N npx bun bench/tail-variants.ts`. Starts one svc per variant (its environment over the
 * bench's; `"BENCH_NO_SMOL":"1"` runs it without --smol), all on CPU 0 (embedded store, 300 keys,
 * the pinned bench's bodies), warms each with wrk for 5 s, then in each round sends each 5,000
 * req/s for 8 s from the open-loop sender on CPU 1 and prints p50, p99, p99.9 and the slowest
 * answer (ms). `REFERENCE=1` measures the minimal hand-written decide in each round too, and
 * `REFERENCE_VARIANTS='{"name":{"ENV":"value"}}'` more of it (bench/minimal-decide.ts: e.g.
 * `"MINIMAL_IMPORT":"src/app.ts,src/deps.ts"` holds svc's modules unused). Each round starts 3 s
 * after the last load, once every server's quiet-time collection (a full collection on CPU 0) is
 * over. `THREADS=1` prints each server's threads' CPU over each window (ms per second of load,
 * from /proc; svc's and the minimal decide's). `COMPILES=1` prints the
 * optimizing (DFG, FTL) compiles each svc made during each window (`BUN_JSC_reportCompileTimes`,
 * read from its output: bench/jit-compiles.ts). `GCS=1` prints the collections each server made
 * during each window, per heap and kind, with every stop of the world (`BUN_JSC_logGC`, read by
 * bench/gc-log.ts; the minimal decide's too with `REFERENCE=1`). `PERF_OUT=<path>` records the
 * server's core with `perf` for 6 s of the first round into `<path>.<server>` (scheduler events for
 * `bench/stall-report.ts sched`; `PERF_EVENTS=cpu-clock` samples call graphs instead). Each server
 * is measured alone on CPU 0: the others are stopped during its window, and this process runs on
 * CPU 1 (bench/alone.ts).
 */
import { dlopen, FFIType, ptr } from "bun:ffi";
import { closeSync, mkdtempSync, openSync, readSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { IDLE_QUIET_MS } from "../src/runtime/idle-collection";
import { CoreShare, pinHarness } from "./alone";
import { collectionsIn, describeCollections } from "./gc-log";
import { buildRequest, RequestPool } from "./http-conn";
import { compilesIn, describeCompiles } from "./jit-compiles";
import { answeredLatencies, ensureOpenLoopSender, runOpenLoop } from "./open-loop";
import { cleanupAll, threadCpu } from "./proc";
import { startCeilingServer, writeLoadFiles } from "./saturation";
import { startDecideServer } from "./server";
import { BENCH_SITE, buildBenchSite, optionalFeatures } from "./site";
import { percentileSorted } from "./stats";
import { buildBodies, issueKeys, setupSite, signArticles } from "./workload";
import { runWrk } from "./wrk";

await ensureOpenLoopSender();
if (!pinHarness("1")) console.log("could not move this process' threads to CPU 1");
const variants: Record<string, Record<string, string>> = JSON.parse(process.env.VARIANTS ?? '{"default":{}}');
const articles = signArticles(2_000, Date.now());
const optional = optionalFeatures(buildBenchSite());
const bodies = buildBodies({ count: 20_000, articles, optional, devices: 5_000, users: [], seed: 12 });
/** A server measured in the rounds: svc per variant, and the minimal decide with `REFERENCE=1`. */
interface Measured {
  name: string;
  server: { port: number; pid?: number; stop(): Promise<unknown> };
  keys: string[];
  /**
   * The server's output, when written to a file (TAIL_LOG_DIR, COMPILES=1 or GCS=1; the minimal
   * decide's only with GCS=1).
   */
  logFile?: string;
}
const compiles = process.env.COMPILES === "1";
const gcs = process.env.GCS === "1";
const logDir = process.env.TAIL_LOG_DIR ?? (compiles || gcs ? mkdtempSync(join(tmpdir(), "tail-log-")) : undefined);
/** The JavaScriptCore logging a run asks for (COMPILES, GCS), in each server's environment. */
const jscLogging: Record<string, string> = {
  ...(compiles ? { BUN_JSC_reportCompileTimes: "true" } : {}),
  ...(gcs ? { BUN_JSC_logGC: "true" } : {}),
};
const servers: Measured[] = [];
/** Warms a server with wrk for 5 s from CPU 1, as every server here is warmed. */
const warm = (url: string, files: ReturnType<typeof writeLoadFiles>, workDir: string) =>
  runWrk({ url, threads: 1, connections: 64, durationS: 5, ...files, site: BENCH_SITE, workDir, cpus: "1" });
let firstFiles: ReturnType<typeof writeLoadFiles> | undefined;
let firstWork = "";
for (const [name, env] of Object.entries(variants)) {
  const work = mkdtempSync(join(tmpdir(), "tail-"));
  const logFile = logDir === undefined ? undefined : join(logDir, `${name}.log`);
  const server = await startDecideServer({
    label: `tail-${name}`,
    cpus: "0",
    env: { ...env, ...jscLogging },
    smol: env.BENCH_NO_SMOL === undefined,
    profileDir: process.env.PROFILE_DIR,
    logFile,
  });
  await setupSite(server, work);
  const keys = await issueKeys(server, 300, `t${name}`);
  const files = writeLoadFiles(work, keys, bodies);
  await warm(server.url, files, work);
  servers.push({ name, server, keys, logFile });
  firstFiles ??= files;
  firstWork ||= work;
}
// `REFERENCE=1`: the minimal hand-written decide (bench/minimal-decide.ts, the pinned bench's) on
// CPU 0 too, measured in every round: what a server with none of svc's machinery gets that minute.
// `REFERENCE_VARIANTS='{"name":{"ENV":"value"}}'` adds more of it, each with its environment over
// the first's (e.g. `"MINIMAL_IMPORT":"src/app.ts,src/deps.ts"`: holding svc's modules, unused).
const first = servers[0];
if (process.env.REFERENCE === "1" && first !== undefined && firstFiles !== undefined) {
  const references: Record<string, Record<string, string>> = {
    minimal: {},
    ...JSON.parse(process.env.REFERENCE_VARIANTS ?? "{}"),
  };
  for (const [name, env] of Object.entries(references)) {
    const logFile = gcs && logDir !== undefined ? join(logDir, `${name}.log`) : undefined;
    const minimal = await startCeilingServer(join(firstWork, "unused-answer.json"), {
      cpus: "0",
      script: "bench/minimal-decide.ts",
      env: { MINIMAL_KEYS_FILE: firstFiles.keysFile, ...env, ...(gcs ? { BUN_JSC_logGC: "true" } : {}) },
      stderrFile: logFile,
      // Starting and warming a svc beside it, on one core, takes longer than a bare server.
      startupMs: env.MINIMAL_BESIDE_SVC === undefined ? undefined : 300_000,
    });
    await warm(`http://127.0.0.1:${minimal.port}`, firstFiles, firstWork);
    servers.push({ name, server: minimal, keys: first.keys, logFile });
  }
}
const share = new CoreShare(servers.flatMap(({ server }) => (server.pid === undefined ? [] : [server.pid])));
for (let round = 0; round < Number(process.env.ROUNDS ?? 2); round++) {
  for (const { name, server, keys, logFile } of servers) {
    if (server.pid !== undefined) await share.alone(server.pid, 0);
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
    // A server resumed runs what came due while it was stopped, and a server gone quiet (this one
    // after its warm-up or its last window) makes its quiet-time collection 1-1.5 s later: wait
    // them out before measuring.
    // `QUIET_S=<s>` waits longer (what a server that was quiet that long answers).
    await Bun.sleep(process.env.QUIET_S === undefined ? IDLE_QUIET_MS * 3 : Number(process.env.QUIET_S) * 1000);
    const start = Date.now() + 1_000;
    const sendAtEpoch = new Float64Array(n);
    const requestOf = new Uint32Array(n);
    for (let i = 0; i < n; i++) {
      sendAtEpoch[i] = start + i / 5;
      requestOf[i] = i % pool.size;
    }
    // `PERF_OUT=<path>`: the server's core for 6 s of the first round, into `<path>.<server>`.
    const perf =
      process.env.PERF_OUT === undefined || round !== 0
        ? undefined
        : Bun.spawn(
            [
              "perf",
              "record",
              "-q",
              "-e",
              process.env.PERF_EVENTS ?? "sched:sched_switch,sched:sched_wakeup",
              ...(process.env.PERF_EVENTS === undefined ? [] : ["-g"]),
              // On the clock the sender's send times are mapped to (the slow answers' file below).
              "-k",
              "CLOCK_MONOTONIC",
              "-C",
              "0",
              "-o",
              `${process.env.PERF_OUT}.${name}`,
              "--",
              "sleep",
              "6",
            ],
            { stdout: "ignore", stderr: "inherit" },
          );
    // `THREADS=1`: each of the server's threads' CPU over the window, ms per second of load.
    const logAt = (compiles || gcs) && logFile !== undefined ? statSync(logFile).size : undefined;
    const threadsBefore = process.env.THREADS === "1" && server.pid !== undefined ? threadCpu(server.pid) : undefined;
    const r = await runOpenLoop({
      port: server.port,
      requests: pool,
      sendAtEpoch,
      requestOf,
      connections: 64,
      cpus: "1",
    });
    if (threadsBefore !== undefined && server.pid !== undefined) {
      // Per second of the load (the window also holds the sender's second of lead and the tail).
      const seconds = n / 5_000;
      const used = [...threadCpu(server.pid)]
        .map(([thread, cpu]) => [thread, ((cpu - (threadsBefore.get(thread) ?? 0)) * 1000) / seconds] as const)
        .filter(([, ms]) => ms >= 0.5)
        .sort((a, b) => b[1] - a[1]);
      console.log(`  CPU ms per second by thread: ${used.map(([t, ms]) => `${t.trim()} ${ms.toFixed(1)}`).join(", ")}`);
    }
    if (logAt !== undefined && logFile !== undefined) {
      const output = readFrom(logFile, logAt);
      if (compiles && name !== "minimal") {
        console.log(`  optimizing compiles in the window: ${describeCompiles(compilesIn(output))}`);
      }
      if (gcs) for (const line of describeCollections(collectionsIn(output))) console.log(`  collections: ${line}`);
    }
    await perf?.exited;
    if (perf !== undefined) writeSlow(`${process.env.PERF_OUT}.${name}.slow.json`, r);
    if (process.env.STALLS !== undefined) printStalls(r, start, Number(process.env.STALLS) || 2);
    const lat = answeredLatencies(r).sort();
    console.log(
      `${round} ${name}: p50 ${percentileSorted(lat, 0.5).toFixed(3)} p99 ${percentileSorted(lat, 0.99).toFixed(3)} p999 ${percentileSorted(lat, 0.999).toFixed(3)} max ${lat[lat.length - 1]?.toFixed(1)} n ${lat.length}`,
    );
  }
}
share.resumeAll();
for (const { server } of servers) await server.stop();

/**
 * The answers slower than 1 ms (when each was meant to be sent, epoch ms, and its latency), with
 * the offset from the epoch to CLOCK_MONOTONIC (perf's clock here), for `bench/stall-report.ts
 * timeline`: what held the server's core during each stretch of slow answers.
 */
function writeSlow(file: string, r: Awaited<ReturnType<typeof runOpenLoop>>): void {
  const monotonicMinusEpochMs = monotonicMs() - Date.now();
  const slow: [number, number][] = [];
  for (let i = 0; i < r.latencyMs.length; i++) {
    const latency = r.latencyMs[i] as number;
    if (latency > 1 && r.status[i] !== 0) {
      slow.push([(r.sentEpoch[i] as number) - (r.writeDelayMs[i] as number), latency]);
    }
  }
  writeFileSync(file, JSON.stringify({ monotonicMinusEpochMs, slow }));
}

/** CLOCK_MONOTONIC in ms, as perf's `-k CLOCK_MONOTONIC` stamps events (Bun's hrtime has another origin). */
function monotonicMs(): number {
  const libc = dlopen("libc.so.6", { clock_gettime: { args: [FFIType.i32, FFIType.ptr], returns: FFIType.i32 } });
  const timespec = new BigInt64Array(2);
  libc.symbols.clock_gettime(1, ptr(timespec));
  return Number(timespec[0]) * 1000 + Number(timespec[1]) / 1e6;
}

/** A file's text from byte `at` on (what a server wrote since). */
function readFrom(file: string, at: number): string {
  const length = statSync(file).size - at;
  if (length <= 0) return "";
  const bytes = Buffer.alloc(length);
  const fd = openSync(file, "r");
  try {
    readSync(fd, bytes, 0, length, at);
  } finally {
    closeSync(fd);
  }
  return bytes.toString("utf8");
}

/**
 * `STALLS=<ms>`: the episodes in which answers took longer than <ms> (default 2), by when the
 * slow requests were meant to be sent (ms from the start) and the slowest answer in each, with the
 * gaps between episodes, so a periodic cause (a timer) shows as a regular gap.
 */
function printStalls(r: Awaited<ReturnType<typeof runOpenLoop>>, start: number, threshold: number): void {
  const episodes: { at: number; until: number; worst: number; count: number }[] = [];
  for (let i = 0; i < r.latencyMs.length; i++) {
    const latency = r.latencyMs[i] as number;
    if (!(latency > threshold)) continue;
    const sentAt = (r.sentEpoch[i] as number) - start;
    const last = episodes[episodes.length - 1];
    if (last !== undefined && sentAt - last.until < 5) {
      last.until = sentAt;
      last.worst = Math.max(last.worst, latency);
      last.count++;
    } else episodes.push({ at: sentAt, until: sentAt, worst: latency, count: 1 });
  }
  const gaps = episodes.slice(1).map((e, k) => Math.round(e.at - (episodes[k] as { at: number }).at));
  console.log(
    `  ${episodes.length} episodes over ${threshold} ms: ${episodes
      .map((e) => `${Math.round(e.at)}+${Math.round(e.until - e.at)}ms:${e.worst.toFixed(1)}(${e.count})`)
      .join(" ")}`,
  );
  console.log(`  gaps: ${gaps.join(" ")}`);
  // How much the episodes keep to one phase of a period (0: none, 1: all at one phase); about
  // 1/sqrt(episodes) by chance. A timer's work shows as a high value at its period.
  const phase = (period: number) => {
    let c = 0;
    let s = 0;
    for (const e of episodes) {
      c += Math.cos((2 * Math.PI * e.at) / period);
      s += Math.sin((2 * Math.PI * e.at) / period);
    }
    return (Math.hypot(c, s) / Math.max(1, episodes.length)).toFixed(2);
  };
  console.log(`  phase concentration at 100/250/500/1000 ms: ${[100, 250, 500, 1000].map(phase).join(" ")}`);
}
await cleanupAll();
