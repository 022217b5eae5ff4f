import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync, readFileSync } from "node:fs";
import { jsonSafe, PGliteThread } from "../../db/pglite-thread";

/** The embedded store's client: PGlite in a worker thread, with PGlite's own ordering. */
describe("PGliteThread", () => {
  let db: PGliteThread;
  beforeAll(async () => {
    db = await PGliteThread.open(null);
    await db.query("create table t (id int primary key, label text, at timestamptz, tags text[])");
  }, 60_000);
  afterAll(() => db.close());

  test("runs statements with parameters, in object and array row modes", async () => {
    await db.query("insert into t (id, label, at, tags) values ($1, $2, $3, $4)", [
      1,
      "één",
      "2026-11-21T12:00:00Z",
      ["a", "b"],
    ]);
    const objects = await db.query("select id, label, tags from t where id = $1", [1]);
    expect(objects.rows).toEqual([{ id: 1, label: "één", tags: ["a", "b"] }]);
    const arrays = await db.query("select id, label from t where id = $1", [1], { rowMode: "array" });
    expect(arrays.rows).toEqual([[1, "één"]]);
    // Timestamps stay the strings Postgres sent (drizzle's driver maps them itself).
    const at = await db.query("select at from t where id = 1");
    expect(typeof (at.rows[0] as { at: unknown }).at).toBe("string");
  });

  test("parameters that JSON cannot carry go by structured clone (a Date, bytes)", async () => {
    expect(jsonSafe([1, "x", null, true, ["a", 2]])).toBe(true);
    expect(jsonSafe([new Date(0)])).toBe(false);
    expect(jsonSafe([new Uint8Array([1])])).toBe(false);
    expect(jsonSafe([Number.NaN])).toBe(false);
    expect(jsonSafe([[{ a: 1 }]])).toBe(false);
    const r = await db.query("select $1::timestamptz = '2026-01-02T03:04:05Z'::timestamptz as same", [
      new Date("2026-01-02T03:04:05Z"),
    ]);
    expect(r.rows).toEqual([{ same: true }]);
    const bytes = await db.query("select length($1::bytea) as n", [new Uint8Array([1, 2, 3])]);
    expect(bytes.rows).toEqual([{ n: 3 }]);
  });

  test("a failed statement rejects with Postgres' message and code, and the thread goes on", async () => {
    const failure = await db.query("select * from missing_table").then(
      () => null,
      (e: unknown) => e as Error & { code?: string },
    );
    expect(failure?.message).toContain('relation "missing_table" does not exist');
    expect(failure?.code).toBe("42P01");
    expect((await db.query("select 1 as one")).rows).toEqual([{ one: 1 }]);
  });

  test("a transaction commits, or rolls back everything when its callback throws", async () => {
    await db.transaction(async (tx) => {
      await tx.query("insert into t (id, label) values (10, 'kept')");
      await tx.query("insert into t (id, label) values (11, 'kept too')");
    });
    const failure = await db
      .transaction(async (tx) => {
        await tx.query("insert into t (id, label) values (12, 'gone')");
        await tx.query("insert into t (id, label) values (10, 'duplicate')");
      })
      .then(
        () => null,
        (e: unknown) => e as Error,
      );
    expect(failure?.message).toContain("duplicate key");
    const ids = await db.query("select id from t where id >= 10 order by id");
    expect(ids.rows).toEqual([{ id: 10 }, { id: 11 }]);
  });

  test("statements from outside wait for an open transaction instead of joining it", async () => {
    let inserted: () => void = () => {};
    const open = new Promise<void>((r) => {
      inserted = r;
    });
    let sent: () => void = () => {};
    const outsideSent = new Promise<void>((r) => {
      sent = r;
    });
    let probed: () => void = () => {};
    const probeAnswered = new Promise<void>((r) => {
      probed = r;
    });
    let release: () => void = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    const order: string[] = [];
    const tx = db.transaction(async (t) => {
      await t.query("insert into t (id, label) values (20, 'in tx')");
      inserted();
      await outsideSent;
      // A statement of the transaction's own, sent after the outside one: had that one joined
      // the transaction (or run past it), it would have been answered before this one.
      await t.query("select 1");
      probed();
      await held;
      order.push("tx done");
      throw new Error("roll it back");
    });
    await open;
    const outside = db.query("select count(*)::int as n from t where id = 20").then((r) => {
      order.push("outside ran");
      return r.rows;
    });
    sent();
    await probeAnswered;
    expect(order).toEqual([]);
    release();
    await tx.catch(() => {});
    // It ran after the rollback, so it never saw the transaction's row.
    expect(await outside).toEqual([{ n: 0 }]);
    expect(order).toEqual(["tx done", "outside ran"]);
  });

  test("a closed client refuses further statements", async () => {
    const other = await PGliteThread.open(null);
    await other.close();
    const failure = await other.query("select 1").then(
      () => null,
      (e: unknown) => e as Error,
    );
    expect(failure?.message).toBe("the embedded database is closed");
  });
});

describe("PGliteThread priority", () => {
  test.skipIf(process.platform !== "linux")(
    "the database thread runs at nice 10 while the rest of the process keeps its priority",
    async () => {
      const niceOf = (tid: string) => {
        const stat = readFileSync(`/proc/self/task/${tid}/stat`, "utf8");
        // Fields after the command name (which may hold spaces); nice is field 19 overall.
        return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[16]);
      };
      const before = new Set(readdirSync("/proc/self/task"));
      const db = await PGliteThread.open(null);
      try {
        const added = readdirSync("/proc/self/task").filter((t) => !before.has(t));
        expect(added.map(niceOf)).toContain(10);
        expect(niceOf(String(process.pid))).toBe(0);
      } finally {
        await db.close();
      }
    },
    60_000,
  );
});
