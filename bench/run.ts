/**
 * The load bench: `bun run bench [--quick | --smoke] [--keys N] [--profile]`.
 *
 * Starts the decide server as its own process (embedded Postgres, or a fresh database on
 * DATABASE_URL's server), deploys the bench site and issues keys through the CLI and admin API,
 * pre-generates signed requests, then runs: saturation and ceiling (wrk), spec rate and over
 * the limit (the open-loop sender), and memory (a fresh server touching N meter subjects).
 * Last, the soak (bench/soak.ts): stored size over simulated weeks, in this process with the
 * clock injected; `--scenario soak` runs it alone. Prints a table and writes
 * bench/results/<timestamp>.json.
 */
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { driveClosedLoop } from "./closed-loop";
import { runCluster } from "./cluster";
import { type BenchConfig, parseArgs } from "./config";
import { buildRequest, RequestPool } from "./http-conn";
import { CLOSED_LOOP_GENERATOR, runMemory, runReadBack } from "./memory";
import { ensureOpenLoopSender } from "./open-loop";
import { runOverLimit } from "./over-limit";
import { runPinnedBench } from "./pinned";
import {
  busyCores,
  cleanupAll,
  commandOutput,
  killAllSync,
  machineInfo,
  onCleanup,
  sourceState,
  systemCpu,
  waitUntilQuiet,
} from "./proc";
import { summariseProfile } from "./profile";
import { runRecommendationCache } from "./recommendations";
import { type BenchResults, contentionOf, printTable, targetsFor, writeResults } from "./report";
import { closedLoop, interleavedClosedLoops, startCeilingServer, writeLoadFiles } from "./saturation";
import { runScaling } from "./scaling";
import { nextWindowStart, WINDOW_MS } from "./schedule";
import { ROOT, type ServerHandle, startDecideServer } from "./server";
import { BENCH_SITE } from "./site";
import { buildSpecRequests, runSpecRate } from "./spec-rate";
import { round } from "./stats";
import { runStreaming, STREAMING_BATCH_ROWS } from "./streaming";
import { buildBodies, buildPrimeBodies, createUsers, issueKeys, setupSite, signArticles } from "./workload";
import { ensureWrk, wrkVersion } from "./wrk";

const RESULTS_DIR = join(import.meta.dir, "results");
/** Hard limits for the whole run, per mode (the bench never hangs CI). */
const TIME_LIMIT_S = { smoke: 90, quick: 480, full: 7_200 } as const;

function log(message: string): void {
  console.log(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}`);
}

async function timed<T>(label: string, fn: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  log(`${label}…`);
  const out = await fn();
  log(`${label} done in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return out;
}

/** Runs a scenario while metering machine-wide CPU; records what the generator and server did not use. */
async function metered<T extends { generator_cpu_cores?: number; server_cpu_cores?: number | null }>(
  results: BenchResults,
  name: string,
  fn: () => Promise<T>,
): Promise<T> {
  const meter = systemCpu();
  const out = await fn();
  const usage = meter.stop();
  const ours = (out.generator_cpu_cores ?? 0) + (out.server_cpu_cores ?? 0);
  results.contention ??= {};
  results.contention[name] = contentionOf(usage, ours);
  return out;
}

/** A sample decide answer, so the ceiling server sends the same bytes decide does. */
async function captureAnswer(server: ServerHandle, key: string, body: string, file: string): Promise<void> {
  const res = await fetch(`${server.url}/v1/decide`, {
    method: "POST",
    headers: { "x-svc-site-id": BENCH_SITE, "x-api-key": key, "content-type": "application/json" },
    body,
  });
  const text = await res.text();
  if (res.status !== 200) throw new Error(`decide answered ${res.status} during setup: ${text}`);
  writeFileSync(file, text);
}

/**
 * The memory scenario: a fresh server touching `memorySubjects` meter subjects (its RSS once it
 * has gone quiet), then a server restarted over its data reading some of them back. In the full
 * run, and alone with `--scenario memory`.
 */
async function memoryScenario(
  cfg: BenchConfig,
  results: BenchResults,
  workDir: string,
  articles: ReturnType<typeof signArticles>,
): Promise<void> {
  let optional: readonly string[] = [];
  if (results.source) results.source.at_memory_server = sourceState(ROOT);
  const memServer = await timed("memory: starting a fresh decide server", async () => {
    const s = await startDecideServer({ label: "memory", databaseUrl: cfg.databaseUrl });
    return { s, optional: await setupSite(s, workDir) };
  }).then(({ s, optional: o }) => {
    optional = o;
    return s;
  });
  const memKeys = await issueKeys(memServer, cfg.memoryKeys, "memory");
  results.memory = await timed(`memory: touching ${cfg.memorySubjects.toLocaleString("en-US")} subjects`, () =>
    metered(results, "memory", () =>
      runMemory({
        server: memServer,
        keys: memKeys,
        articles,
        optional,
        subjects: cfg.memorySubjects,
        timeLimitS: cfg.memoryTimeLimitS,
        settleLimitS: cfg.memorySettleLimitS,
        onProgress: (progress) => {
          results.memory_progress = progress;
        },
      }),
    ),
  );
  // SIGTERM: the server writes everything it holds before it exits.
  const memCode = await memServer.stop();
  if (memCode !== 0) results.errors.push(`memory server exited with ${memCode} on SIGTERM`);
  const stored = results.memory.subjects_touched;
  if (stored === 0) return;
  const readServer = await timed("read back: restarting over the memory scenario's data", () =>
    startDecideServer({ label: "read-back", reuse: memServer }),
  );
  const count = Math.min(cfg.readBackSubjects, stored);
  results.read_back = await timed(`read back: ${count.toLocaleString("en-US")} stored subjects`, () =>
    metered(results, "read_back", () =>
      runReadBack({
        server: readServer,
        keys: memKeys,
        articles,
        optional,
        stored,
        count,
        timeLimitS: cfg.memoryTimeLimitS,
      }),
    ),
  );
  await readServer.stop();
}

/**
 * Signs the articles and builds every body and request before anything is measured. The body
 * strings stay inside this function: only files, one-buffer request pools and what later steps
 * need leave it, so the sender's heap stays small during the open-loop runs.
 */
function pregenerate(
  cfg: BenchConfig,
  keys: { specKeys: readonly string[]; satKeys: readonly string[] },
  optional: readonly string[],
  users: readonly string[],
  workDir: string,
) {
  const articles = signArticles(cfg.articles, Date.now());
  const common = { articles, optional, devices: cfg.devices, users };
  const primeBodies = buildPrimeBodies({ ...common, count: 0, seed: 10 });
  const specBodies = buildBodies({ ...common, count: cfg.specKeys * cfg.bodiesPerSpecKey, seed: 11 });
  const wrkBodies = buildBodies({ ...common, count: cfg.wrkBodies, seed: 12 });
  const overBodies = buildBodies({ ...common, count: 3_000, seed: 13 });
  const satKeys = keys.satKeys;
  const primeRequests = RequestPool.from(
    primeBodies.map((b, i) =>
      buildRequest(
        "/v1/decide",
        {
          "x-svc-site-id": BENCH_SITE,
          "x-api-key": satKeys[i % satKeys.length] as string,
          "content-type": "application/json",
        },
        b,
      ),
    ),
    primeBodies.length,
  );
  return {
    articles,
    files: writeLoadFiles(workDir, satKeys, wrkBodies),
    specRequests: buildSpecRequests(keys.specKeys, specBodies, cfg.bodiesPerSpecKey),
    primeRequests,
    overBodies,
    sampleBody: wrkBodies[0] as string,
    distinctBodies: primeBodies.length + specBodies.length + wrkBodies.length + overBodies.length,
  };
}

async function bench(cfg: BenchConfig, results: BenchResults, workDir: string): Promise<void> {
  const profileDir = cfg.profile ? mkdtempSync(join(tmpdir(), "svc-bench-profile-")) : undefined;
  const t0 = performance.now();
  // Phases in seconds since the server process started (its profile's clock, give or take start-up).
  const phases: Record<string, [number, number]> = {};
  const mark = async <T>(name: string, fn: () => Promise<T>): Promise<T> => {
    const a = (performance.now() - t0) / 1000;
    const out = await fn();
    phases[name] = [a, (performance.now() - t0) / 1000];
    return out;
  };
  const server = await timed("starting the decide server", () =>
    startDecideServer({ label: "main", databaseUrl: cfg.databaseUrl, profileDir }),
  );
  const startupS = (performance.now() - t0) / 1000;
  results.store = server.store;

  const optional = await timed("deploying the bench site (CLI)", () => setupSite(server, workDir));
  const keyCount = cfg.specKeys + 1 + cfg.saturationKeys;
  const keys = await timed(`issuing ${keyCount} keys`, () => issueKeys(server, keyCount, "bench"));
  const specKeys = keys.slice(0, cfg.specKeys);
  const overKey = keys[cfg.specKeys] as string;
  const satKeys = keys.slice(cfg.specKeys + 1);
  const users = await timed(`creating ${cfg.users} readers`, () => createUsers(server, cfg.users));

  const gen0 = performance.now();
  const pre = pregenerate(cfg, { specKeys, satKeys }, optional, users, workDir);
  const { articles, files, specRequests, overBodies } = pre;
  const answerFile = join(workDir, "decide-answer.json");
  await captureAnswer(server, satKeys[0] as string, pre.sampleBody, answerFile);
  results.setup = {
    server_startup_s: round(startupS, 2),
    features_in_site: optional.length + 2,
    features_per_request: 5,
    articles: articles.length,
    device_pool: cfg.devices,
    registered_readers: users.length,
    distinct_bodies: pre.distinctBodies,
    keys_issued: keys.length,
    pregeneration_s: round((performance.now() - gen0) / 1000, 2),
  };
  log(`pre-generated ${pre.distinctBodies} signed bodies over ${articles.length} articles`);

  // Every reader's meters are loaded once (a cold subject each) before the measured scenarios.
  const primeRequests = pre.primeRequests;
  const prime = await timed(`prime: one request per reader (${primeRequests.size} cold subjects)`, () =>
    metered(results, "prime", () =>
      driveClosedLoop({
        port: server.port,
        serverPid: server.pid,
        count: primeRequests.size,
        requestFor: (n) => primeRequests.get(n),
        timeLimitS: cfg.primeTimeLimitS,
      }),
    ),
  );
  results.prime = { generator: CLOSED_LOOP_GENERATOR, subjects: primeRequests.size, ...prime };

  const load = {
    files,
    workDir,
    threads: cfg.wrkThreads,
    connections: cfg.wrkConnections,
    warmupS: cfg.warmupS,
    durationS: cfg.saturationS,
  };
  const ceilingServer = await startCeilingServer(answerFile);
  // The open-loop sender's own floor: the spec-rate schedule against the bare server.
  const runFloor = async () => {
    results.open_loop_floor = await timed(`open-loop floor: spec-rate schedule against the bare Bun.serve`, () =>
      metered(results, "open_loop_floor", () =>
        runSpecRate({
          server: ceilingServer,
          keys: specKeys.length,
          requests: specRequests,
          bodiesPerKey: cfg.bodiesPerSpecKey,
          windows: 1,
          shortSegmentMs: cfg.floorS * 1000,
        }),
      ),
    );
  };
  try {
    // Warm both servers and measure the sender's floor on the bare one (not right after 100k
    // req/s, when the bare server collects its garbage). The spec rate (and over limit, in the
    // windows after it) runs next, on a warm server that is not working off an overload: run
    // right after saturation, as until 2026-11-22, its first window measured the recovery from
    // it (the store thread writing saturation's counters, a heap grown under overload) at several
    // times the later windows' p99 (README, Performance). Saturation and ceiling come last, in
    // alternating segments, so both see the same phases of a machine whose speed changes.
    const decideLoad = { ...load, port: server.port, pid: server.pid };
    const bareLoad = { ...load, port: ceilingServer.port, pid: ceilingServer.pid };
    await closedLoop({ ...decideLoad, durationS: cfg.warmupS, warmupS: 0 });
    await closedLoop({ ...bareLoad, durationS: 1, warmupS: 0 });
    await runFloor();
    // The prime and the warm-up leave the store thread writing their counters for a while: the
    // spec rate starts once the server has gone quiet, so its first window measures 5,000 req/s
    // and not that backlog. (The floor usually gives it time enough: the wait is a guard.)
    const quietBeforeSpec = await timed("waiting for the decide server to go quiet", () =>
      waitUntilQuiet(server.pid, cfg.mode === "smoke" ? 5 : 30),
    );
    if (cfg.mode === "smoke") {
      results.spec_rate = await timed("spec rate (short, unaligned)", () =>
        metered(results, "spec_rate", () =>
          mark("spec_rate", () =>
            runSpecRate({
              server,
              keys: specKeys.length,
              requests: specRequests,
              bodiesPerKey: cfg.bodiesPerSpecKey,
              windows: 1,
              shortSegmentMs: 2_000,
            }),
          ),
        ),
      );
      results.over_limit = await timed("over limit (one window, 2,200 offered in 1.5 s)", () =>
        runOverLimit({ server, key: overKey, bodies: overBodies, windows: 1, perWindow: 2_200, squeezeMs: 1_500 }),
      );
    } else {
      // Spec rate from the next window boundary; over-limit takes the windows right after it.
      const specStart = nextWindowStart(1_500);
      const overStart = specStart + cfg.specWindows * WINDOW_MS;
      log(
        `spec rate: ${cfg.specKeys} keys x 2,000 per window, ${cfg.specWindows} windows from ${new Date(specStart).toISOString()}`,
      );
      const over = runOverLimit({
        server,
        key: overKey,
        bodies: overBodies,
        windows: cfg.overWindows,
        startEpoch: overStart,
      });
      results.spec_rate = await metered(results, "spec_rate", () =>
        mark("spec_rate", () =>
          runSpecRate({
            server,
            keys: specKeys.length,
            requests: specRequests,
            bodiesPerKey: cfg.bodiesPerSpecKey,
            windows: cfg.specWindows,
            startEpoch: specStart,
          }),
        ),
      );
      log(`spec rate done; over limit: 1 key x 3,000 per window, ${cfg.overWindows} windows`);
      results.over_limit = await over;
      log("over limit done");
    }
    results.spec_rate.server_quiet_before = quietBeforeSpec;
    const both = await timed(
      `saturation and ceiling: wrk ${cfg.saturationS} s each in ${cfg.ratioSegments} alternating segments (${satKeys.length} keys)`,
      async () => {
        const meter = systemCpu();
        const out = await interleavedClosedLoops(decideLoad, bareLoad, cfg.ratioSegments, (run) =>
          mark("saturation", run),
        );
        const usage = meter.stop();
        // Each server ran half the time: what the two loads used on average.
        const ours =
          (out.saturation.generator_cpu_cores +
            (out.saturation.server_cpu_cores ?? 0) +
            out.ceiling.generator_cpu_cores +
            (out.ceiling.server_cpu_cores ?? 0)) /
          2;
        results.contention ??= {};
        results.contention.saturation_and_ceiling = contentionOf(usage, ours);
        return out;
      },
    );
    results.saturation = { ...both.saturation, ratio_to_ceiling: null, keys: satKeys.length };
    results.ceiling = { ...both.ceiling, server: "bench/ceiling-server.ts (Bun.serve, fixed JSON body)" };
    results.saturation.ratio_to_ceiling = round(both.saturation.rps / both.ceiling.rps, 3);
  } finally {
    await ceilingServer.stop();
  }

  // Streaming writes last on the main server: their rows and change-log entries do not weigh on
  // the decide scenarios above, and no bench feature reads the pipeline.
  // One writer first (a pipeline's sink usually writes in order), then several at once: on the
  // embedded store their statements queue behind each other, so the second shows the queueing.
  results.streaming_one_writer = await timed(`streaming: 1 client x 1,000-row batches for ${cfg.streamingS} s`, () =>
    runStreaming({
      server,
      readers: STREAMING_BATCH_ROWS,
      clients: 1,
      durationS: cfg.streamingS,
      label: "one",
    }),
  );
  results.streaming = await timed(
    `streaming: ${cfg.streamingClients} clients x 1,000-row batches for ${cfg.streamingS} s`,
    () =>
      runStreaming({
        server,
        readers: cfg.streamingReaders,
        clients: cfg.streamingClients,
        durationS: cfg.streamingS,
        label: "many",
      }),
  );

  results.recommendation_cache = await timed(
    `recommendation cache hits: ${cfg.streamingClients} clients for ${cfg.streamingS} s`,
    () => runRecommendationCache({ server, clients: cfg.streamingClients, durationS: cfg.streamingS }),
  );

  const code = await timed("stopping the decide server", () => server.stop());
  if (code !== 0) results.errors.push(`decide server exited with ${code} on SIGTERM`);
  if (profileDir) {
    try {
      const file = readdirSync(profileDir).find((f) => f.endsWith(".cpuprofile"));
      if (!file) throw new Error(`no .cpuprofile in ${profileDir}`);
      const path = join(profileDir, file);
      const window = (name: string) => {
        const p = phases[name];
        return p ? summariseProfile(path, 20, p[0], p[1]) : undefined;
      };
      results.profile = { file: path, saturation: window("saturation"), spec_rate: window("spec_rate") };
      log(`cpu profile: ${path}`);
    } catch (error) {
      results.profile = { error: String(error) };
    }
  }

  await memoryScenario(cfg, results, workDir, articles);

  const scalingKnown = cfg.scalingKnown;
  if (scalingKnown !== null) {
    results.scaling = await timed(
      `scaling: CPU per request with 24 and 2,000 features, ${scalingKnown.join(" and ")} readers known`,
      () =>
        runScaling({
          databaseUrl: cfg.databaseUrl,
          workDir,
          articles,
          known: scalingKnown,
          measured: cfg.scalingMeasured,
          timeLimitS: cfg.memoryTimeLimitS,
        }),
    );
  }

  if (cfg.clusterWindows === 0) return;
  if (!cfg.databaseUrl) {
    results.cluster = { skipped: "needs DATABASE_URL (a cluster refuses the embedded store)" };
    return;
  }
  const databaseUrl = cfg.databaseUrl;
  results.cluster = await timed(
    `cluster: one process, then two, ${cfg.clusterWindows} window(s) of 1 key over its limit and ${cfg.clusterKeys} at it`,
    () => runCluster({ databaseUrl, workDir, articles, keys: cfg.clusterKeys, windows: cfg.clusterWindows }),
  );
}

/** The soak: in this process, on a fresh store of the bench's kind (bench/soak.ts). */
async function soak(cfg: BenchConfig, results: BenchResults): Promise<void> {
  const { runSoak } = await import("./soak");
  results.soak = await timed(`soak: ${cfg.soakWeeks} simulated weeks, ${cfg.soakReaders} readers`, () =>
    runSoak({ weeks: cfg.soakWeeks, readers: cfg.soakReaders, databaseUrl: cfg.databaseUrl, log, onCleanup }),
  );
}

/** What "the bench broke" means: a scenario got no usable answers at all. Never a performance bar. */
function sanityErrors(r: BenchResults): string[] {
  const out: string[] = [];
  if (r.config.scenario === "memory") {
    if (!r.memory || r.memory.subjects_touched === 0) out.push("memory: no subject touched");
    return out;
  }
  if (!r.soak || r.soak.results.length === 0) out.push("soak: no simulated week measured");
  if (r.config.scenario === "soak") return out;
  if (!r.prime || r.prime.status_200 === 0) out.push("prime: no request answered 200");
  if (!r.saturation || r.saturation.requests === 0) out.push("saturation: no requests completed");
  else if (r.saturation.non_2xx === r.saturation.requests) out.push("saturation: no request answered 200");
  if (!r.ceiling || r.ceiling.requests === 0) out.push("ceiling: no requests completed");
  if (!r.spec_rate || r.spec_rate.status_200 === 0) out.push("spec rate: no request answered 200");
  if (!r.over_limit || r.over_limit.admitted_per_window.every((a) => a === 0)) out.push("over limit: nothing admitted");
  if (!r.memory || r.memory.subjects_touched === 0) out.push("memory: no subject touched");
  if (r.read_back && r.read_back.status_200 === 0) out.push("read back: no request answered 200");
  if (!r.streaming || r.streaming.rows_received === 0) out.push("streaming: no row landed");
  if (!r.streaming_one_writer || r.streaming_one_writer.rows_received === 0)
    out.push("streaming (one writer): no row landed");
  return out;
}

/** The run in progress, so a signal or the time limit can still write what was measured. */
let current: { results: BenchResults; started: number } | null = null;
let finishing: Promise<number> | null = null;

/**
 * Stops the children, then prints and writes the results, whatever state they are in. Runs once:
 * a signal and the normal end share one promise, so the process never exits before the write.
 */
function finish(code: number): Promise<number> {
  finishing ??= (async () => {
    if (!current) return code;
    const { results, started } = current;
    await cleanupAll();
    results.targets = targetsFor(results);
    results.duration_s = round((performance.now() - started) / 1000, 1);
    mkdirSync(RESULTS_DIR, { recursive: true });
    printTable(results);
    const file = writeResults(RESULTS_DIR, results);
    for (const phase of ["saturation", "spec_rate"] as const) {
      const p = results.profile?.[phase];
      if (!p) continue;
      console.log(`decide server CPU profile during ${phase}, top self time:`);
      console.table(p.top.slice(0, 12).map(({ called_from: _c, ...rest }) => rest));
      console.log(`decide server CPU profile during ${phase}, project functions by inclusive time:`);
      console.table(p.inclusive.slice(0, 10));
    }
    for (const e of results.errors) console.error(`bench error: ${e}`);
    console.log(`results: ${file} (${results.duration_s} s)`);
    return code;
  })();
  return finishing;
}

/** Ends the run early (signal, time limit): what was measured so far is still written. */
function abort(reason: string, code: number): void {
  console.error(`bench: ${reason}; stopping child processes and writing what was measured`);
  current?.results.errors.push(`interrupted: ${reason}`);
  if (current) current.results.interrupted = reason;
  void finish(code).then((c) => process.exit(c));
}

async function main(): Promise<number> {
  // The pinned mode (server on one core, generators on the other) is a run of its own.
  if (process.argv.includes("--pin")) return runPinnedBench(process.argv.slice(2));
  const cfg = parseArgs(process.argv.slice(2), process.env);
  const started = performance.now();
  const results: BenchResults = {
    timestamp: new Date().toISOString(),
    mode: cfg.mode,
    store: cfg.databaseUrl ? "postgres" : "embedded",
    machine: machineInfo(),
    versions: { bun: Bun.version, node: commandOutput(["node", "--version"]) || "absent", wrk: "", cc: "" },
    config: { ...cfg, databaseUrl: cfg.databaseUrl ? "(set)" : undefined },
    source: { at_start: sourceState(ROOT) },
    errors: [],
  };
  current = { results, started };
  const workDir = mkdtempSync(join(tmpdir(), "svc-bench-"));
  onCleanup(() => rmSync(workDir, { recursive: true, force: true }));

  const limit = setTimeout(
    () => abort(`time limit of ${TIME_LIMIT_S[cfg.mode]} s reached`, 1),
    TIME_LIMIT_S[cfg.mode] * 1000,
  );
  let code = 0;
  try {
    results.machine.busy_cores_before_start = await busyCores();
    if (results.machine.busy_cores_before_start > 0.3) {
      log(`warning: ${results.machine.busy_cores_before_start} cores already busy before the bench started`);
    }
    if (cfg.scenario === "all") {
      await ensureWrk();
      await ensureOpenLoopSender();
      results.versions.wrk = wrkVersion();
      results.versions.cc = commandOutput(["cc", "--version"]).split("\n")[0] ?? "";
    }
    log(`mode ${cfg.mode}, ${results.store} store, ${results.machine.cores} cores (${results.machine.cpu_model})`);
    if (cfg.scenario === "all") await bench(cfg, results, workDir);
    if (cfg.scenario === "memory") await memoryScenario(cfg, results, workDir, signArticles(cfg.articles, Date.now()));
    else await soak(cfg, results);
    const broken = sanityErrors(results);
    results.errors.push(...broken);
    if (broken.length > 0) code = 1;
  } catch (error) {
    results.errors.push(error instanceof Error ? (error.stack ?? error.message) : String(error));
    code = 1;
  } finally {
    clearTimeout(limit);
  }
  return finish(code);
}

process.on("exit", killAllSync);
for (const signal of ["SIGINT", "SIGTERM"] as const) {
  process.on(signal, () => abort(signal, 130));
}

main().then(
  (code) => process.exit(code),
  async (error) => {
    console.error(error);
    await cleanupAll();
    process.exit(1);
  },
);
