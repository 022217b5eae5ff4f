import { describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { CountAdmissions } from "../../src/counters/count-admissions";
import type { MeterName, SeenAdmission } from "../../src/counters/meter-store";
import { storeKinds } from "../helpers/databases";
import { meterStoreWorld, withSecondPool } from "./meter-store-world";

const meter = (name: string): MeterName => ({ tenant: "default", site: "news", meter: name, period: "2026-11-26" });

const added = (answers: readonly SeenAdmission[]) => answers.filter((a) => a.outcome === "added");

/**
 * Count meters' admissions batched (`CountAdmissions`): the calls that meet in one statement are
 * admitted exactly as one statement each would admit them, on both stores, and across two
 * connection pools on one server (as two processes).
 */
describe.each(storeKinds)("count meters' batched admissions (%s store)", (kind) => {
  const w = meterStoreWorld(kind);

  const stored = async (keyId: number, subject: string) =>
    Number(
      rowsOf<{ count: number | string }>(
        await w.db.db.execute(sql`select count from meter_counts where meter_id = ${keyId} and subject = ${subject}`),
      )[0]?.count ?? -1,
    );

  it("admits exactly the allowance of many calls at once, in fewer statements than calls", async () => {
    const keyId = await w.store.keyId(meter("api"));
    const before = w.store.counts.statements;
    const answers = await Promise.all(
      Array.from({ length: 40 }, () => w.store.admitCount({ ...meter("api"), keyId }, "r1", 10)),
    );
    expect(added(answers).length).toBe(10);
    expect(added(answers).map((a) => a.before)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    for (const a of answers.filter((x) => x.outcome === "full")) expect(a.before).toBe(10);
    expect(await stored(keyId, "r1")).toBe(10);
    // The first call left alone; the 39 that came while it was out went together.
    expect(w.store.counts.statements - before).toBeLessThan(10);
    // Full stays full.
    expect((await w.store.admitCount({ ...meter("api"), keyId }, "r1", 10)).outcome).toBe("full");
  });

  it("counts many readers in one batch, each to its own allowance", async () => {
    const keyId = await w.store.keyId(meter("many"));
    const readers = Array.from({ length: 25 }, (_, i) => `m${i}`);
    const calls = readers.flatMap((r) =>
      Array.from({ length: 4 }, () => w.store.admitCount({ ...meter("many"), keyId }, r, 3)),
    );
    const answers = await Promise.all(calls);
    expect(added(answers).length).toBe(25 * 3);
    for (const r of readers) expect(await stored(keyId, r)).toBe(3);
  });

  it("never lowers a count written behind past the allowance", async () => {
    const keyId = await w.store.keyId(meter("behind"));
    await w.db.db.execute(sql`insert into meter_counts (meter_id, subject, count) values (${keyId}, 'b1', 12)`);
    const answers = await Promise.all([1, 2, 3].map(() => w.store.admitCount({ ...meter("behind"), keyId }, "b1", 10)));
    expect(added(answers).length).toBe(0);
    expect(await stored(keyId, "b1")).toBe(12);
    // A row below it rises only to the allowance.
    await w.db.db.execute(sql`insert into meter_counts (meter_id, subject, count) values (${keyId}, 'b2', 8)`);
    const more = await Promise.all([1, 2, 3, 4].map(() => w.store.admitCount({ ...meter("behind"), keyId }, "b2", 10)));
    expect(added(more).map((a) => a.before)).toEqual([8, 9]);
    expect(await stored(keyId, "b2")).toBe(10);
  });

  it("takes one reader's calls under two allowances (a document changed meanwhile) in turn, not in one statement", async () => {
    const keyId = await w.store.keyId(meter("changed"));
    const name = { ...meter("changed"), keyId };
    const answers = await Promise.all([
      w.store.admitCount(name, "c1", 2),
      w.store.admitCount(name, "c1", 2),
      w.store.admitCount(name, "c1", 5),
      w.store.admitCount(name, "c1", 5),
      w.store.admitCount(name, "c1", 5),
      w.store.admitCount(name, "c1", 2),
    ]);
    expect(answers.map((a) => a.outcome)).toEqual(["added", "added", "added", "added", "added", "full"]);
    expect(await stored(keyId, "c1")).toBe(5);
  });

  it("refuses at once with an allowance of nothing", async () => {
    const keyId = await w.store.keyId(meter("none"));
    expect(await w.store.admitCount({ ...meter("none"), keyId }, "n1", 0)).toEqual({
      outcome: "full",
      before: 0,
      keyId,
    });
    expect(await stored(keyId, "n1")).toBe(-1);
  });

  it.skipIf(kind !== "server")(
    "admits exactly the allowance across two connection pools racing over the same readers",
    async () => {
      await withSecondPool(w.db.url as string, async (second) => {
        const keyId = await w.store.keyId(meter("race"));
        const name = { ...meter("race"), keyId };
        const readers = ["x1", "x2", "x3", "x4", "x5"];
        // Interleaved so both pools' batches hold rows of every reader, first ones inserted by either.
        const calls: Promise<SeenAdmission>[] = [];
        for (let i = 0; i < 30; i++) {
          for (const r of readers) calls.push((i % 2 === 0 ? w.store : second).admitCount(name, r, 7));
        }
        const answers = await Promise.all(calls);
        expect(added(answers).length).toBe(5 * 7);
        for (const r of readers) expect(await stored(keyId, r)).toBe(7);
      });
    },
  );
});

describe("count meters' batched admissions when a later statement of a batch fails", () => {
  it("keeps the calls an earlier statement counted (they are stored) and fails only the others", async () => {
    let statements = 0;
    const store = new CountAdmissions({
      execute: (async () => {
        statements++;
        // The update finds "old" (stored before); the insert for "new" meets a dropped connection.
        if (statements === 1) return [{ meter_id: 1, subject: "old", before: 1, after: 3 }];
        throw Object.assign(new Error("connection closed"), { code: "CONNECTION_CLOSED" });
      }) as never,
    });
    const answers = await Promise.allSettled([
      store.admit(1, "old", 3),
      store.admit(1, "new", 3),
      store.admit(1, "old", 3),
      store.admit(1, "old", 3),
    ]);
    expect(answers.map((a) => (a.status === "fulfilled" ? a.value.outcome : "rejected"))).toEqual([
      "added",
      "rejected",
      "added",
      "full",
    ]);
    expect(statements).toBe(2);
  });
});
