/**
 * What keyed decide costs each of the server's threads as the readers it has stored grow:
 * `npx bun bench/store-thread-cost.ts [readers] [requests]` (200,000 and 60,000).
 *
 * Starts svc (embedded store unless DATABASE_URL; more server environment as JSON in
 * SERVER_ENV, e.g. '{"SVC_EMBEDDED_SHARED_BUFFERS_MB":"32"}'; what it prints in LOG_FILE), deploys the bench site, issues 200
 * keys and touches `readers` new readers once each (a closed loop, as the memory scenario does),
 * then three times answers `requests` keyed decides for readers drawn at random from those and
 * waits until the server is quiet (so the counters those requests left are written), and prints
 * each thread's CPU µs per request over that (utime + stime of /proc/<pid>/task/<tid>/stat).
 * A reader drawn at random ticks a count row and adds a seen member the store has not cached,
 * as a publisher's many readers do; the pinned bench's 5,000 devices ticks rows it has just
 * written. `Worker` is the embedded store's thread, `bun.exe` the request thread. `PROFILE=1`
 * runs the server under `bun --cpu-prof` and prints the request thread's self time per function
 * over the last round (bench/profile.ts).
 */
import { mkdtempSync, readdirSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { driveClosedLoop } from "./closed-loop";
import { subjectRequests } from "./memory";
import { cleanupAll, threadCpu, waitUntilQuiet } from "./proc";
import { summariseProfile } from "./profile";
import { cli, startDecideServer } from "./server";
import { BENCH_SITE, buildBenchSite, optionalFeatures } from "./site";
import { issueKeys, prng, signArticles } from "./workload";

const readers = Number(process.argv[2] ?? 200_000);
const requests = Number(process.argv[3] ?? 60_000);
const work = mkdtempSync(join(tmpdir(), "svc-store-thread-"));
const profileDir = process.env.PROFILE === "1" ? mkdtempSync(join(tmpdir(), "svc-profile-out-")) : undefined;
/** Seconds from the last round's start to the server's stop (the profile's window). */
let lastRound = 0;
const server = await startDecideServer({
  profileDir,
  label: "store-thread",
  databaseUrl: process.env.DATABASE_URL,
  // LOG_FILE: everything the server prints.
  logFile: process.env.LOG_FILE,
  env: JSON.parse(process.env.SERVER_ENV ?? "{}"),
});
try {
  const site = join(work, "site.json");
  writeFileSync(site, JSON.stringify(buildBenchSite()));
  await cli(server, ["tenant", "create", "default", "--default"]);
  await cli(server, ["site", "create", BENCH_SITE]);
  await cli(server, ["deploy", BENCH_SITE, site]);
  const keys = await issueKeys(server, 200, "store-thread");
  const optional = optionalFeatures(buildBenchSite());
  const requestFor = subjectRequests({ keys, articles: signArticles(2_000, Date.now()), optional }, 77);
  const drive = (count: number, subjectOf: (n: number) => number) =>
    driveClosedLoop({
      port: server.port,
      serverPid: server.pid,
      count,
      timeLimitS: 900,
      requestFor: (n) => requestFor(n, subjectOf(n)),
    });
  const touched = await drive(readers, (n) => n);
  console.log(`${readers} readers touched in ${touched.duration_s} s (${touched.status_other} not 200)`);
  // A warm-up as long as a measurement (the JIT), over the readers in turn.
  await drive(requests, (n) => n % readers);
  for (let round = 1; round <= 3; round++) {
    await waitUntilQuiet(server.pid, 120);
    const started = performance.now();
    const rand = prng(readers + round);
    const before = threadCpu(server.pid);
    const run = await drive(requests, () => Math.floor(rand() * readers));
    const quiet = await waitUntilQuiet(server.pid, 120);
    const after = threadCpu(server.pid);
    lastRound = (performance.now() - started) / 1000;
    const rows = [...after]
      .map(([name, cpu]) => [name.trim(), ((cpu - (before.get(name) ?? 0)) * 1e6) / run.sent] as const)
      .filter(([, us]) => us >= 0.05)
      .sort((a, b) => b[1] - a[1]);
    const all = rows.reduce((sum, [, us]) => sum + us, 0);
    console.log(
      `round ${round}: ${run.rps} req/s, ${run.status_other} not 200, quiet after ${quiet.seconds} s; ` +
        `CPU µs per request: ${rows.map(([name, us]) => `${name} ${us.toFixed(1)}`).join(", ")}; all ${all.toFixed(1)}`,
    );
  }
} finally {
  await server.stop();
  await cleanupAll();
}
if (profileDir !== undefined) {
  const summary = summariseProfile(join(profileDir, readdirSync(profileDir)[0] as string), 30, -(lastRound + 0.5));
  console.log(`${summary.total_ms} ms sampled in the last round; self time per function, highest first:`);
  for (const e of summary.top) {
    console.log(`${String(e.self_pct).padStart(5)}%  ${e.function} (${e.location})  from ${e.called_from}`);
  }
}
// The closed loop's connections keep the event loop alive once the server is gone.
process.exit(0);
