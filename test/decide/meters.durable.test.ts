import { describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { counterDocument } from "../fixtures/documents";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";

/** The counter document with a second count meter, `visits`, read and ticked by a feature of its own. */
function twoMeterDocument() {
  const document = counterDocument();
  const visits = {
    ...document.features.counter,
    rules: [{ when: { meter: "visits", remaining: { gt: 0 } }, then: "on", tick: ["visits"] }],
  };
  return {
    ...document,
    meters: { ...document.meters, visits: { ...document.meters.hits } },
    features: { ...document.features, visits },
  };
}

type Decisions = Record<string, { outcome: string; meters?: Record<string, { count: number }> }>;

/** Keyed decide for one device on site "news". */
function decider(h: Harness, key: string) {
  return async (deviceId: string, features: string[]): Promise<Decisions> => {
    const res = await h.request("POST", "/v1/decide", {
      headers: { "x-svc-site-id": "news", "x-api-key": key },
      body: { features, deviceId },
    });
    expect(res.status).toBe(200);
    return (await res.json()).decisions as Decisions;
  };
}

describe.each(storeKinds)("meters are durable in Postgres (%s store)", (kind) => {
  it("keeps every tick across a graceful restart, and a new process reads the flushed values", async () => {
    const db = await freshDatabase(kind);
    try {
      let h = await startHarness(db);
      const { key } = await seedSite(h, "news", counterDocument());
      const hit = async () => {
        const res = await h.request("POST", "/v1/decide", {
          headers: { "x-svc-site-id": "news", "x-api-key": key },
          body: { features: ["counter"], deviceId: "reader-1" },
        });
        expect(res.status).toBe(200);
        return (await res.json()).decisions.counter.meters.hits.count as number;
      };
      for (let i = 0; i < 7; i++) expect(await hit()).toBe(i);
      await h.stop();
      h = await startHarness(db);
      expect(await hit()).toBe(7);
      await h.stop();
    } finally {
      await db.drop();
    }
  });

  it("merges a failed flush back and writes it on the next one", async () => {
    const db = await freshDatabase(kind);
    try {
      const h = await startHarness(db);
      // Ticked on every call, past an allowance of 1: on a server store the first call is admitted
      // by Postgres (stored at once), the others are written behind, as every tick is on one process.
      const doc = counterDocument();
      doc.meters.hits.allowance = 1;
      (doc.features.counter.rules[0] as { when: unknown }).when = {
        meter: "hits",
        remaining: { gte: -1_000_000_000 },
      };
      const { key } = await seedSite(h, "news", doc);
      const hit = () =>
        h.request("POST", "/v1/decide", {
          headers: { "x-svc-site-id": "news", "x-api-key": key },
          body: { features: ["counter"], deviceId: "reader-2" },
        });
      await hit();
      await hit();
      await hit();
      // Break the table for one flush: the deltas must survive it.
      await db.db.execute(sql.raw("alter table meter_counts rename to meter_counts_gone"));
      await h.deps.flusher.flushAll();
      expect(h.deps.meters.pendingCount).toBe(1);
      await db.db.execute(sql.raw("alter table meter_counts_gone rename to meter_counts"));
      await hit();
      await h.deps.flusher.flushAll();
      expect(h.deps.meters.pendingCount).toBe(0);
      const rows = rowsOf<{ count: number }>(
        await db.db.execute(sql`select count from meter_counts where subject = ${"reader-2"}`),
      );
      expect(Number(rows[0]?.count)).toBe(4);
      await h.stop();
    } finally {
      await db.drop();
    }
  });

  it("under eviction while requests await their reads, never reads or ticks another reader's value", async () => {
    const db = await freshDatabase(kind);
    try {
      // Sixteen values held at most, and 20 readers asking for two meters each at once: readers'
      // values are evicted, and their subject slots reused, while other requests await reads.
      const h = await startHarness(db, { config: { SVC_METER_ENTRIES: "16" } });
      const { key } = await seedSite(h, "news", twoMeterDocument());
      const decide = decider(h, key);
      // Five readers with one hit each, held and clean.
      const warm = ["w0", "w1", "w2", "w3", "w4"];
      for (const reader of warm) await decide(reader, ["counter"]);
      await h.deps.flusher.flushAll();
      const readers = [...warm, ...Array.from({ length: 15 }, (_, i) => `c${i}`)];
      const answers = await Promise.all(readers.map((reader) => decide(reader, ["counter", "visits"])));

      const meterOf = { counter: "hits", visits: "visits" } as const;
      const expected: string[] = [];
      readers.forEach((reader, r) => {
        for (const feature of ["counter", "visits"] as const) {
          const before = feature === "counter" && warm.includes(reader) ? 1 : 0;
          const decision = answers[r]?.[feature];
          // A value read is the reader's own; a value not held after every round of reads is
          // not read at all (the feature's onError outcome, "off", and no tick).
          if (decision?.outcome === "on") {
            expect(decision.meters?.[meterOf[feature]]?.count).toBe(before);
          } else expect(decision?.meters).toBeUndefined();
          const after = before + (decision?.outcome === "on" ? 1 : 0);
          if (after > 0) expected.push(`${reader}.${meterOf[feature]}:${after}`);
        }
      });
      await h.deps.flusher.flushAll();
      const rows = rowsOf<{ subject: string; meter: string; count: number }>(
        await db.db.execute(
          sql`select c.subject, k.meter, c.count from meter_counts c join meter_keys k on k.id = c.meter_id`,
        ),
      );
      expect(rows.map((r) => `${r.subject}.${r.meter}:${Number(r.count)}`).sort()).toEqual(expected.sort());
      // Eviction waits for a task of its own, so every request evaluated the values it read
      // before they could be dropped: all 20 were answered from their own values.
      for (const a of answers) expect([a.counter?.outcome, a.visits?.outcome]).toEqual(["on", "on"]);
      await h.stop();
    } finally {
      await db.drop();
    }
  });

  it("reads a value again when it was evicted while its request awaited another read", async () => {
    const db = await freshDatabase(kind);
    try {
      const config = { config: { SVC_METER_ENTRIES: "6" } };
      let h = await startHarness(db, config);
      const { key } = await seedSite(h, "news", twoMeterDocument());
      await decider(h, key)("a", ["counter", "visits"]);
      await h.stop();
      // A new process: nothing held, so a's stored visits are read from Postgres below.
      h = await startHarness(db, config);
      const decide = decider(h, key);
      expect((await decide("a", ["counter"])).counter?.meters?.hits?.count).toBe(1);
      for (const reader of ["n1", "n2", "n3", "n4"]) await decide(reader, ["counter"]);
      await h.deps.flusher.flushAll();
      // Five values held, all clean, a's hits the oldest. a's request finds its hits held and
      // awaits its visits; meanwhile two new readers take the tables past the cap (6), and the
      // eviction's task drops the oldest clean values, a's hits among them. a's request must
      // read its hits again, not decide without them.
      const a = decide("a", ["counter", "visits"]);
      const others = ["m1", "m2"].map((reader) => decide(reader, ["counter"]));
      const answer = await a;
      await Promise.all(others);
      expect(answer.counter?.outcome).toBe("on");
      expect(answer.counter?.meters?.hits?.count).toBe(2);
      expect(answer.visits?.meters?.visits?.count).toBe(1);
      await h.stop();
    } finally {
      await db.drop();
    }
  });
});
