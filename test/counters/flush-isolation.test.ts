import { describe, expect, it } from "bun:test";
import { createHash } from "node:crypto";
import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../../db/client";
import { DrizzleMeterStore } from "../../src/counters/drizzle-meter-store";
import { Flusher } from "../../src/counters/flusher";
import { type MeterCounters as Counters, MeterCounters } from "../../src/counters/meter-counters";
import { isDataError, sqlStateOf } from "../../src/counters/refused-rows";
import { createLogger } from "../../src/logger";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { startHarness } from "../helpers/harness";

/** A subject Postgres refuses to store: text may not hold NUL (SQLSTATE 22021). */
const BAD = "dev\u0000ice-7";
const badHash = createHash("sha256").update(BAD).digest("hex").slice(0, 16);

function logLines() {
  const lines: string[] = [];
  return { lines, logger: createLogger("debug", (line) => lines.push(line)) };
}

/** Every stored count and seen member, as "site/meter/period/subject=count" and ".../subject:item". */
async function stored(db: Db): Promise<{ counts: string[]; seen: string[] }> {
  const counts = rowsOf<{ site_id: string; meter: string; period: string; subject: string; count: number }>(
    await db.execute(sql`select k.site_id, k.meter, k.period, c.subject, c.count
      from meter_counts c join meter_keys k on k.id = c.meter_id`),
  ).map((r) => `${r.site_id}/${r.meter}/${r.period}/${r.subject}=${Number(r.count)}`);
  const seen = rowsOf<{ site_id: string; meter: string; period: string; subject: string; item: string }>(
    await db.execute(sql`select k.site_id, k.meter, k.period, s.subject, s.item
      from meter_seen s join meter_keys k on k.id = s.meter_id`),
  ).map((r) => `${r.site_id}/${r.meter}/${r.period}/${r.subject}:${r.item}`);
  return { counts: counts.sort(), seen: seen.sort() };
}

const SITES = ["news", "sport", "money"];
const SUBJECTS = 40;

/**
 * Ticks on three sites, a count meter and a seen meter each: subject i gets (i % 3) + 1 calls
 * and articles a-0..a-(i % 2). Returns what Postgres must then hold (beyond `base` calls each).
 */
function tickMany(counters: Counters, round: number): { counts: string[]; seen: string[] } {
  const counts: string[] = [];
  const seen: string[] = [];
  for (const site of SITES) {
    const calls = counters.table("t", site, "calls", "2026-11", false);
    const articles = counters.table("t", site, "articles", "all", true);
    for (let i = 0; i < SUBJECTS; i++) {
      const subject = `reader-${i}`;
      for (let n = 0; n <= i % 3; n++) calls.tickCount(subject);
      counts.push(`${site}/calls/2026-11/${subject}=${((i % 3) + 1) * round}`);
      for (let a = 0; a <= i % 2; a++) {
        articles.tickSeen(subject, `a-${round}-${a}`);
        for (let r = 1; r <= round; r++) seen.push(`${site}/articles/all/${subject}:a-${r}-${a}`);
      }
    }
  }
  return { counts: counts.sort(), seen: seen.sort() };
}

const refusedLines = (lines: string[]) => lines.filter((l) => l.includes("refused by the store"));

describe.each(storeKinds)("counter flush: a row the store refuses (%s store)", (kind) => {
  it("writes every other row, drops only the refused ones (logged once, subject hashed), and later flushes work", async () => {
    const db = await freshDatabase(kind);
    try {
      const counters = new MeterCounters(new DrizzleMeterStore(db.db), { exclusiveWriter: kind === "embedded" });
      await counters.prime();
      const { lines, logger } = logLines();
      // The refused subject on one site's count meter and another site's seen meter, ticked in
      // between the good ones (no read first: a read of it would be refused too on a server).
      counters.table("t", "sport", "calls", "2026-11", false).tickCount(BAD);
      const first = tickMany(counters, 1);
      counters.table("t", "money", "articles", "all", true).tickSeen(BAD, "a-1-0");
      // A good subject whose new member is the refused value: only that member is dropped.
      counters.table("t", "news", "articles", "all", true).tickSeen("reader-0", "bad\u0000item");
      expect(counters.pendingCount).toBe(SITES.length * SUBJECTS * 2 + 2);

      await counters.flush(logger);
      expect(counters.pendingCount).toBe(0);
      expect(await stored(db.db)).toEqual(first);
      const refused = refusedLines(lines);
      expect(refused.length).toBe(3);
      const entries = refused.map((l) => JSON.parse(l) as Record<string, unknown>);
      expect(entries.filter((e) => e.subjectHash === badHash).map((e) => `${e.site}/${e.meter}`)).toEqual([
        "sport/calls",
        "money/articles",
      ]);
      const hash = (v: string) => createHash("sha256").update(v).digest("hex").slice(0, 16);
      expect(entries.filter((e) => e.subjectHash === hash("reader-0"))).toEqual([
        expect.objectContaining({ site: "news", meter: "articles", itemHash: hash("bad\u0000item") }),
      ]);
      for (const e of entries) {
        expect(e).toMatchObject({ tenant: "t", code: "22021" });
        expect(String(e.subjectHash)).toMatch(/^[0-9a-f]{16}$/);
      }
      // The subject itself is never logged, raw or escaped, nor any part of it.
      for (const line of lines) {
        expect(line).not.toContain("dev");
        expect(line).not.toContain("\\u0000");
        expect(line).not.toContain("\u0000");
      }

      // Later ticks are written; the refused count subject ticked again is not retried or logged.
      counters.table("t", "sport", "calls", "2026-11", false).tickCount(BAD);
      const second = tickMany(counters, 2);
      await counters.flush(logger);
      expect(counters.pendingCount).toBe(0);
      expect(await stored(db.db)).toEqual(second);
      expect(refusedLines(lines).length).toBe(3);
      // Memory still answers for the refused subject (what it counted, never stored).
      expect(counters.table("t", "sport", "calls", "2026-11", false).peek(BAD)).toBe(2);

      // A fresh process reads back exactly what was written.
      const fresh = new MeterCounters(new DrizzleMeterStore(db.db), { exclusiveWriter: false });
      const calls = fresh.table("t", "money", "calls", "2026-11", false);
      await calls.load("reader-5");
      expect(calls.peek("reader-5")).toBe(6);
    } finally {
      await db.drop();
    }
  }, 120_000);

  it("on a graceful stop, writes every tick made after a refused row, and reports the row through the server's logger", async () => {
    const db = await freshDatabase(kind);
    try {
      const h = await startHarness(db);
      // No timer: only the stop flushes.
      h.deps.flusher.stop();
      const meters = h.deps.meters;
      meters.table("default", "sport", "calls", "2026-11", false).tickCount(BAD);
      await h.deps.flusher.flushAll();
      expect(refusedLines(h.logger.lines).length).toBe(1);
      // Ticks after the refused row, then the stop.
      meters.table("default", "sport", "calls", "2026-11", false).tickCount(BAD);
      meters.table("default", "sport", "calls", "2026-11", false).tickCount("after-1");
      meters.table("default", "news", "articles", "all", true).tickSeen("after-2", "a-9");
      meters.table("default", "news", "articles", "all", true).tickSeen(BAD, "a-9");
      await h.stop();
      expect(await stored(db.db)).toEqual({
        counts: ["sport/calls/2026-11/after-1=1"],
        seen: ["news/articles/all/after-2:a-9"],
      });
      const refused = refusedLines(h.logger.lines);
      expect(refused.length).toBe(2);
      for (const line of refused) expect(JSON.parse(line).subjectHash).toBe(badHash);
      expect(h.logger.lines.some((l) => l.includes("counter flush failed"))).toBe(false);
    } finally {
      await db.drop();
    }
  }, 120_000);
});

/**
 * The database, with transactions that fail as a lost connection does once `down()` says so
 * (after `okBefore` more of them went through).
 */
function flakyDb(db: Db, error: () => Error): { db: Db; down(okBefore?: number): void; up(): void } {
  let ok = Number.POSITIVE_INFINITY;
  const wrapped = new Proxy(db, {
    get(target, prop) {
      if (prop === "transaction") {
        return (run: Parameters<Db["transaction"]>[0]) => {
          if (ok <= 0) return Promise.reject(error());
          ok -= 1;
          return target.transaction(run);
        };
      }
      const value = Reflect.get(target, prop, target);
      return typeof value === "function" ? value.bind(target) : value;
    },
  });
  return {
    db: wrapped,
    down: (okBefore = 0) => {
      ok = okBefore;
    },
    up: () => {
      ok = Number.POSITIVE_INFINITY;
    },
  };
}

/** What the drivers throw when the store is unreachable or going away. */
const transient: [string, () => Error][] = [
  [
    "postgres.js connection closed",
    () => Object.assign(new Error("write CONNECTION_CLOSED"), { code: "CONNECTION_CLOSED" }),
  ],
  [
    "connection refused",
    () => Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:5432"), { code: "ECONNREFUSED" }),
  ],
  ["embedded store closed", () => new Error("the embedded database is closed")],
  ["server shutting down (57P01)", () => Object.assign(new Error("terminating connection"), { code: "57P01" })],
  [
    "wrapped by drizzle",
    () =>
      Object.assign(new Error("Failed query: insert ..."), { cause: Object.assign(new Error("x"), { code: "08006" }) }),
  ],
];

describe.each(storeKinds)("counter flush: a store that is unreachable (%s store)", (kind) => {
  it("keeps every delta and member when the failure is not the rows' fault", async () => {
    const db = await freshDatabase(kind);
    try {
      for (const [name, error] of transient) {
        await db.db.execute(sql`truncate meter_counts, meter_seen, meter_keys`);
        const flaky = flakyDb(db.db, error);
        const counters = new MeterCounters(new DrizzleMeterStore(flaky.db), { exclusiveWriter: kind === "embedded" });
        await counters.prime();
        const { lines, logger } = logLines();
        const first = tickMany(counters, 1);
        counters.table("t", "sport", "calls", "2026-11", false).tickCount(BAD);
        const pending = counters.pendingCount;
        flaky.down();
        const failure = await counters.flush(logger).then(
          () => null,
          (e: unknown) => e,
        );
        expect([name, failure instanceof Error, isDataError(failure)]).toEqual([name, true, false]);
        expect(counters.pendingCount).toBe(pending);
        expect(refusedLines(lines)).toEqual([]);
        expect(await stored(db.db)).toEqual({ counts: [], seen: [] });
        // Back up: everything is written once, the refused row alone is dropped.
        flaky.up();
        await counters.flush(logger);
        expect(await stored(db.db)).toEqual(first);
        expect(refusedLines(lines).length).toBe(1);
      }
    } finally {
      await db.drop();
    }
  }, 120_000);

  it("keeps the rows not yet written when the store goes away while a refused batch is being split", async () => {
    const db = await freshDatabase(kind);
    try {
      const flaky = flakyDb(db.db, transient[0]![1]);
      const counters = new MeterCounters(new DrizzleMeterStore(flaky.db), { exclusiveWriter: kind === "embedded" });
      await counters.prime();
      const { lines, logger } = logLines();
      const first = tickMany(counters, 1);
      // Last of 301 rows: the first half is written before the split reaches it.
      counters.table("t", "money", "calls", "2026-11", false).tickCount(BAD);
      // Through: the whole batch (refused), its six meters' key rows, the whole again (refused),
      // the first half (written), the second half (refused); then the store goes away.
      flaky.down(1 + SITES.length * 2 + 1 + 1 + 1);
      const failure = await counters.flush(logger).then(
        () => null,
        (e: unknown) => e,
      );
      expect(sqlStateOf(failure)).toBeNull();
      const written = await stored(db.db);
      expect(written.counts.length + written.seen.length).toBe(150);
      expect(counters.pendingCount).toBeGreaterThan(0);
      expect(refusedLines(lines)).toEqual([]);
      // Ticked meanwhile: kept on top of what went back.
      const calls = counters.table("t", "news", "calls", "2026-11", false);
      calls.tickCount("reader-0");
      flaky.up();
      await counters.flush(logger);
      expect(counters.pendingCount).toBe(0);
      const expected = first.counts.map((c) =>
        c === "news/calls/2026-11/reader-0=1" ? "news/calls/2026-11/reader-0=2" : c,
      );
      // Every row once: none lost, none added twice.
      expect(await stored(db.db)).toEqual({ counts: expected, seen: first.seen });
      expect(refusedLines(lines).length).toBe(1);
    } finally {
      await db.drop();
    }
  }, 120_000);
});

describe("isDataError", () => {
  it("takes only classes 22, 23 and 54 as the rows' fault, from the error or its cause", () => {
    const pg = (code: string) => Object.assign(new Error(code), { code });
    expect(isDataError(pg("22021"))).toBe(true);
    expect(isDataError(pg("22003"))).toBe(true);
    expect(isDataError(pg("23514"))).toBe(true);
    expect(isDataError(pg("54000"))).toBe(true);
    expect(isDataError(new Error("wrapped", { cause: pg("22021") }))).toBe(true);
    for (const code of ["08006", "57P01", "40001", "53300", "42P01", "P0001", "XX000"]) {
      expect(isDataError(pg(code))).toBe(false);
    }
    expect(isDataError(Object.assign(new Error("closed"), { code: "CONNECTION_CLOSED" }))).toBe(false);
    expect(isDataError(new Error("the embedded database is closed"))).toBe(false);
    expect(isDataError("22021")).toBe(false);
  });
});

// The flusher passes its logger to every part and keeps going past a part that fails.
describe("Flusher", () => {
  it("gives each part its logger and flushes the next part after one fails", async () => {
    const { lines, logger } = logLines();
    const seen: unknown[] = [];
    const flusher = new Flusher(
      [
        { name: "a", flush: (l) => Promise.reject(Object.assign(new Error("down"), { logged: seen.push(l) })) },
        { name: "b", flush: async (l) => void seen.push(l) },
      ],
      60_000,
      logger,
    );
    await flusher.flushAll();
    expect(seen).toEqual([logger, logger]);
    expect(lines.filter((l) => l.includes("counter flush failed")).length).toBe(1);
  });
});
