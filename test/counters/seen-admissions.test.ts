import { describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import type { MeterName, SeenAdmission } from "../../src/counters/meter-store";
import { SEEN_BATCH_CALLS, SeenAdmissions } from "../../src/counters/seen-admissions";
import { StoreUnavailable } from "../../src/infra/deadline";
import { storeKinds } from "../helpers/databases";
import { until } from "../helpers/wait";
import { meterStoreWorld, withSecondPool } from "./meter-store-world";

const meter = (name: string): MeterName => ({ tenant: "default", site: "news", meter: name, period: "2026-11-28" });

const outcomes = (answers: readonly SeenAdmission[]) => answers.map((a) => a.outcome);

/**
 * Seen meters' admissions batched (`SeenAdmissions`, `svc_admit_seen_batch`): the calls that meet
 * in one statement are admitted exactly as one call each to `svc_admit_seen` would admit them, on
 * both stores, and across two connection pools on one server (as two processes), one of them
 * still admitting one call at a time (a rolling upgrade).
 */
describe.each(storeKinds)("seen meters' batched admissions (%s store)", (kind) => {
  const w = meterStoreWorld(kind);

  const members = async (keyId: number, subject: string) =>
    rowsOf<{ item: string }>(
      await w.db.db.execute(
        sql`select item from meter_seen where meter_id = ${keyId} and subject = ${subject} order by item`,
      ),
    ).map((r) => r.item);

  /** Admits `calls` (subject, item, allowance) under `name` all in one turn: each answer as [outcome, before]. */
  const admitTogether = async (name: MeterName, calls: [subject: string, item: string, allowance: number][]) =>
    (
      await Promise.all(calls.map(([subject, item, allowance]) => w.store.admitSeen(name, subject, item, allowance)))
    ).map((a) => [a.outcome, a.before]);

  it("admits the first items up to the allowance in arrival order, in one statement", async () => {
    const keyId = await w.store.keyId(meter("articles"));
    const name = { ...meter("articles"), keyId };
    const before = w.store.seen.statements;
    const items = Array.from({ length: 20 }, (_, i) => `a${String(i).padStart(2, "0")}`);
    const answers = await Promise.all(items.map((item) => w.store.admitSeen(name, "r1", item, 5)));
    expect(outcomes(answers)).toEqual([...Array(5).fill("added"), ...Array(15).fill("full")]);
    expect(answers.slice(0, 5).map((a) => a.before)).toEqual([0, 1, 2, 3, 4]);
    for (const a of answers.slice(5)) expect(a.before).toBe(5);
    expect(answers.every((a) => a.keyId === keyId)).toBe(true);
    expect(await members(keyId, "r1")).toEqual(items.slice(0, 5));
    // Made in one turn, the 20 calls went out together in one statement.
    expect(w.store.seen.statements - before).toBe(1);
    // A member stays a member; a new item past the allowance stays out.
    expect(
      outcomes(await Promise.all([w.store.admitSeen(name, "r1", "a03", 5), w.store.admitSeen(name, "r1", "zz", 5)])),
    ).toEqual(["member", "full"]);
  });

  it("answers an item twice in one batch as added, then a member", async () => {
    const keyId = await w.store.keyId(meter("twice"));
    const name = { ...meter("twice"), keyId };
    const answers = await admitTogether(name, [
      ["t1", "x", 3],
      ["t1", "y", 3],
      ["t1", "y", 3],
      ["t1", "z", 3],
      ["t1", "x", 3],
      ["t1", "w", 3],
    ]);
    expect(answers).toEqual([
      ["added", 0],
      ["added", 1],
      ["member", 2],
      ["added", 2],
      ["member", 3],
      ["full", 3],
    ]);
    expect(await members(keyId, "t1")).toEqual(["x", "y", "z"]);
  });

  it("takes one reader's calls under two allowances (a document changed meanwhile) in their order, as one at a time", async () => {
    const keyId = await w.store.keyId(meter("changed"));
    const name = { ...meter("changed"), keyId };
    const before = w.store.seen.statements;
    const answers = await admitTogether(name, [
      ["c1", "a", 2],
      ["c1", "b", 2],
      ["c1", "c", 5],
      ["c1", "d", 5],
      ["c1", "e", 2],
      // Refused under the smaller allowance, then let in under the larger.
      ["c2", "p", 1],
      ["c2", "q", 1],
      ["c2", "r", 2],
    ]);
    expect(answers).toEqual([
      ["added", 0],
      ["added", 1],
      ["added", 2],
      ["added", 3],
      ["full", 4],
      ["added", 0],
      ["full", 1],
      ["added", 1],
    ]);
    expect(await members(keyId, "c1")).toEqual(["a", "b", "c", "d"]);
    expect(await members(keyId, "c2")).toEqual(["p", "r"]);
    expect(w.store.seen.statements - before).toBe(1);
  });

  it("admits many readers of two meters, more calls than one statement holds, each to its own allowance", async () => {
    const a = { ...meter("many-a"), keyId: await w.store.keyId(meter("many-a")) };
    const b = { ...meter("many-b"), keyId: await w.store.keyId(meter("many-b")) };
    const readers = Array.from({ length: 40 }, (_, i) => `m${i}`);
    const before = w.store.seen.statements;
    const calls: Promise<SeenAdmission>[] = [];
    for (let i = 0; i < 4; i++) {
      for (const r of readers) {
        calls.push(w.store.admitSeen(a, r, `item${i}`, 3));
        calls.push(w.store.admitSeen(b, r, `item${i}`, 1));
      }
    }
    expect(calls.length).toBeGreaterThan(SEEN_BATCH_CALLS * 2);
    const answers = await Promise.all(calls);
    expect(answers.filter((x) => x.outcome === "added").length).toBe(40 * 3 + 40 * 1);
    for (const r of readers.slice(0, 5)) {
      expect(await members(a.keyId, r)).toEqual(["item0", "item1", "item2"]);
      expect(await members(b.keyId, r)).toEqual(["item0"]);
    }
    expect(w.store.seen.statements - before).toBeGreaterThanOrEqual(Math.ceil(calls.length / SEEN_BATCH_CALLS));
    expect(w.store.seen.statements - before).toBeLessThan(calls.length / 10);
  });

  it("refuses every item with an allowance of nothing, and stores none", async () => {
    const keyId = await w.store.keyId(meter("none"));
    const answers = await Promise.all(
      [1, 2].map((i) => w.store.admitSeen({ ...meter("none"), keyId }, "n1", `i${i}`, 0)),
    );
    expect(answers).toEqual([
      { outcome: "full", before: 0, keyId },
      { outcome: "full", before: 0, keyId },
    ]);
    expect(await members(keyId, "n1")).toEqual([]);
  });

  it("stores a hostile subject and item as they are (parameters, not text in the statement)", async () => {
    const keyId = await w.store.keyId(meter("hostile"));
    const subject = "r'); drop table meter_seen; --\u00e9";
    const item = '{"a","b"}\\';
    expect((await w.store.admitSeen({ ...meter("hostile"), keyId }, subject, item, 2)).outcome).toBe("added");
    expect(await members(keyId, subject)).toEqual([item]);
  });

  it.skipIf(kind !== "server")(
    "admits exactly the allowance across two pools racing over the same readers, one of them one call at a time",
    async () => {
      await withSecondPool(w.db.url as string, async (second, other) => {
        const keyId = await w.store.keyId(meter("race"));
        const name = { ...meter("race"), keyId };
        const readers = ["x1", "x2", "x3", "x4", "x5"];
        // An older process's call: svc_admit_seen (migration 0020), the same reader's lock.
        const single = async (subject: string, item: string): Promise<SeenAdmission> => {
          const row = rowsOf<{ member: boolean; added: number | string }>(
            await other.db.execute(
              sql`select member, added from svc_admit_seen(${keyId}::int, ${subject}::text, ${item}::text, 7)`,
            ),
          )[0];
          return { outcome: row?.member ? "member" : Number(row?.added) > 0 ? "added" : "full", before: 0, keyId };
        };
        const calls: Promise<SeenAdmission>[] = [];
        for (let i = 0; i < 30; i++) {
          for (const r of readers) {
            const item = `i${i}`;
            calls.push(
              i % 3 === 0
                ? w.store.admitSeen(name, r, item, 7)
                : i % 3 === 1
                  ? second.admitSeen(name, r, item, 7)
                  : single(r, item),
            );
          }
        }
        const answers = await Promise.all(calls);
        expect(answers.filter((x) => x.outcome === "added").length).toBe(5 * 7);
        for (const r of readers) expect((await members(keyId, r)).length).toBe(7);
      });
    },
  );
});

describe("seen meters' batched admissions over a connection the test controls", () => {
  it("takes a queue grown in a stall in statements of at most a batch, failing unsent the calls past the deadline", async () => {
    const sent: ((rows: unknown[]) => void)[] = [];
    let now = 0;
    // Answers every call of a batch as added (rows past a batch's size are ignored).
    const rows = Array.from({ length: SEEN_BATCH_CALLS }, (_, i) => ({
      ord: i + 1,
      before: 0,
      member: false,
      added: 1,
    }));
    const stalled = new SeenAdmissions(
      { execute: (() => new Promise((resolve) => sent.push(resolve))) as never },
      1_000,
      () => now,
    );
    const first = stalled.admit(1, "first", "i", 5);
    expect(await until(() => sent.length === 1)).toBe(true);
    const late = Promise.allSettled(Array.from({ length: 1_200 }, (_, i) => stalled.admit(1, `late${i}`, "i", 5)));
    now = 500;
    const fresh = Array.from({ length: 1_300 }, (_, i) => stalled.admit(1, `fresh${i}`, "i", 5));
    now = 1_200;
    sent[0]?.(rows);
    expect((await first).outcome).toBe("added");
    // Each statement answered as it comes: 13 batches of 100 for the calls within the deadline.
    for (let n = 2; n <= 14; n++) {
      expect(await until(() => sent.length === n)).toBe(true);
      sent[n - 1]?.(rows);
    }
    const settledLate = await late;
    expect(settledLate.every((a) => a.status === "rejected" && a.reason instanceof StoreUnavailable)).toBe(true);
    expect((await Promise.all(fresh)).every((a) => a.outcome === "added")).toBe(true);
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent.length).toBe(14);
    expect(stalled.statements).toBe(14);
  });

  it("answers the calls the store answered and fails the one it left out", async () => {
    const short = new SeenAdmissions({
      execute: (async () => [
        { ord: 1, before: 0, member: false, added: 1 },
        { ord: 3, before: 1, member: true, added: 0 },
      ]) as never,
    });
    const answers = await Promise.allSettled([
      short.admit(1, "s", "a", 5),
      short.admit(1, "s", "b", 5),
      short.admit(1, "s", "a", 5),
    ]);
    expect(answers.map((a) => (a.status === "fulfilled" ? a.value.outcome : "rejected"))).toEqual([
      "added",
      "rejected",
      "member",
    ]);
  });
});
