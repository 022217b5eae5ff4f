/**
 * The soak scenario: `bun bench/soak.ts [--weeks 13] [--readers 1000]`. Does the stored size level
 * off once retention sweeps, instead of growing with time?
 *
 * One process, a fresh embedded data folder, the clock injected: each simulated day drives a
 * churning reader population through keyed decide on the demo site (its `articles` meter: seen,
 * monthly), signs readers in by magic link (sessions, links and mail rows), writes a streaming
 * batch for the signed-in readers and deploys once (change-log entries, a document version); then
 * flushes the counters and runs the retention sweep as its job would at that hour. At each
 * simulated week it reads the database size (`pg_database_size`) and the data folder's bytes on
 * disk. Writes bench/results/soak-<timestamp>.json and prints a table.
 */
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { rowsOf } from "../db/client";
import { createApp } from "../src/app";
import { loadConfig } from "../src/config";
import { signContentPayload } from "../src/core/verifier";
import { createDeps, startDeps, stopDeps } from "../src/deps";
import { createLogger } from "../src/logger";
import { demoDocumentPath, seedDemo } from "../src/seed";

const DAY = 86_400_000;
const args = process.argv.slice(2);
const option = (name: string, fallback: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : fallback;
};
const WEEKS = option("weeks", 13);
const READERS = option("readers", 1000);
/** Share of the reader population replaced by new readers each day. */
const CHURN = 0.05;
const ARTICLES_PER_READER_DAY = 2;
const SIGN_INS_PER_DAY = 20;
/** Sign-ins come from this many addresses (accounts are live data: kept). */
const ACCOUNTS = 200;

const folder = mkdtempSync(join(tmpdir(), "svc-soak-"));
let now = Date.parse("2027-01-01T06:00:00Z");
const mail: string[] = [];
const config = loadConfig({
  SVC_DATA_DIR: folder,
  SVC_SEED_DEMO: "0",
  SVC_LOG_LEVEL: "warn",
  SVC_PUBLIC_URL: "http://127.0.0.1:3000",
  // The scenario sweeps by hand, once a simulated day.
  SVC_RETENTION_INTERVAL_MS: "0",
});
const deps = await createDeps(config, {
  now: () => now,
  logger: createLogger("warn"),
  mailTransport: { kind: "log", send: async (m: { text: string }) => void mail.push(m.text) },
});
await startDeps(deps);
const app = createApp(deps);
const demo = await seedDemo(deps);
if (demo === null) throw new Error("the soak's data folder was not empty");
const streamingKey = await deps.keys.issue("default", "demo", { name: "soak", permissions: ["streaming:write"] }, now);
const document = JSON.parse(readFileSync(demoDocumentPath, "utf8")) as { contentKeys: { secret: string }[] };
const contentSecret = document.contentKeys[0]?.secret ?? "";

const call = (path: string, body: unknown, headers: Record<string, string> = {}) =>
  app.handle(
    new Request(`http://127.0.0.1${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-site-id": "demo", ...headers },
      body: JSON.stringify(body),
    }),
  );

function article(id: number) {
  const payload = JSON.stringify({ id: `a-${id}`, section: "news", access: "metered" });
  return { payload, signature: signContentPayload(payload, contentSecret) };
}

let nextReader = 0;
const readers: number[] = Array.from({ length: READERS }, () => nextReader++);
const signedIn = new Set<string>();

async function day(): Promise<void> {
  // Churn: some readers leave, as many new ones arrive.
  for (let i = 0; i < READERS * CHURN; i++) readers[Math.floor(Math.random() * READERS)] = nextReader++;
  for (const reader of readers) {
    for (let a = 0; a < ARTICLES_PER_READER_DAY; a++) {
      const res = await call(
        "/v1/decide",
        { features: ["paywall"], deviceId: `device-${reader}`, content: article(Math.floor(Math.random() * 500)) },
        { authorization: `Bearer ${demo!.key}` },
      );
      if (res.status !== 200) throw new Error(`decide answered ${res.status}: ${await res.text()}`);
    }
  }
  for (let i = 0; i < SIGN_INS_PER_DAY; i++) {
    const email = `reader-${Math.floor(Math.random() * ACCOUNTS)}@example.com`;
    await call("/v1/id/sign-in/magic-link", { email });
    await deps.outbox.drain();
    const token = mail.at(-1)?.match(/[?&]token=([A-Za-z0-9_-]+)/)?.[1];
    const res = await call("/v1/id/magic-link/consume", { token });
    if (res.status === 200) signedIn.add(((await res.json()) as { user: { id: string } }).user.id);
  }
  const windowEnd = new Date(now).toISOString();
  const rows = [...signedIn].map((user_id) => ({ user_id, window_end: windowEnd, score: Math.random() }));
  const streamed = await call("/v1/streaming/engagement", { rows }, { authorization: `Bearer ${streamingKey.key}` });
  if (streamed.status !== 200) throw new Error(`streaming answered ${streamed.status}: ${await streamed.text()}`);
  const deployed = await app.handle(
    new Request("http://127.0.0.1/admin/tenants/default/sites/demo/deploy", {
      method: "POST",
      headers: { "content-type": "application/json", authorization: `Bearer ${config.operatorToken}` },
      body: JSON.stringify({ document: JSON.parse(readFileSync(demoDocumentPath, "utf8")) }),
    }),
  );
  if (deployed.status >= 300) throw new Error(`deploy answered ${deployed.status}: ${await deployed.text()}`);
  await deps.flusher.flushAll();
  now += DAY;
  await deps.retention.sweep(now);
}

function folderBytes(path: string): number {
  const stat = statSync(path);
  if (!stat.isDirectory()) return stat.size;
  return readdirSync(path).reduce((sum, name) => sum + folderBytes(join(path, name)), 0);
}

/** Bytes per table (with indexes), from the catalog. */
async function tableBytes(): Promise<Record<string, number>> {
  const rows = rowsOf<{ name: string; bytes: number | string }>(
    await deps.database.db.execute(
      sql`select c.relname as name, pg_total_relation_size(c.oid)::float8 as bytes from pg_class c join pg_namespace n on n.oid = c.relnamespace where c.relkind = 'r' and n.nspname = 'public'`,
    ),
  );
  return Object.fromEntries(rows.map((r) => [r.name, Number(r.bytes)]));
}

const weeks: {
  week: number;
  databaseBytes: number;
  folderBytes: number;
  liveReaders: number;
  seconds: number;
  tables: Record<string, number>;
}[] = [];
const t0 = performance.now();
for (let week = 1; week <= WEEKS; week++) {
  for (let d = 0; d < 7; d++) await day();
  const [size] = rowsOf<{ bytes: number | string }>(
    await deps.database.db.execute(sql`select pg_database_size(current_database())::float8 as bytes`),
  );
  const row = {
    week,
    databaseBytes: Number(size?.bytes ?? 0),
    folderBytes: folderBytes(join(folder, "pg")),
    liveReaders: READERS + signedIn.size,
    seconds: Math.round((performance.now() - t0) / 1000),
    tables: await tableBytes(),
  };
  weeks.push(row);
  console.log(
    `week ${String(week).padStart(2)}  ${new Date(now).toISOString().slice(0, 10)}  database ${(row.databaseBytes / 1e6).toFixed(1)} MB  folder ${(row.folderBytes / 1e6).toFixed(1)} MB  ${Math.round(row.databaseBytes / row.liveReaders)} B per live reader  (${row.seconds} s)`,
  );
}
const [firstWeek, lastWeek] = [weeks[0], weeks.at(-1)];
if (firstWeek && lastWeek) {
  const growth = Object.keys(lastWeek.tables)
    .map((t) => ({ t, grew: (lastWeek.tables[t] ?? 0) - (firstWeek.tables[t] ?? 0) }))
    .filter((g) => g.grew !== 0)
    .sort((a, b) => b.grew - a.grew);
  console.log("table growth from week 1 to the last (KB):");
  for (const g of growth) console.log(`  ${g.t.padEnd(28)} ${(g.grew / 1024).toFixed(0).padStart(8)}`);
}
await stopDeps(deps);
const resultsDir = join(import.meta.dir, "results");
mkdirSync(resultsDir, { recursive: true });
const out = join(resultsDir, `soak-${new Date().toISOString().replace(/[:.]/g, "-")}.json`);
writeFileSync(
  out,
  `${JSON.stringify({ weeks: WEEKS, readers: READERS, churn: CHURN, signInsPerDay: SIGN_INS_PER_DAY, results: weeks }, null, 2)}\n`,
);
console.log(`written ${out}`);
rmSync(folder, { recursive: true, force: true });
