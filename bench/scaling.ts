/**
 * Scaling: the server's CPU time per keyed decide (µs, from /proc: independent of the load
 * generator) as what is defined and known grows, with 5 features named per request throughout:
 * the bench site (24 features) with `known[0]` readers held in memory, the same with `known[1]`
 * readers held, and the site padded to 2,000 features with `known[0]` readers. Each measurement
 * is a closed loop of `measured` requests over readers already held (drawn at random), taken
 * once the server has written the touching's backlog and gone quiet (the first after a warm-up).
 */
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { driveClosedLoop } from "./closed-loop";
import { subjectRequests } from "./memory";
import { cpuSeconds, waitUntilQuiet } from "./proc";
import { cli, type ServerHandle, startDecideServer } from "./server";
import { BENCH_SITE, buildBenchSite, optionalFeatures } from "./site";
import { round } from "./stats";
import { type Article, issueKeys, prng } from "./workload";

export interface ScalingRun {
  features_defined: number;
  features_named: number;
  readers_known: number;
  requests: number;
  status_other: number;
  server_cpu_us_per_request: number;
}

export interface ScalingResult {
  runs: ScalingRun[];
}

export interface ScalingOptions {
  databaseUrl?: string;
  workDir: string;
  articles: readonly Article[];
  /** Readers held before the first measurement, and before the second. */
  known: readonly [number, number];
  measured: number;
  timeLimitS: number;
}

const PADDED_FEATURES = 2_000;
const KEYS = 200;

/** The bench site with simple data features added until it defines `total`. */
function paddedSite(total: number): Record<string, unknown> {
  const doc = buildBenchSite();
  const features = doc.features as Record<string, unknown>;
  for (let i = Object.keys(features).length; i < total; i++) {
    features[`padding_${i}`] = {
      purpose: "decision",
      outcomes: { on: { type: "data", fields: { n: i } }, off: {} },
      rules: [{ when: { fact: "context.section", eq: `section-${i}` }, then: "on" }],
      default: "off",
      onError: "off",
    };
  }
  return doc;
}

async function deploy(server: ServerHandle, doc: Record<string, unknown>, workDir: string): Promise<void> {
  const file = join(workDir, `scaling-${server.label}.json`);
  writeFileSync(file, JSON.stringify(doc));
  await cli(server, ["tenant", "create", "default", "--default"]);
  await cli(server, ["site", "create", BENCH_SITE]);
  await cli(server, ["deploy", BENCH_SITE, file]);
}

export async function runScaling(o: ScalingOptions): Promise<ScalingResult> {
  // Every run names features of the 24-feature site, so only what is defined changes.
  const optional = optionalFeatures(buildBenchSite());
  const runs: ScalingRun[] = [];
  for (const features of [Object.keys(buildBenchSite().features as object).length, PADDED_FEATURES]) {
    const server = await startDecideServer({ label: `scaling-${features}`, databaseUrl: o.databaseUrl });
    try {
      await deploy(server, paddedSite(features), o.workDir);
      const keys = await issueKeys(server, KEYS, `scaling-${features}`);
      const requestFor = subjectRequests({ keys, articles: o.articles, optional }, 77);
      const drive = (count: number, subjectOf: (n: number) => number) =>
        driveClosedLoop({
          port: server.port,
          serverPid: server.pid,
          count,
          timeLimitS: o.timeLimitS,
          requestFor: (n) => requestFor(n, subjectOf(n)),
        });
      let known = 0;
      const stages = features === PADDED_FEATURES ? [o.known[0]] : [o.known[0], o.known[1]];
      for (const target of stages) {
        const from = known;
        await drive(target - from, (n) => from + n);
        known = target;
        // The first measurement of a server follows a warm-up as long as itself (the JIT).
        if (from === 0) await drive(o.measured, (n) => n % known);
        await waitUntilQuiet(server.pid, 60);
        const rand = prng(target);
        const cpu0 = cpuSeconds(server.pid);
        const run = await drive(o.measured, () => Math.floor(rand() * known));
        const cpu = cpuSeconds(server.pid) - cpu0;
        runs.push({
          features_defined: features,
          features_named: 5,
          readers_known: known,
          requests: run.sent,
          status_other: run.status_other,
          server_cpu_us_per_request: run.sent > 0 ? round((cpu * 1e6) / run.sent, 1) : 0,
        });
      }
    } finally {
      await server.stop();
    }
  }
  return { runs };
}
