import { describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import postgres from "postgres";
import { type Db, openDatabase, rowsOf } from "../../db/client";
import { DrizzleMeterStore, loadStatement } from "../../src/counters/drizzle-meter-store";
import { countOf, holds, MeterCounters, meterKey } from "../../src/counters/meter-counters";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { until } from "../helpers/wait";

/**
 * A reader with 5 calls (and `seen` articles) stored by one process, and a second process over
 * the same database that holds nothing of the reader yet: what decide meets after eviction.
 */
async function storedByAnother(db: Db, kind: string, seen: readonly string[]): Promise<MeterCounters> {
  const exclusiveWriter = kind === "embedded";
  const first = new MeterCounters(new DrizzleMeterStore(db), { exclusiveWriter });
  await first.prime();
  const calls = first.table("t", "s", "calls", "2026-11", false);
  await calls.load("reader");
  for (let i = 0; i < 5; i++) calls.tickCount("reader");
  if (seen.length > 0) {
    const articles = first.table("t", "s", "articles", "2026-11", true);
    await articles.load("reader");
    for (const article of seen) articles.tickSeen("reader", article);
  }
  await first.flush();
  const second = new MeterCounters(new DrizzleMeterStore(db), { exclusiveWriter });
  await second.prime();
  return second;
}

/** Every node of an EXPLAIN (FORMAT JSON) plan. */
function planNodes(plan: Record<string, unknown>): Record<string, unknown>[] {
  const children = (plan.Plans as Record<string, unknown>[] | undefined) ?? [];
  return [plan, ...children.flatMap(planNodes)];
}

/** Eviction runs in a task after the one that went past the cap: waits for it. */
const evicted = () => new Promise<void>((resolve) => setImmediate(resolve));

describe.each(storeKinds)("meter counters (%s store)", (kind) => {
  it("reads back flushed counts and seen members in a new instance; an exclusive writer skips reads of keys never stored", async () => {
    const db = await freshDatabase(kind);
    try {
      const exclusive = kind === "embedded";
      const first = new MeterCounters(new DrizzleMeterStore(db.db), { exclusiveWriter: exclusive });
      await first.prime();
      const articles = first.table("t", "s", "articles", "2026-11", true);
      const calls = first.table("t", "s", "calls", "2026-11-21", false);
      await articles.load("reader");
      expect(articles.tickSeen("reader", "a-1")).toBe(true);
      expect(articles.tickSeen("reader", "a-1")).toBe(false);
      expect(articles.tickSeen("reader", "a-2")).toBe(true);
      expect(articles.tickSeen("reader", "a-3")).toBe(true);
      await calls.load("reader");
      calls.tickCount("reader");
      calls.tickCount("reader");
      calls.tickCount("reader");
      expect(first.pendingCount).toBe(2);
      await first.flush();
      expect(first.pendingCount).toBe(0);

      // A new process: it must learn the stored keys (prime) or it would think them absent.
      const second = new MeterCounters(new DrizzleMeterStore(db.db), { exclusiveWriter: exclusive });
      await second.prime();
      const seenAgain = second.table("t", "s", "articles", "2026-11", true);
      await seenAgain.load("reader");
      const value = seenAgain.peek("reader");
      expect(value).toBeDefined();
      expect(countOf(value ?? 0)).toBe(3);
      expect(holds(value ?? 0, "a-2")).toBe(true);
      expect(seenAgain.tickSeen("reader", "a-1")).toBe(false);
      const callsAgain = second.table("t", "s", "calls", "2026-11-21", false);
      await callsAgain.load("reader");
      expect(callsAgain.peek("reader")).toBe(3);
      await seenAgain.load("newcomer");
      expect(countOf(seenAgain.peek("newcomer") ?? -1)).toBe(0);
      // Another period is another table: nothing carried over.
      const nextMonth = second.table("t", "s", "articles", "2026-12", true);
      await nextMonth.load("reader");
      expect(countOf(nextMonth.peek("reader") ?? -1)).toBe(0);
    } finally {
      await db.drop();
    }
  }, 60_000);

  it("evicts the oldest clean entries past the cap, keeps dirty ones, and reads evicted ones back", async () => {
    const db = await freshDatabase(kind);
    try {
      const counters = new MeterCounters(new DrizzleMeterStore(db.db), {
        maxEntries: 10,
        exclusiveWriter: kind === "embedded",
      });
      await counters.prime();
      const calls = counters.table("t", "s", "calls", "all", false);
      for (let i = 0; i < 10; i++) {
        await calls.load(`r${i}`);
        calls.tickCount(`r${i}`);
      }
      await counters.flush();
      // Dirty entries are never evicted, even past the cap.
      await calls.load("dirty");
      calls.tickCount("dirty");
      // Past the cap until the eviction's task has run.
      expect(counters.size).toBe(11);
      await evicted();
      expect(counters.size).toBe(9);
      expect(calls.peek("r0")).toBeUndefined();
      expect(calls.peek("r1")).toBeUndefined();
      expect(calls.peek("dirty")).toBe(1);
      await calls.load("r0");
      expect(calls.peek("r0")).toBe(1);
      // A table emptied by eviction stays the one registered: handles held by decide keep
      // counting where later lookups (and flushes) find them.
      const small = new MeterCounters(new DrizzleMeterStore(db.db), {
        maxEntries: 2,
        exclusiveWriter: kind === "embedded",
      });
      await small.prime();
      const old = small.table("t", "s", "calls", "2026-10", false);
      await old.load("x");
      old.tickCount("x");
      await small.flush();
      const current = small.table("t", "s", "calls", "2026-11", false);
      for (const subject of ["y", "z"]) await current.load(subject);
      await evicted();
      expect(old.size).toBe(0);
      expect(small.table("t", "s", "calls", "2026-10", false)).toBe(old);
      await old.load("x");
      expect(old.peek("x")).toBe(1);
    } finally {
      await db.drop();
    }
  }, 60_000);

  it("shares one subject slot among a site's meters and frees it only when no meter holds the subject", async () => {
    const db = await freshDatabase(kind);
    try {
      const counters = new MeterCounters(new DrizzleMeterStore(db.db), {
        maxEntries: 4,
        exclusiveWriter: kind === "embedded",
      });
      await counters.prime();
      const calls = counters.table("t", "s", "calls", "all", false);
      const seen = counters.table("t", "s", "articles", "all", true);
      const elsewhere = counters.table("t", "other", "calls", "all", false);
      await calls.load("x");
      await seen.load("x");
      const x = calls.find("x");
      expect(x).toBeGreaterThanOrEqual(0);
      expect(seen.find("x")).toBe(x);
      // Another site has its own subjects: holding one there holds nothing here.
      await elsewhere.load("only-there");
      expect(elsewhere.find("only-there")).toBeGreaterThanOrEqual(0);
      expect(calls.find("only-there")).toBe(-1);
      expect(seen.find("only-there")).toBe(-1);
      calls.tickCount("x");
      seen.tickSeen("x", "a-1");
      await counters.flush();

      // Four held (x twice, only-there, y); z is the fifth, past the cap of 4: the oldest clean
      // entries go, calls' first (x, then y), down to 90% of the cap.
      await calls.load("y");
      const y = calls.find("y");
      await calls.load("z");
      await evicted();
      expect(counters.size).toBe(3);
      expect(calls.peek("x")).toBeUndefined();
      expect(calls.peek("y")).toBeUndefined();
      expect(calls.peek("z")).toBe(0);
      // The articles meter still holds x, in the same slot, with its value.
      expect(seen.find("x")).toBe(x);
      expect(holds(seen.peek("x") ?? 0, "a-1")).toBe(true);
      // No meter held y any more: its slot was freed and goes to w, which only calls holds.
      await calls.load("w");
      expect(calls.find("w")).toBe(y);
      expect(seen.find("w")).toBe(-1);
      expect(seen.find("y")).toBe(-1);
      // x is read back into calls, in the slot the articles meter kept for it.
      await calls.load("x");
      expect(calls.find("x")).toBe(x);
      expect(calls.peek("x")).toBe(1);
    } finally {
      await db.drop();
    }
  }, 60_000);
});

describe.each(storeKinds)("meter counters: seen members (%s store)", (kind) => {
  it("keeps members past the article-id bound and frees several-member entries on eviction", async () => {
    const db = await freshDatabase(kind);
    try {
      // One article id is interned; every later one is kept as given.
      const counters = new MeterCounters(new DrizzleMeterStore(db.db), {
        maxEntries: 3,
        maxArticleIds: 1,
        exclusiveWriter: kind === "embedded",
      });
      await counters.prime();
      const seen = counters.table("t", "s", "articles", "all", true);
      await seen.load("one");
      await seen.load("past");
      await seen.load("many");
      expect(seen.tickSeen("one", "a-1")).toBe(true);
      expect(seen.tickSeen("past", "b-1")).toBe(true);
      expect(seen.tickSeen("past", "b-1")).toBe(false);
      for (const item of ["a-1", "c-1", "c-2"]) expect(seen.tickSeen("many", item)).toBe(true);
      expect(seen.tickSeen("many", "c-2")).toBe(false);
      expect(seen.peek("one")).toBe("a-1");
      expect(seen.peek("past")).toEqual(["b-1"]);
      expect(seen.peek("many")).toEqual(["a-1", "c-1", "c-2"]);
      await counters.flush();
      // Past the cap: all three are clean, so the oldest go (one and past, down to 90% of the cap)
      // once the eviction's task runs, and past's several-member entry is freed for reuse.
      await seen.load("fourth");
      expect(seen.tickSeen("fourth", "d-1")).toBe(true);
      expect(seen.tickSeen("fourth", "d-2")).toBe(true);
      expect(seen.peek("fourth")).toEqual(["d-1", "d-2"]);
      await evicted();
      expect(seen.find("one")).toBe(-1);
      expect(seen.find("past")).toBe(-1);
      // Read back: past's members go to a freed entry, which must not be fourth's.
      await seen.load("one");
      expect(seen.peek("one")).toBe("a-1");
      await seen.load("past");
      expect(seen.peek("past")).toEqual(["b-1"]);
      await seen.load("many");
      expect([...(seen.peek("many") as string[])].sort()).toEqual(["a-1", "c-1", "c-2"]);
      expect(seen.peek("fourth")).toEqual(["d-1", "d-2"]);
    } finally {
      await db.drop();
    }
  }, 60_000);
});

describe.each(storeKinds)("meter counters: reading a slot as decide does (%s store)", (kind) => {
  it("gives each held value's count and members through countAt and holdsAt, ticked or read back", async () => {
    const db = await freshDatabase(kind);
    try {
      const expectSlots = (counters: MeterCounters) => {
        const calls = counters.table("t", "s", "calls", "2026-11", false);
        const seen = counters.table("t", "s", "articles", "2026-11", true);
        // Every way a value is held: a count; no members; one interned id; one id past the
        // interning bound (kept in a list of one); several ids.
        const cases: [string, number, string[]][] = [
          ["none", 0, []],
          ["one", 1, ["a-1"]],
          ["past", 1, ["b-1"]],
          ["many", 3, ["a-1", "c-1", "c-2"]],
        ];
        const callsAt = calls.find("reader");
        expect(callsAt).toBeGreaterThanOrEqual(0);
        expect(calls.countAt(callsAt)).toBe(4);
        expect(calls.holdsAt(callsAt, "a-1")).toBe(false);
        for (const [subject, count, members] of cases) {
          const at = seen.find(subject);
          expect(at).toBeGreaterThanOrEqual(0);
          const value = seen.peek(subject);
          expect(value).toBeDefined();
          expect({ subject, count: seen.countAt(at) }).toEqual({ subject, count });
          expect(countOf(value as NonNullable<typeof value>)).toBe(count);
          for (const item of [...members, "a-1", "b-1", "c-2", "zzz"]) {
            const expected = members.includes(item);
            expect({ subject, item, held: seen.holdsAt(at, item) }).toEqual({ subject, item, held: expected });
            expect(holds(value as NonNullable<typeof value>, item)).toBe(expected);
          }
        }
      };
      const exclusiveWriter = kind === "embedded";
      // One article id is interned; every later one is kept as given.
      const first = new MeterCounters(new DrizzleMeterStore(db.db), { exclusiveWriter, maxArticleIds: 1 });
      await first.prime();
      const calls = first.table("t", "s", "calls", "2026-11", false);
      const seen = first.table("t", "s", "articles", "2026-11", true);
      await calls.load("reader");
      for (let i = 0; i < 4; i++) calls.tickCount("reader");
      for (const subject of ["none", "one", "past", "many"]) await seen.load(subject);
      seen.tickSeen("one", "a-1");
      seen.tickSeen("past", "b-1");
      for (const item of ["a-1", "c-1", "c-2"]) seen.tickSeen("many", item);
      expectSlots(first);
      await first.flush();
      // Read back from Postgres by another instance: the values are installed from rows.
      const second = new MeterCounters(new DrizzleMeterStore(db.db), { exclusiveWriter, maxArticleIds: 1 });
      await second.prime();
      await second.table("t", "s", "calls", "2026-11", false).load("reader");
      const seenBack = second.table("t", "s", "articles", "2026-11", true);
      for (const subject of ["none", "one", "past", "many"]) await seenBack.load(subject);
      expectSlots(second);
    } finally {
      await db.drop();
    }
  }, 60_000);
});

describe.each(storeKinds)("meter counters: a failed flush (%s store)", (kind) => {
  it("keeps its deltas and members, merged with what was ticked since", async () => {
    const db = await freshDatabase(kind);
    try {
      const counters = new MeterCounters(new DrizzleMeterStore(db.db), { exclusiveWriter: kind === "embedded" });
      const calls = counters.table("t", "s", "calls", "all", false);
      const seen = counters.table("t", "s", "articles", "all", true);
      await calls.load("r");
      await seen.load("r");
      calls.tickCount("r");
      seen.tickSeen("r", "a-1");
      // A real failure: the table is away while the flush runs.
      await db.db.execute(sql`alter table meter_seen rename to meter_seen_away`);
      // Settled by hand: bun test's `expect(...).rejects` stops delivering the embedded
      // database thread's replies (Bun 1.4.5), so the flush would never finish.
      const failure = await counters.flush().then(
        () => null,
        (error: unknown) => error,
      );
      expect(failure).toBeInstanceOf(Error);
      calls.tickCount("r");
      seen.tickSeen("r", "a-2");
      expect(counters.pendingCount).toBe(2);
      await db.db.execute(sql`alter table meter_seen_away rename to meter_seen`);
      await counters.flush();
      const fresh = new MeterCounters(new DrizzleMeterStore(db.db), { exclusiveWriter: false });
      const freshCalls = fresh.table("t", "s", "calls", "all", false);
      const freshSeen = fresh.table("t", "s", "articles", "all", true);
      await freshCalls.load("r");
      await freshSeen.load("r");
      expect(freshCalls.peek("r")).toBe(2);
      expect(countOf(freshSeen.peek("r") ?? 0)).toBe(2);
    } finally {
      await db.drop();
    }
  }, 60_000);
});

describe.each(storeKinds)("meter counters: flushing a backlog (%s store)", (kind) => {
  it("writes more subjects than one statement holds, and keeps what is ticked while a flush is in flight", async () => {
    const db = await freshDatabase(kind);
    try {
      const counters = new MeterCounters(new DrizzleMeterStore(db.db), { exclusiveWriter: kind === "embedded" });
      await counters.prime();
      const calls = counters.table("t", "s", "calls", "all", false);
      const seen = counters.table("t", "s", "articles", "all", true);
      // Ticked first, so the first transaction takes it along with 4,999 of the calls.
      await seen.load("r0");
      seen.tickSeen("r0", "a-1");
      // 12,000 subjects: three transactions of at most 5,000.
      const subjects = Array.from({ length: 12_000 }, (_, i) => `r${i}`);
      await Promise.all(subjects.map((subject) => calls.load(subject)));
      for (const subject of subjects) calls.tickCount(subject);
      expect(counters.pendingCount).toBe(12_001);
      // The flush takes its first batch before it yields; these ticks arrive while it is in flight.
      const flushing = counters.flush();
      calls.tickCount("r0");
      seen.tickSeen("r0", "a-2");
      await flushing;
      expect(counters.pendingCount).toBe(2);
      const stored = async () =>
        rowsOf<{ n: number; total: number; seen: number }>(
          await db.db.execute(sql`select count(*)::int as n, sum(count)::int as total,
            (select count(*)::int from meter_seen) as seen from meter_counts`),
        )[0];
      // Seen meters are stored as members only: no count row for them.
      expect(await stored()).toEqual({ n: 12_000, total: 12_000, seen: 1 });
      await counters.flush();
      expect(counters.pendingCount).toBe(0);
      expect(await stored()).toEqual({ n: 12_000, total: 12_001, seen: 2 });
      expect(calls.peek("r0")).toBe(2);
      expect(countOf(seen.peek("r0") ?? 0)).toBe(2);
    } finally {
      await db.drop();
    }
  }, 60_000);

  it("keeps every dirty subject when its queue wraps around and grows mid-flush", async () => {
    const db = await freshDatabase(kind);
    try {
      const counters = new MeterCounters(new DrizzleMeterStore(db.db), { exclusiveWriter: kind === "embedded" });
      await counters.prime();
      const calls = counters.table("t", "s", "calls", "all", false);
      const first = Array.from({ length: 10 }, (_, i) => `a${i}`);
      const second = Array.from({ length: 20 }, (_, i) => `b${i}`);
      await Promise.all([...first, ...second].map((subject) => calls.load(subject)));
      for (const subject of first) calls.tickCount(subject);
      // The flush has taken a0..a9 (the queue's head moved on); twenty more arrive meanwhile,
      // so the queue wraps past its end and must grow while its head is not at the start.
      const flushing = counters.flush();
      for (const subject of second) calls.tickCount(subject);
      for (const subject of first.slice(0, 3)) calls.tickCount(subject);
      await flushing;
      expect(counters.pendingCount).toBe(23);
      await counters.flush();
      expect(counters.pendingCount).toBe(0);
      const rows = rowsOf<{ subject: string; count: number }>(
        await db.db.execute(sql`select subject, count from meter_counts`),
      );
      const expected = [...first.map((s, i) => `${s}:${i < 3 ? 2 : 1}`), ...second.map((s) => `${s}:1`)].sort();
      expect(rows.map((r) => `${r.subject}:${Number(r.count)}`).sort()).toEqual(expected);
    } finally {
      await db.drop();
    }
  }, 60_000);

  it("never evicts a subject whose flush is in flight, so a failed flush puts its delta back on it", async () => {
    const db = await freshDatabase(kind);
    try {
      const counters = new MeterCounters(new DrizzleMeterStore(db.db), {
        maxEntries: 4,
        exclusiveWriter: kind === "embedded",
      });
      await counters.prime();
      const calls = counters.table("t", "s", "calls", "all", false);
      for (const subject of ["a", "b", "c", "d"]) {
        await calls.load(subject);
        calls.tickCount(subject);
      }
      // Writes fail (reads still work, as the server store needs them for e, f and g), with an
      // error that is not the rows' fault (P0001, not a data error), so the rows are kept.
      await db.db.execute(sql`create function refuse() returns trigger language plpgsql
        as $$ begin raise exception 'writes are off'; end $$`);
      await db.db.execute(sql`create trigger refuse before insert or update on meter_counts
        for each row execute function refuse()`);
      const flushing = counters.flush().then(
        () => null,
        (error: unknown) => error,
      );
      // Past the cap while a..d are in flight: only clean subjects may go, and there are none.
      for (const subject of ["e", "f", "g"]) await calls.load(subject);
      expect(await flushing).toBeInstanceOf(Error);
      for (const subject of ["a", "b", "c", "d"]) expect(calls.peek(subject)).toBe(1);
      expect(counters.pendingCount).toBe(4);
      await db.db.execute(sql`drop trigger refuse on meter_counts`);
      await counters.flush();
      const fresh = new MeterCounters(new DrizzleMeterStore(db.db), { exclusiveWriter: false });
      const again = fresh.table("t", "s", "calls", "all", false);
      for (const subject of ["a", "d"]) {
        await again.load(subject);
        expect(again.peek(subject)).toBe(1);
      }
    } finally {
      await db.drop();
    }
  }, 60_000);

  it("ticks a value it does not hold once it has read it, so the tick lands on the stored value; the flush waits for it", async () => {
    const db = await freshDatabase(kind);
    try {
      // Another process, holding nothing of the reader (as after its entries were dropped).
      const second = await storedByAnother(db.db, kind, ["a-1", "a-2"]);
      const callsThere = second.table("t", "s", "calls", "2026-11", false);
      const articlesThere = second.table("t", "s", "articles", "2026-11", true);
      callsThere.tickWhenRead("reader", null);
      articlesThere.tickWhenRead("reader", "a-3");
      articlesThere.tickWhenRead("reader", "a-1");
      callsThere.tickWhenRead("newcomer", null);
      // One flush: it waits for the reads, then writes the ticks.
      await second.flush();
      expect(second.pendingCount).toBe(0);
      expect(callsThere.peek("reader")).toBe(6);
      expect(callsThere.peek("newcomer")).toBe(1);
      expect([...(articlesThere.peek("reader") as string[])].sort()).toEqual(["a-1", "a-2", "a-3"]);
      const stored = rowsOf<{ subject: string; count: number }>(
        await db.db.execute(sql`select subject, count from meter_counts order by subject`),
      );
      expect(stored.map((r) => `${r.subject}:${Number(r.count)}`)).toEqual(["newcomer:1", "reader:6"]);
      const members = rowsOf<{ item: string }>(await db.db.execute(sql`select item from meter_seen order by item`));
      expect(members.map((r) => r.item)).toEqual(["a-1", "a-2", "a-3"]);

      // Held values are ticked at once.
      callsThere.tickWhenRead("reader", null);
      expect(callsThere.peek("reader")).toBe(7);
    } finally {
      await db.drop();
    }
  }, 60_000);

  it("ticks a value it could not read onto an empty one, so Postgres still adds the tick", async () => {
    const db = await freshDatabase(kind);
    try {
      const second = await storedByAnother(db.db, kind, []);
      const callsThere = second.table("t", "s", "calls", "2026-11", false);
      // Reads fail (they join meter_keys); the flush after them must still add the tick.
      await db.db.execute(sql`alter table meter_keys rename to meter_keys_away`);
      callsThere.tickWhenRead("reader", null);
      const flushing = second.flush().then(
        () => null,
        (error: unknown) => error,
      );
      // The flush waited for the failed read; its own write failed too (no meter_keys).
      expect(await flushing).toBeInstanceOf(Error);
      expect(callsThere.peek("reader")).toBe(1);
      await db.db.execute(sql`alter table meter_keys_away rename to meter_keys`);
      await second.flush();
      expect(second.pendingCount).toBe(0);
      const stored = rowsOf<{ count: number }>(await db.db.execute(sql`select count from meter_counts`));
      expect(stored.map((r) => Number(r.count))).toEqual([6]);
    } finally {
      await db.drop();
    }
  }, 60_000);

  it("reads each wanted key by its whole key, also from tables never analyzed (no scan of the meter's other subjects)", async () => {
    const db = await freshDatabase(kind);
    try {
      for (const table of ["meter_keys", "meter_counts", "meter_seen"]) {
        await db.db.execute(sql.raw(`alter table ${table} set (autovacuum_enabled = false)`));
      }
      await db.db.execute(sql`insert into meter_keys (tenant_id, site_id, meter, period) values ('t', 's', 'm', 'p')`);
      await db.db.execute(sql`insert into meter_counts (meter_id, subject, count)
        select id, 'reader-' || g, g from meter_keys, generate_series(1, 3000) g`);
      await db.db.execute(sql`insert into meter_seen (meter_id, subject, item)
        select id, 'reader-' || g, 'a-' || g from meter_keys, generate_series(1, 3000) g`);
      const wanted = ["reader-7", "reader-700", "reader-2999", "reader-none"].map((subject) =>
        meterKey("t", "s", "m", subject, "p"),
      );
      {
        const statement = loadStatement(wanted);
        const [row] = rowsOf<Record<string, unknown>>(
          await db.db.execute(sql`explain (analyze, format json) ${statement}`),
        );
        const raw = Object.values(row ?? {})[0];
        const plan = (typeof raw === "string" ? JSON.parse(raw) : raw) as { Plan: Record<string, unknown> }[];
        const nodes = planNodes((plan[0] as { Plan: Record<string, unknown> }).Plan);
        const removed = nodes.reduce(
          (n, node) =>
            n + Number(node["Rows Removed by Filter"] ?? 0) + Number(node["Rows Removed by Join Filter"] ?? 0),
          0,
        );
        expect(removed).toBe(0);
        // Three counts and three members: the fourth reader has neither.
        expect((plan[0] as { Plan: Record<string, unknown> }).Plan["Actual Rows"]).toBe(6);
      }
      const counters = new MeterCounters(new DrizzleMeterStore(db.db), { exclusiveWriter: false });
      const table = counters.table("t", "s", "m", "p", false);
      await table.load("reader-700");
      expect(table.peek("reader-700")).toBe(700);
    } finally {
      await db.drop();
    }
  }, 60_000);
});

// Two processes on one server database (embedded Postgres has one process): each is a
// MeterCounters over its own connection pool, as a second server process would be.
describe.each(storeKinds.filter((k) => k === "server"))(
  "meter counters: two processes, one new meter key (%s store)",
  (kind) => {
    const keyRows = async (db: Awaited<ReturnType<typeof freshDatabase>>) =>
      rowsOf<{ id: number }>(
        await db.db.execute(
          sql`select id from meter_keys where site_id = 's' and meter = 'calls' and period = '2026-11'`,
        ),
      );
    const storedCount = async (db: Awaited<ReturnType<typeof freshDatabase>>, keyId: number) =>
      rowsOf<{ count: number }>(
        await db.db.execute(sql`select count from meter_counts where meter_id = ${keyId} and subject = 'reader'`),
      ).map((r) => Number(r.count));

    it("waits for a key row another process has inserted but not committed, then writes under that row's id", async () => {
      const db = await freshDatabase(kind);
      const other = postgres(db.url as string, { max: 1, onnotice: () => {} });
      try {
        let commit!: () => void;
        const gate = new Promise<void>((resolve) => {
          commit = resolve;
        });
        let inserted!: (id: number) => void;
        const theirId = new Promise<number>((resolve) => {
          inserted = resolve;
        });
        // The other process's flush: its key row inserted, its transaction still open.
        const theirs = other.begin(async (tx) => {
          const [row] = await tx`insert into meter_keys (tenant_id, site_id, meter, period)
          values ('t', 's', 'calls', '2026-11') returning id`;
          inserted(Number(row?.id));
          await gate;
        });
        const id = await theirId;

        const counters = new MeterCounters(new DrizzleMeterStore(db.db), { exclusiveWriter: false });
        await counters.prime();
        const calls = counters.table("t", "s", "calls", "2026-11", false);
        await calls.load("reader");
        for (let i = 0; i < 3; i++) calls.tickCount("reader");
        let flushed = false;
        const flush = counters.flush().then(() => {
          flushed = true;
        });
        // The insert waits on the uncommitted row with the same key: Postgres shows a backend
        // waiting on a lock, and nothing is written yet.
        const watch = postgres(db.url as string, { max: 1, onnotice: () => {} });
        try {
          const waiting = async () =>
            (
              await watch`select count(*)::int as n from pg_stat_activity
              where datname = current_database() and wait_event_type = 'Lock'`
            )[0]?.n > 0;
          expect(await until(waiting, 10_000, 20)).toBe(true);
        } finally {
          await watch.end({ timeout: 5 });
        }
        expect(flushed).toBe(false);
        commit();
        await theirs;
        await flush;
        expect(counters.pendingCount).toBe(0);
        expect((await keyRows(db)).map((r) => Number(r.id))).toEqual([id]);
        expect(await storedCount(db, id)).toEqual([3]);
      } finally {
        await other.end({ timeout: 5 });
        await db.drop();
      }
    }, 60_000);

    it("creates the key once when both flush at the same time, and adds both processes' counts", async () => {
      const db = await freshDatabase(kind);
      const second = await openDatabase({ url: db.url as string });
      try {
        const processes = [
          new MeterCounters(new DrizzleMeterStore(db.db), { exclusiveWriter: false }),
          new MeterCounters(new DrizzleMeterStore(second.db), { exclusiveWriter: false }),
        ];
        const ticks = [2, 5];
        for (let p = 0; p < processes.length; p++) {
          const counters = processes[p] as MeterCounters;
          await counters.prime();
          const calls = counters.table("t", "s", "calls", "2026-11", false);
          await calls.load("reader");
          for (let i = 0; i < (ticks[p] as number); i++) calls.tickCount("reader");
        }
        await Promise.all(processes.map((c) => c.flush()));
        const rows = await keyRows(db);
        expect(rows).toHaveLength(1);
        expect(await storedCount(db, Number(rows[0]?.id))).toEqual([7]);
        // Each process wrote under the same id, so a third reads the sum.
        const third = new MeterCounters(new DrizzleMeterStore(second.db), { exclusiveWriter: false });
        await third.prime();
        const calls = third.table("t", "s", "calls", "2026-11", false);
        await calls.load("reader");
        expect(calls.peek("reader")).toBe(7);
      } finally {
        await second.close();
        await db.drop();
      }
    }, 60_000);
  },
);
