/**
 * The soak scenario (`npm run bench -- --scenario soak [--weeks 14] [--readers 1000]`, alias
 * `npm run bench:soak`): does the stored size level off once retention sweeps, instead of
 * growing with time?
 *
 * One process, a fresh store (an embedded data folder, or a scratch database on DATABASE_URL's
 * server), the clock injected from 2027-01-01: each simulated day drives the mix of
 * bench/soak-world.ts (churning readers through keyed decide with a monthly seen meter and a daily
 * count meter, magic-link sign-ins, a streaming batch, a deploy), then flushes the counters and
 * runs the retention sweep as its job would. At each simulated week it reads the database size,
 * each table's heap, indexes, TOAST, rows and dead rows, the catalog's size and (embedded) the
 * data folder's bytes. It measures no time: the seconds it prints are only progress.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../db/client";
import { createScratchDatabase } from "../db/scratch-database";
import { createApp } from "../src/app";
import { loadConfig } from "../src/config";
import { createDeps, startDeps, stopDeps } from "../src/deps";
import { createLogger } from "../src/logger";
import { flatness, type SoakResults, type SoakWeek, weekLine } from "./soak-report";
import {
  DEFAULT_MIX,
  folderBytes,
  mailCatcher,
  measureStore,
  type SoakMix,
  SoakWorld,
  type StoreMeasure,
} from "./soak-world";

export async function runSoak(options: {
  weeks: number;
  readers: number;
  databaseUrl?: string;
  log?: (line: string) => void;
  /** Registers what an interrupted run must still remove (the data folder, the scratch database). */
  onCleanup?: (fn: () => Promise<void> | void) => void;
}): Promise<SoakResults> {
  const log = options.log ?? console.log;
  const mix: SoakMix = { ...DEFAULT_MIX, readers: options.readers };
  const folder = mkdtempSync(join(tmpdir(), "svc-soak-"));
  const scratch = options.databaseUrl
    ? await createScratchDatabase(options.databaseUrl, `svc_soak_${randomBytes(6).toString("hex")}`)
    : null;
  options.onCleanup?.(async () => {
    rmSync(folder, { recursive: true, force: true });
    await scratch?.drop();
  });
  let now = Date.parse("2027-01-01T06:00:00Z");
  const clock = {
    now: () => now,
    advance: (ms: number) => {
      now += ms;
    },
  };
  const mail = mailCatcher();
  const config = loadConfig({
    SVC_DATA_DIR: folder,
    DATABASE_URL: scratch?.url ?? "",
    SVC_SEED_DEMO: "0",
    SVC_LOG_LEVEL: "warn",
    SVC_PUBLIC_URL: "http://127.0.0.1:3000",
    // The world sweeps by hand, once a simulated day.
    SVC_RETENTION_INTERVAL_MS: "0",
    // The soak measures size, not time: a busy machine must not turn a slow read into a 503.
    SVC_READ_DEADLINE_MS: "60000",
  });
  const deps = await createDeps(config, { now: clock.now, logger: createLogger("warn"), mailTransport: mail });
  try {
    await startDeps(deps);
    const world = await SoakWorld.start({
      deps,
      app: createApp(deps),
      clock,
      operatorToken: config.operatorToken,
      mail,
      mix,
    });
    const db = deps.database.db;
    const server = deps.database.kind === "server";
    // Autovacuum on a server runs every minute a table changed enough (this machine's test server
    // has it off); a simulated day is a second or two, so the soak runs it by hand.
    const standIn = async () => {
      if (server) await db.execute(sql`vacuum (analyze)`);
    };
    await standIn();
    const empty = await measureStore(db);
    const results: SoakWeek[] = [];
    const t0 = performance.now();
    for (let week = 1; week <= options.weeks; week++) {
      let peak = 0;
      for (let d = 0; d < 7; d++) {
        await world.day();
        await standIn();
        peak = Math.max(peak, await databaseBytes(db));
      }
      const m: StoreMeasure = await measureStore(db);
      const live = world.liveReaders();
      const stored = m.databaseBytes - empty.databaseBytes;
      const row: SoakWeek = {
        week,
        date: new Date(now).toISOString().slice(0, 10),
        databaseBytes: m.databaseBytes,
        storedBytes: stored,
        peakStoredBytes: peak - empty.databaseBytes,
        folderBytes: server ? null : folderBytes(join(folder, "pg")),
        liveReaders: live,
        bytesPerLiveReader: Math.round(m.databaseBytes / live),
        storedBytesPerLiveReader: Math.round(stored / live),
        catalogBytes: m.catalogBytes,
        catalog: m.catalog,
        tables: m.tables,
        seconds: Math.round((performance.now() - t0) / 1000),
      };
      results.push(row);
      log(weekLine(row));
    }
    return {
      store: server ? "postgres" : "embedded",
      weeks: options.weeks,
      mix,
      vacuum: server
        ? "VACUUM (ANALYZE) of the database after each simulated day, standing in for autovacuum"
        : "the retention sweep's own (VACUUM (ANALYZE) of the tables, pg_statistic, CHECKPOINT)",
      emptyBytes: empty.databaseBytes,
      flatness: flatness(results),
      results,
    };
  } finally {
    await stopDeps(deps);
    await scratch?.drop();
    rmSync(folder, { recursive: true, force: true });
  }
}

async function databaseBytes(db: Db): Promise<number> {
  const [size] = rowsOf<{ bytes: number | string }>(
    await db.execute(sql`select pg_database_size(current_database())::float8 as bytes`),
  );
  return Number(size?.bytes ?? 0);
}
