import { describe, expect, it } from "bun:test";
import { storeKinds } from "../helpers/databases";
import { seedSite } from "../helpers/harness";
import { within } from "../helpers/second-process";
import { twoProcesses } from "../helpers/worlds";
import { newUser, outcomeFor, postRows, type Reply, stored, streamingDocument } from "./fixture";

const T0 = Date.parse("2026-11-21T10:00:00Z");

/**
 * Two processes' worth of state over one store (as test/changes/propagation.test.ts): on a
 * server each harness has its own connections, so their batches race inside Postgres.
 */
describe.each(storeKinds)("concurrent streaming writers and other processes (%s store)", (kind) => {
  let writer: string;
  let reader: string;
  const w = twoProcesses(kind, async (a) => {
    ({ key: writer } = await seedSite(a, "news", streamingDocument(), { permissions: ["streaming:write"] }));
    const issued = await a.admin("POST", "/admin/tenants/default/sites/news/keys", { name: "decide" });
    reader = ((await issued.json()) as { key: string }).key;
  });

  it("keeps each user's newest row whatever order concurrent conflicting batches commit in", async () => {
    const users: string[] = [];
    for (let i = 0; i < 40; i++) users.push(await newUser(w.a, `racer${i}@example.com`));
    const BATCHES = 12;
    // Batch k writes every user at window T0 + k (users in a different order per batch), each
    // row twice (once with an older window, stale inside the batch), alternating processes.
    const batch = (k: number) =>
      users
        .map((u, i) => ({ u, order: (i * 7 + k * 13) % users.length }))
        .sort((x, y) => x.order - y.order)
        .flatMap(({ u }) => [
          { user_id: u, window_end: T0 + k, score: k, visits: k, segment: `batch-${k}` },
          { user_id: u, window_end: T0 + k - 100, score: -1 },
        ]);
    const order = [5, 11, 0, 7, 3, 9, 1, 10, 2, 8, 4, 6];
    const send = (k: number, i: number) => postRows(i % 2 === 0 ? w.a : w.b, writer, "engagement", { rows: batch(k) });
    const round = async () => {
      const replies = await Promise.all(order.map(send));
      for (const res of replies) expect(res.status).toBe(200);
      return Promise.all(replies.map(async (r) => (await r.json()) as Reply));
    };
    const first = await round();
    for (const reply of first) {
      expect(reply.received + (reply.rejected.stale ?? 0)).toBe(users.length * 2);
      expect(Object.keys(reply.rejected).filter((r) => r !== "stale")).toEqual([]);
    }
    // The newest batch lands for every user in any interleaving; every older row is in-batch stale.
    const newest = first[order.indexOf(BATCHES - 1)] as Reply;
    expect(newest).toEqual({ received: users.length, rejected: { stale: users.length } });
    // Retries of every batch, racing again: nothing moves.
    const retried = await round();
    expect(retried[order.indexOf(0)]).toEqual({ received: 0, rejected: { stale: users.length * 2 } });
    for (const u of users) {
      expect(await stored(w.a, u)).toEqual({
        windowEnd: T0 + BATCHES - 1,
        values: { score: BATCHES - 1, visits: BATCHES - 1, segment: `batch-${BATCHES - 1}` },
      });
    }
  }, 60_000);

  it("lets another process's decide read a write within a second of its answer", async () => {
    const u = await newUser(w.a, "watched@example.com");
    // B holds the user's (empty) values in memory first.
    expect(await outcomeFor(w.b, reader, "retain", u)).toBe("none");
    expect(await outcomeFor(w.b, reader, "loyal", u)).toBe("unknown");
    expect(
      (await postRows(w.a, writer, "engagement", { rows: [{ user_id: u, window_end: T0, churn_risk: true }] })).status,
    ).toBe(200);
    await within(1000, async () => (await outcomeFor(w.b, reader, "retain", u)) === "offer");
    // And the next write replaces what B holds.
    await postRows(w.a, writer, "engagement", { rows: [{ user_id: u, window_end: T0 + 1, churn_risk: false }] });
    await within(1000, async () => (await outcomeFor(w.b, reader, "retain", u)) === "none");
    await postRows(w.b, writer, "loyalty", { rows: [{ user_id: u, window_end: T0, tier: 9 }] });
    await within(1000, async () => (await outcomeFor(w.a, reader, "loyal", u)) === "gold");
    expect(await outcomeFor(w.b, reader, "loyal", u)).toBe("gold");
  });
});
