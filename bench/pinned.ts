/**
 * The pinned bench: `npm run bench -- --pin [--quick] [--rounds N] [--transports h1,bun,node,h1-thread,h1-noholes]
 * [--compare DIR]...` (DIR: another checkout, e.g. a worktree of an earlier commit, whose svc runs
 * on the first transport in the same rounds, so a before and after share the machine's drift).
 *
 * Every server runs on CPU 0 and every load generator on CPU 1 (`taskset`), so the server's
 * throughput and its CPU per request are its own and not a share of a core it fights the
 * generator for. In one run it measures, in alternating segments (round after round, each
 * server in turn): the bare `Bun.serve` ceiling (bench/ceiling-server.ts), a minimal hand-written
 * decide on `Bun.serve` (bench/minimal-decide.ts), the same fixed answer as the ceiling over our
 * own transport (bench/bare-h1-server.ts), and svc (`bun --smol src/main.ts`, embedded
 * store, or a fresh database on DATABASE_URL's server when it is set) over each SVC_HTTP_SERVER
 * transport asked for (`h1-thread`: h1 served by the decide thread, SVC_DECIDE_THREAD=on; `h1-noholes`: h1 with
 * MIMALLOC_PURGE_HOLES=0). Per server: req/s under wrk (closed loop,
 * 64 connections, 300 keys rotating, 5 features a request, signed content, a count meter), the
 * server's CPU µs per request (utime + stime from /proc/<pid>/stat over the segment, divided by
 * the requests it answered), the share of the ceiling, and p50/p99 at a fixed 5,000 req/s from
 * the open-loop sender (bench/open-loop.c), in rounds as well (each server's window in turn, each
 * 2 s after the last load). Medians over the rounds. Each server is measured alone on CPU 0: the
 * others are stopped (SIGSTOP) during its segments and windows, and the bench's own process runs on
 * CPU 1 (bench/alone.ts). Writes bench/results/pinned-<timestamp>.json.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { IDLE_QUIET_MS } from "../src/runtime/idle-collection";
import { CoreShare, pinHarness } from "./alone";
import { buildRequest, RequestPool } from "./http-conn";
import { answeredLatencies, ensureOpenLoopSender, runOpenLoop } from "./open-loop";
import { busyCores, cleanupAll, commandOutput, cpuSeconds, machineInfo, sourceState } from "./proc";
import { type CeilingServer, startCeilingServer, writeLoadFiles } from "./saturation";
import { ROOT, type ServerHandle, startDecideServer } from "./server";
import { BENCH_SITE, buildBenchSite, optionalFeatures } from "./site";
import { median, percentileSorted, round } from "./stats";
import { buildBodies, issueKeys, setupSite, signArticles } from "./workload";
import { ensureWrk, runWrk } from "./wrk";

const SERVER_CPUS = "0";
const GENERATOR_CPUS = "1";
const KEYS = 300;
const FIXED_RATE = 5_000;

interface PinnedConfig {
  rounds: number;
  segmentS: number;
  warmupS: number;
  fixedS: number;
  transports: string[];
  /** Other checkouts whose svc runs beside this one's, on the first transport, in the same rounds. */
  compare: string[];
}

/**
 * What `--transports` may name, each with svc's environment and what its row says: SVC_HTTP_SERVER's
 * values, h1 served by the decide thread, and h1 with the allocator's hole sweeps off
 * (docs/deploying.md, "Tail latency").
 */
const SVC_MODES: Record<string, { readonly env: Record<string, string>; readonly setting: string }> = {
  h1: { env: { SVC_HTTP_SERVER: "h1" }, setting: "SVC_HTTP_SERVER=h1" },
  bun: { env: { SVC_HTTP_SERVER: "bun" }, setting: "SVC_HTTP_SERVER=bun" },
  node: { env: { SVC_HTTP_SERVER: "node" }, setting: "SVC_HTTP_SERVER=node" },
  "h1-thread": { env: { SVC_HTTP_SERVER: "h1", SVC_DECIDE_THREAD: "on" }, setting: "SVC_DECIDE_THREAD=on" },
  "h1-noholes": { env: { SVC_HTTP_SERVER: "h1", MIMALLOC_PURGE_HOLES: "0" }, setting: "MIMALLOC_PURGE_HOLES=0" },
};
const MODE_NAMES = Object.keys(SVC_MODES).join(",");

export function parsePinned(argv: readonly string[]): PinnedConfig {
  const args = argv.filter((a) => a !== "--" && a !== "--pin");
  const quick = args.includes("--quick");
  const cfg: PinnedConfig = quick
    ? { rounds: 3, segmentS: 4, warmupS: 3, fixedS: 6, transports: ["h1", "bun", "node"], compare: [] }
    : { rounds: 3, segmentS: 10, warmupS: 5, fixedS: 15, transports: ["h1", "bun", "node"], compare: [] };
  for (let i = 0; i < args.length; i++) {
    const a = args[i] as string;
    if (a === "--quick") continue;
    if (a === "--rounds") cfg.rounds = Number(args[++i]);
    else if (a === "--transports") cfg.transports = String(args[++i]).split(",");
    else if (a === "--compare") cfg.compare.push(String(args[++i]));
    else
      throw new Error(
        `unknown argument ${a} (pinned mode: --pin [--quick] [--rounds N] [--transports ${MODE_NAMES}] [--compare DIR]...)`,
      );
  }
  const unknown = cfg.transports.filter((t) => !Object.hasOwn(SVC_MODES, t));
  if (unknown.length > 0) throw new Error(`--transports names ${unknown.join(", ")}: use one of ${MODE_NAMES}`);
  if (!Number.isInteger(cfg.rounds) || cfg.rounds < 1) throw new Error("--rounds needs a positive integer");
  return cfg;
}

function log(message: string): void {
  console.log(`[bench --pin ${new Date().toISOString().slice(11, 19)}] ${message}`);
}

interface Target {
  label: string;
  pid: number;
  port: number;
  keysFile: string;
  bodiesFile: string;
  keys: readonly string[];
  stop(): Promise<unknown>;
}

interface Segment {
  rps: number;
  cpu_us_per_request: number;
  p99_ms: number;
  non_2xx: number;
}

async function segment(target: Target, workDir: string, durationS: number): Promise<Segment> {
  const before = cpuSeconds(target.pid);
  const out = await runWrk({
    url: `http://127.0.0.1:${target.port}`,
    threads: 1,
    connections: 64,
    durationS,
    keysFile: target.keysFile,
    bodiesFile: target.bodiesFile,
    site: BENCH_SITE,
    workDir,
    cpus: GENERATOR_CPUS,
  });
  const cpu = cpuSeconds(target.pid) - before;
  return {
    rps: out.rps,
    cpu_us_per_request: round((cpu / Math.max(1, out.requests)) * 1e6, 1),
    p99_ms: out.p99_ms,
    non_2xx: out.non_2xx,
  };
}

async function fixedRate(target: Target, bodies: readonly string[], seconds: number) {
  const headersOf = (i: number) => ({
    "x-svc-site-id": BENCH_SITE,
    "x-api-key": target.keys[i % target.keys.length] as string,
    "content-type": "application/json",
  });
  const pool = RequestPool.from(
    bodies.map((b, i) => buildRequest("/v1/decide", headersOf(i), b)),
    bodies.length,
  );
  const n = FIXED_RATE * seconds;
  const start = Date.now() + 1_500;
  const sendAtEpoch = new Float64Array(n);
  const requestOf = new Uint32Array(n);
  for (let i = 0; i < n; i++) {
    sendAtEpoch[i] = start + (i * 1000) / FIXED_RATE;
    requestOf[i] = i % pool.size;
  }
  const before = cpuSeconds(target.pid);
  const r = await runOpenLoop({
    port: target.port,
    requests: pool,
    sendAtEpoch,
    requestOf,
    connections: 64,
    cpus: GENERATOR_CPUS,
  });
  const cpu = cpuSeconds(target.pid) - before;
  const latencies = answeredLatencies(r).sort();
  let non200 = 0;
  for (const status of r.status) if (status !== 200) non200++;
  return {
    rate: FIXED_RATE,
    seconds,
    answered: latencies.length,
    non_200: non200,
    p50_ms: round(percentileSorted(latencies, 0.5)),
    p99_ms: round(percentileSorted(latencies, 0.99)),
    p999_ms: round(percentileSorted(latencies, 0.999)),
    cpu_us_per_request: round((cpu / Math.max(1, latencies.length)) * 1e6, 1),
    sender_realtime: r.realtime,
  };
}

type FixedWindow = Awaited<ReturnType<typeof fixedRate>>;

/** The fixed-rate windows' medians, with every window kept. */
function fixedSummary(windows: readonly FixedWindow[]) {
  const mid = (pick: (w: FixedWindow) => number) => round(median(windows.map(pick)), 3);
  return {
    rate: FIXED_RATE,
    p50_ms: mid((w) => w.p50_ms),
    p99_ms: mid((w) => w.p99_ms),
    p999_ms: mid((w) => w.p999_ms),
    non_200: windows.reduce((n, w) => n + w.non_200, 0),
    windows,
  };
}

async function startSvc(transport: string, workDir: string, bodies: readonly string[], root?: string): Promise<Target> {
  const commit = root === undefined ? undefined : commandOutput(["git", "-C", root, "rev-parse", "--short", "HEAD"]);
  const name = commit === undefined ? transport : `${transport}-${commit}`;
  const mode = SVC_MODES[transport] as (typeof SVC_MODES)[string];
  const server: ServerHandle = await startDecideServer({
    label: `pinned-${name}`,
    root,
    cpus: SERVER_CPUS,
    env: mode.env,
    // DATABASE_URL set: svc on a fresh database of that Postgres server (its process unpinned).
    databaseUrl: process.env.DATABASE_URL,
  });
  const dir = join(workDir, name);
  mkdirSync(dir, { recursive: true });
  await setupSite(server, dir);
  const keys = await issueKeys(server, KEYS, `pinned-${transport}`);
  const files = writeLoadFiles(dir, keys, bodies);
  return {
    label: commit === undefined ? `svc (${mode.setting})` : `svc at ${commit} (${mode.setting})`,
    pid: server.pid,
    port: server.port,
    keys,
    ...files,
    stop: () => server.stop(),
  };
}

function bare(
  label: string,
  server: CeilingServer,
  keys: readonly string[],
  files: { keysFile: string; bodiesFile: string },
): Target {
  return { label, pid: server.pid, port: server.port, keys, ...files, stop: () => server.stop() };
}

/** Runs the pinned bench; returns the exit code. */
export async function runPinnedBench(argv: readonly string[]): Promise<number> {
  const cfg = parsePinned(argv);
  const busy = await busyCores();
  log(`${cfg.rounds} rounds of ${cfg.segmentS} s per server; ${busy} cores busy before the start`);
  await ensureWrk();
  await ensureOpenLoopSender();
  if (!pinHarness(GENERATOR_CPUS)) log(`could not move the bench's own threads to CPU ${GENERATOR_CPUS}`);
  const workDir = mkdtempSync(join(tmpdir(), "svc-bench-pinned-"));
  const targets: Target[] = [];
  let share: CoreShare | undefined;
  try {
    const articles = signArticles(2_000, Date.now());
    const optional = optionalFeatures(buildBenchSite());
    const bodies = buildBodies({ count: 20_000, articles, optional, devices: 5_000, users: [], seed: 12 });
    for (const transport of cfg.transports) targets.push(await startSvc(transport, workDir, bodies));
    // Other commits' svc in the same rounds: a before and after whose drift falls on both alike.
    for (const root of cfg.compare) targets.push(await startSvc(cfg.transports[0] ?? "h1", workDir, bodies, root));
    const first = targets[0] as Target;
    const answerFile = join(workDir, "decide-answer.json");
    const sample = await fetch(`http://127.0.0.1:${first.port}/v1/decide`, {
      method: "POST",
      headers: {
        "x-svc-site-id": BENCH_SITE,
        "x-api-key": first.keys[0] as string,
        "content-type": "application/json",
      },
      body: bodies[0],
    });
    writeFileSync(answerFile, await sample.text());
    const files = { keysFile: first.keysFile, bodiesFile: first.bodiesFile };
    const ceiling = await startCeilingServer(answerFile, { cpus: SERVER_CPUS });
    const minimal = await startCeilingServer(answerFile, {
      cpus: SERVER_CPUS,
      script: "bench/minimal-decide.ts",
      env: { MINIMAL_KEYS_FILE: first.keysFile },
    });
    const bareH1 = await startCeilingServer(answerFile, { cpus: SERVER_CPUS, script: "bench/bare-h1-server.ts" });
    targets.unshift(
      bare("bare Bun.serve (ceiling)", ceiling, first.keys, files),
      bare("bare h1 transport (same fixed answer)", bareH1, first.keys, files),
      bare("minimal decide on Bun.serve", minimal, first.keys, files),
    );

    for (const t of targets) {
      log(`warming ${t.label}`);
      await segment(t, workDir, cfg.warmupS);
    }
    // From here each server runs alone on CPU 0 while it is measured (bench/alone.ts); a resumed
    // server first runs what came due while it was stopped, then its quiet-time collection.
    share = new CoreShare(targets.map((t) => t.pid));
    const settleMs = IDLE_QUIET_MS * 2;
    const segments = new Map<Target, Segment[]>(targets.map((t) => [t, []]));
    for (let r = 0; r < cfg.rounds; r++) {
      for (const t of targets) {
        await share.alone(t.pid, settleMs);
        const s = await segment(t, workDir, cfg.segmentS);
        segments.get(t)?.push(s);
        log(`round ${r + 1} ${t.label}: ${s.rps} req/s, ${s.cpu_us_per_request} µs CPU/request`);
      }
    }
    // The tail in rounds too: one window's p99 moves by several times on a noisy machine. Each
    // window starts 2 s after its server was resumed, the others stopped: what came due while it
    // was stopped and its quiet-time collection (svc's, 1-1.5 s after its last answer, a full
    // collection) are over by then.
    const windows = new Map<Target, FixedWindow[]>(targets.map((t) => [t, []]));
    for (let r = 0; r < cfg.rounds; r++) {
      for (const t of targets) {
        await share.alone(t.pid, 0);
        await Bun.sleep(IDLE_QUIET_MS * 2);
        const w = await fixedRate(t, bodies.slice(0, 10_000), cfg.fixedS);
        windows.get(t)?.push(w);
        log(
          `round ${r + 1} ${t.label}: ${FIXED_RATE} req/s fixed for ${cfg.fixedS} s: p50 ${w.p50_ms} p99 ${w.p99_ms} ms`,
        );
      }
    }
    const ceilingRounds = segments.get(targets[0] as Target) ?? [];
    const rows = targets.map((t) => {
      const s = segments.get(t) ?? [];
      return {
        server: t.label,
        rps: round(median(s.map((x) => x.rps)), 0),
        share_of_ceiling: round(median(s.map((x, i) => x.rps / (ceilingRounds[i]?.rps ?? Number.NaN))), 3),
        cpu_us_per_request: round(median(s.map((x) => x.cpu_us_per_request)), 1),
        rounds: s,
        fixed: fixedSummary(windows.get(t) ?? []),
      };
    });
    console.log(
      "\n| server | req/s | share of bare Bun.serve | server CPU per request | p50 / p99 at 5,000 req/s fixed |",
    );
    console.log("|---|---:|---:|---:|---:|");
    for (const row of rows) {
      console.log(
        `| ${row.server} | ${row.rps.toLocaleString("en")} | ${row.share_of_ceiling.toFixed(3)} | ${row.cpu_us_per_request} µs | ${row.fixed?.p50_ms} / ${row.fixed?.p99_ms} ms |`,
      );
    }
    const resultsDir = join(import.meta.dir, "results");
    mkdirSync(resultsDir, { recursive: true });
    const file = join(resultsDir, `pinned-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
    const machine = { ...machineInfo(), busy_cores_before_start: busy };
    writeFileSync(
      file,
      `${JSON.stringify({ config: cfg, machine, bun: Bun.version, wrk: commandOutput(["wrk", "-v"]).split("\n")[0], source: sourceState(ROOT), rows }, null, 2)}\n`,
    );
    log(`wrote ${file}`);
    return rows.some((row) => row.rounds.some((s) => s.non_2xx > 0) || (row.fixed?.non_200 ?? 0) > 0) ? 1 : 0;
  } finally {
    share?.resumeAll();
    for (const t of targets) await t.stop();
    await cleanupAll();
    rmSync(workDir, { recursive: true, force: true });
  }
}
