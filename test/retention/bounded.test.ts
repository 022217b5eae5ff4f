import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { flatness, type SoakWeek } from "../../bench/soak-report";
import {
  DEFAULT_MIX,
  demoDocument,
  mailCatcher,
  measureStore,
  SoakWorld,
  type StoreMeasure,
} from "../../bench/soak-world";
import type { Db } from "../../db/client";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type Harness, OPERATOR_TOKEN, startHarness } from "../helpers/harness";

/**
 * The soak's world at a small scale (bench/soak.ts runs it at 1,000 readers for 13 weeks): a few
 * readers for ten simulated weeks, with short retention settings and the demo's article meter
 * counting per week instead of per month, so that everything the mix writes has ended and been
 * swept by week 7 (a session lives 30 days and a decision count's day row 31, whatever the
 * settings; the day rows' index pages, freed from week 5, are reused from week 7) and each week is measured at
 * the same point of the meters' periods. From then on every table's rows and bytes, and the
 * catalog's bytes, must stop growing (the sweep vacuums on the embedded store; on a server the
 * test runs autovacuum's part by hand, as bench/soak.ts does): a table with no rule, a rule
 * whose cap is above what the mix reaches, or space that deleted rows never give back shows here.
 * Not a timing test: nothing is timed.
 */
const WEEKS = 10;
const SETTLED = 7;
/** Rows a table may gain between the two halves: the mix is random. */
const ROW_TOLERANCE = 0.1;
const ROW_SLACK = 3;
/** Bytes: a page or two of a small table (a row more can cost a page), and 10%. */
const BYTE_SLACK = 16_384;

describe.each(storeKinds)("retention bounds every table the soak's mix writes (%s store)", (kind) => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let h: Harness;
  const weeks: StoreMeasure[] = [];
  let emptyBytes = 0;
  /** Rows after the first day's requests, before its sweep. */
  let written: Record<string, number> = {};

  beforeAll(async () => {
    db = await freshDatabase(kind);
    const mail = mailCatcher();
    h = await startHarness(db, {
      mailTransport: mail,
      config: {
        SVC_RETENTION_INTERVAL_MS: "0",
        // Sizes, not time: a busy machine must not turn a slow read into a 503.
        SVC_READ_DEADLINE_MS: "60000",
        SVC_RETAIN_CHANGE_LOG_MINUTES: "5",
        SVC_RETAIN_METER_DAYS: "1",
        SVC_RETAIN_EXPIRED_DAYS: "1",
        SVC_RETAIN_MAIL_DAYS: "1",
        SVC_RETAIN_AUDIT_DAYS: "7",
        SVC_RETAIN_DOCUMENT_DAYS: "3",
        // Decision counts (src/insight) at the shortest each grain allows: a day row lives 31 days.
        SVC_RETAIN_DECISIONS_BY_MINUTE_DAYS: "1",
        SVC_RETAIN_DECISIONS_BY_HOUR_DAYS: "8",
        SVC_RETAIN_DECISIONS_BY_DAY_DAYS: "31",
      },
    });
    h.clock.set(Date.parse("2027-01-01T06:00:00Z"));
    const document = demoDocument();
    (document.meters as { articles: { period: string } }).articles.period = "week";
    const world = await SoakWorld.start({
      deps: h.deps,
      app: h.app,
      clock: h.clock,
      operatorToken: OPERATOR_TOKEN,
      mail,
      mix: { ...DEFAULT_MIX, readers: 8, churn: 0.25, signInsPerDay: 2, accounts: 12, deploysPerDay: 2 },
      document,
    });
    emptyBytes = (await measureStore(db.db)).databaseBytes;
    for (let week = 1; week <= WEEKS; week++) {
      for (let d = 0; d < 7; d++) {
        await world.activity();
        if (week === 1 && d === 0) {
          // The counters first (a flush timer may or may not have run during the day's requests).
          await h.deps.flusher.flushAll();
          written = await rowCounts(db.db);
        }
        await world.endDay();
        // Autovacuum's part on a server (bench/soak.ts does the same); the sweep does it embedded.
        if (kind === "server") await db.db.execute(sql`vacuum (analyze)`);
      }
      weeks.push(await measureStore(db.db));
    }
  }, 300_000);
  afterAll(async () => {
    await h.stop();
    await db.drop();
  }, 60_000);

  /** The largest value in weeks SETTLED..mid, and in the weeks after. */
  function halves(of: (m: StoreMeasure) => number): { earlier: number; later: number } {
    const settled = weeks.slice(SETTLED - 1);
    const half = Math.ceil(settled.length / 2);
    const peak = (ms: StoreMeasure[]) => Math.max(...ms.map(of));
    return { earlier: peak(settled.slice(0, half)), later: peak(settled.slice(half)) };
  }

  it("writes what a soak writes: meters, sessions, links, mail, budgets, versions, the log", () => {
    const empty = [
      "meter_seen",
      "meter_counts",
      "meter_keys",
      "sessions",
      "magic_links",
      "mail_outbox",
      "mail_budget",
      "site_documents",
      "change_log",
      "audit_log",
      "users",
      "streaming_values",
    ].filter((table) => (written[table] ?? 0) === 0);
    expect(empty).toEqual([]);
  });

  it("sweeps what ended: past meter periods, expired sessions and links, old versions and log rows", () => {
    const last = weeks.at(-1)!.tables;
    // Each meter's current period and the last ones within their grace (ended everywhere, UTC+14, plus a day).
    expect(last.meter_keys?.rows ?? 0).toBeLessThanOrEqual(6);
    // Two deploys a day kept 3 days (the newest 10 whatever their age).
    expect(last.site_documents?.rows ?? 0).toBeLessThanOrEqual(10);
    // Sessions live 30 days, then 1 day of grace: at most 32 days of 2 sign-ins.
    expect(last.sessions?.rows ?? 0).toBeLessThanOrEqual(32 * 2);
    // The log keeps 5 minutes and its newest row; a day's writes all happen at one instant.
    expect(last.change_log?.rows ?? 0).toBeLessThanOrEqual(10);
    // Deploys are audited: 7 days of 2.
    expect(last.audit_log?.rows ?? 0).toBeLessThanOrEqual(8 * 2);
  });

  it("keeps every table's row count level once the first month and its graces have passed", () => {
    const growing = Object.keys(weeks.at(-1)!.tables).filter((table) => {
      const { earlier, later } = halves((m) => m.tables[table]?.rows ?? 0);
      return later > Math.max(earlier * (1 + ROW_TOLERANCE), earlier + ROW_SLACK);
    });
    expect(growing).toEqual([]);
  });

  it("gives the space of swept rows back: tables, indexes, TOAST and the catalog stop growing", () => {
    const growing = Object.keys(weeks.at(-1)!.tables).filter((table) => {
      const { earlier, later } = halves((m) => m.tables[table]?.bytes ?? 0);
      return later > Math.max(earlier * 1.1, earlier + BYTE_SLACK);
    });
    expect(growing).toEqual([]);
    // Every ANALYZE rewrites pg_statistic's rows: the sweep's VACUUM of it gives them back.
    const catalog = halves((m) => m.catalogBytes);
    expect(catalog.later).toBeLessThanOrEqual(catalog.earlier + BYTE_SLACK);
    const database = halves((m) => m.databaseBytes);
    expect(database.later).toBeLessThanOrEqual(database.earlier * 1.02);
  });

  it("is judged flat by the soak's own verdict", () => {
    const asWeeks: Pick<SoakWeek, "week" | "databaseBytes" | "peakStoredBytes" | "tables" | "catalogBytes">[] =
      weeks.map((m, i) => ({
        week: i + 1,
        databaseBytes: m.databaseBytes,
        peakStoredBytes: m.databaseBytes - emptyBytes,
        tables: m.tables,
        catalogBytes: m.catalogBytes,
      }));
    const verdict = flatness(asWeeks, SETTLED);
    expect(verdict.held).toBe(true);
    expect(verdict.growingTables).toEqual([]);
  });
});

/** Exact rows of every table of the project. */
async function rowCounts(db: Db): Promise<Record<string, number>> {
  const measure = await measureStore(db);
  return Object.fromEntries(Object.entries(measure.tables).map(([t, size]) => [t, size.rows]));
}

describe("the soak's verdict on flatness", () => {
  const week = (n: number, stored: number) => ({
    week: n,
    databaseBytes: 10_000_000 + stored,
    peakStoredBytes: stored,
    tables: { t: { bytes: stored, heap: stored, indexes: 0, toast: 0, rows: 0, dead: 0 } },
  });

  it("calls a saw-tooth that peaks no higher flat, and steady growth not flat", () => {
    const saw = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((n) => week(n, n < 6 ? n * 100_000 : [900_000, 700_000][n % 2]!));
    expect(flatness(saw).held).toBe(true);
    const growing = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10].map((n) => week(n, n * 100_000));
    const verdict = flatness(growing);
    expect(verdict.held).toBe(false);
    expect(verdict.growingTables).toEqual(["t"]);
    expect(verdict.growth).toBeCloseTo(1_000_000 / 800_000 - 1, 5);
    // The catalog counts too: pg_statistic's dead rows grew it by about 230 KB a simulated week
    // (14 weeks of the soak) before the sweep vacuumed it.
    const catalog = Array.from({ length: 14 }, (_, i) => ({
      ...week(i + 1, 900_000),
      catalogBytes: 8_100_000 + (i + 1) * 230_000,
    }));
    expect(flatness(catalog).growingTables).toEqual(["(catalog)"]);
  });

  it("does not judge a run too short to have settled", () => {
    expect(flatness([1, 2, 3, 4, 5, 6, 7].map((n) => week(n, n * 100_000))).held).toBeNull();
  });
});
