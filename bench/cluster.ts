/**
 * Cluster: the keyed rate windows and the hot path with one server process and with two
 * (`SVC_WORKERS=2`, one port) on one Postgres server. For each, in aligned windows: one key
 * offered 3,000 requests per window (must admit exactly 2,000 and refuse the rest), then `keys`
 * keys offered exactly their 2,000 per window (every 429 there is a false one: the window still
 * had quota elsewhere). Reports admitted per window, the false-429 rate, Postgres
 * transactions per request (pg_stat_database of the server's own database: lease claims, flushes
 * and every other statement) and the server's CPU time per request (the primary and its workers,
 * from /proc: independent of the load generator). Needs DATABASE_URL (the cluster refuses the
 * embedded store).
 */
import { readFileSync } from "node:fs";
import postgres from "postgres";
import { runOverLimit } from "./over-limit";
import { cpuSeconds } from "./proc";
import { nextWindowStart } from "./schedule";
import { type ServerHandle, startDecideServer } from "./server";
import { buildSpecRequests, runSpecRate } from "./spec-rate";
import { round } from "./stats";
import { type Article, buildBodies, issueKeys, setupSite } from "./workload";

export interface ClusterRun {
  workers: number;
  windows: number;
  /** The one key offered 3,000 per window: admitted per window (exactly 2,000 each). */
  admitted_per_window: number[];
  exact: boolean;
  every_refusal_had_retry_after: boolean;
  /** The over-limit key's requests answered neither 200 nor 429, and those never answered in their window. */
  over_status_other: number;
  over_no_response: number;
  /** Keys offered exactly their limit, and the 429s they got (false refusals) of their requests. */
  at_limit_keys: number;
  at_limit_requests: number;
  false_429: number;
  false_429_rate: number;
  /** Postgres transactions (commits and rollbacks) of the server's database per answered request. */
  db_xacts_per_request: number;
  /** CPU time of every server process (primary and workers) per answered request. */
  server_cpu_us_per_request: number;
  requests: number;
}

export interface ClusterResult {
  runs: ClusterRun[];
}

export interface ClusterOptions {
  databaseUrl: string;
  workDir: string;
  articles: readonly Article[];
  keys: number;
  windows: number;
}

/** Server processes: the started one and its children (the cluster's workers). */
function processTree(pid: number): number[] {
  try {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, "latin1").trim();
    return [pid, ...(children ? children.split(/\s+/).map(Number) : [])];
  } catch {
    return [pid];
  }
}

const treeCpu = (pids: readonly number[]) => pids.reduce((sum, pid) => sum + (cpuSeconds(pid) || 0), 0);

async function waitForWorkers(server: ServerHandle, workers: number): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    if ((server.output().match(/"message":"listening"/g) ?? []).length >= workers) return;
    await Bun.sleep(50);
  }
  throw new Error(`cluster of ${workers} did not start in time:\n${server.output()}`);
}

async function xacts(admin: postgres.Sql, url: string): Promise<number> {
  const name = new URL(url).pathname.slice(1);
  // The statistics of other backends reach the view within a second of their transactions.
  await Bun.sleep(1_100);
  const rows =
    await admin`select (xact_commit + xact_rollback)::bigint as n from pg_stat_database where datname = ${name}`;
  return Number(rows[0]?.n ?? 0);
}

async function runOnce(o: ClusterOptions, workers: number, admin: postgres.Sql): Promise<ClusterRun> {
  const server = await startDecideServer({
    label: `cluster-${workers}`,
    databaseUrl: o.databaseUrl,
    env: { SVC_WORKERS: String(workers) },
  });
  try {
    await waitForWorkers(server, workers);
    const optional = await setupSite(server, o.workDir);
    const [overKey, ...limitKeys] = await issueKeys(server, 1 + o.keys, `cluster-${workers}`);
    const common = { articles: o.articles, optional, devices: 1_000, users: [] as string[] };
    const perKey = 2_000;
    const specBodies = buildBodies({ ...common, count: o.keys * perKey, seed: 21 });
    const overBodies = buildBodies({ ...common, count: 3_000, seed: 22 });
    const pids = processTree(server.pid);
    const cpu0 = treeCpu(pids);
    const x0 = await xacts(admin, server.env.DATABASE_URL as string);
    // One after the other, each from a window boundary: one open-loop sender at a time.
    const over = await runOverLimit({
      server,
      key: overKey as string,
      bodies: overBodies,
      windows: o.windows,
      startEpoch: nextWindowStart(1_500),
    });
    const spec = await runSpecRate({
      server,
      keys: limitKeys.length,
      requests: buildSpecRequests(limitKeys, specBodies, perKey),
      bodiesPerKey: perKey,
      windows: o.windows,
      startEpoch: nextWindowStart(1_500),
    });
    const cpu = treeCpu(pids) - cpu0;
    const x = (await xacts(admin, server.env.DATABASE_URL as string)) - x0;
    const answered = over.admitted_per_window.reduce((a, b) => a + b, 0) + over.refusals + spec.completed;
    return {
      workers,
      windows: o.windows,
      admitted_per_window: over.admitted_per_window,
      exact: over.exact,
      every_refusal_had_retry_after: over.every_refusal_had_retry_after,
      over_status_other: over.status_other,
      over_no_response: over.no_response,
      at_limit_keys: limitKeys.length,
      at_limit_requests: spec.completed,
      false_429: spec.status_429,
      false_429_rate: spec.completed > 0 ? round(spec.status_429 / spec.completed, 5) : 0,
      db_xacts_per_request: answered > 0 ? round(x / answered, 3) : 0,
      server_cpu_us_per_request: answered > 0 ? round((cpu * 1e6) / answered, 1) : 0,
      requests: answered,
    };
  } finally {
    await server.stop();
  }
}

/** One process, then two, each over a fresh database of the same Postgres server. */
export async function runCluster(o: ClusterOptions): Promise<ClusterResult> {
  const admin = postgres(o.databaseUrl, { max: 1, onnotice: () => {} });
  try {
    const runs: ClusterRun[] = [];
    for (const workers of [1, 2]) runs.push(await runOnce(o, workers, admin));
    return { runs };
  } finally {
    await admin.end();
  }
}

/**
 * On its own: `DATABASE_URL=postgres://... npx bun bench/cluster.ts [keys] [windows]` prints the
 * scenario's result as JSON (the full bench runs it last, with DATABASE_URL).
 */
if (import.meta.main) {
  const databaseUrl = process.env.DATABASE_URL;
  if (!databaseUrl) throw new Error("bench/cluster.ts needs DATABASE_URL (a Postgres server)");
  const { mkdtempSync } = await import("node:fs");
  const { tmpdir } = await import("node:os");
  const { join } = await import("node:path");
  const { cleanupAll } = await import("./proc");
  const { signArticles } = await import("./workload");
  try {
    const result = await runCluster({
      databaseUrl,
      workDir: mkdtempSync(join(tmpdir(), "svc-bench-cluster-")),
      articles: signArticles(2_000, Date.now()),
      keys: Number(process.argv[2] ?? 5),
      windows: Number(process.argv[3] ?? 1),
    });
    console.log(JSON.stringify(result, null, 2));
  } finally {
    await cleanupAll();
  }
}
