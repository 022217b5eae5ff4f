import { expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { compileSite } from "../../src/core/compile";
import { validateSiteDocument } from "../../src/core/document";
import type { OutcomeKey } from "../../src/core/types";
import { DecisionCounts } from "../../src/counters/decision-counts";
import { DrizzleInsightStore } from "../../src/insight/drizzle-store";
import { MemoryInsightStore } from "../../src/insight/memory-store";
import type { InsightStore } from "../../src/insight/store";
import { basicDocument } from "../fixtures/documents";
import { storeContract } from "../helpers/store-contract";

const MIN = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const T0 = Date.parse("2026-11-21T23:58:00Z");

const key = (feature: string, outcome: string, variant = "", type: string | null = "deny"): OutcomeKey => ({
  feature,
  outcome,
  type,
  offer: type === "deny" ? "offer_annual" : null,
  experiment: variant ? "wall" : "",
  variant,
});
const row = (k: OutcomeKey, minute: number, count: number) => ({ tenantId: "t", siteId: "s", key: k, minute, count });

interface World {
  store: InsightStore;
  db: Db | null;
  memory: MemoryInsightStore | null;
}

/** A checkout session and meter values stored the way the product stores them, on either twin. */
async function addCheckout(
  w: World,
  c: { id: string; offer: string; createdAt: number; completedAt: number | null; grantedUserId: string | null },
) {
  if (w.memory) {
    w.memory.checkouts.push({ tenantId: "t", siteId: "s", ...c });
    return;
  }
  const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
  await (w.db as Db).execute(sql`insert into checkout_sessions
    (id, tenant_id, site_id, offer, "grant", mode, status, granted_user_id, created_at, completed_at)
    values (${c.id}, 't', 's', ${c.offer}, 'premium', 'subscription', ${c.completedAt === null ? "open" : "granted"},
      ${c.grantedUserId}, ${iso(c.createdAt)}::timestamptz, ${iso(c.completedAt)}::timestamptz)`);
}

async function addMeterValues(w: World, meter: string, period: string, kind: "seen" | "count", values: number[]) {
  if (w.memory) {
    const m = new Map<string, number>();
    values.forEach((v, i) => {
      m.set(`reader-${i}`, v);
    });
    w.memory.meters.set(["t", "s", meter, period].join("\u0001"), m);
    return;
  }
  const db = w.db as Db;
  await db.execute(
    sql`insert into meter_keys (tenant_id, site_id, meter, period) values ('t', 's', ${meter}, ${period})`,
  );
  const id = sql`(select id from meter_keys where tenant_id = 't' and site_id = 's' and meter = ${meter} and period = ${period})`;
  for (const [i, v] of values.entries()) {
    if (kind === "count")
      await db.execute(sql`insert into meter_counts (meter_id, subject, count) values (${id}, ${`reader-${i}`}, ${v})`);
    else
      for (let a = 0; a < v; a++)
        await db.execute(
          sql`insert into meter_seen (meter_id, subject, item) values (${id}, ${`reader-${i}`}, ${`a-${a}`})`,
        );
  }
}

storeContract<World>(
  "insight store",
  (_kind, db) => {
    const memory = db === null ? new MemoryInsightStore() : null;
    return { store: memory ?? new DrizzleInsightStore(db as Db), db, memory };
  },
  (world) => {
    it("adds each flush to its minute, hour and day, summing rows that meet in one bucket", async () => {
      const { store } = world();
      const wallA = key("paywall", "wall_a", "a");
      const metered = key("paywall", "metered", "", "allow");
      await store.addDecisionCounts([row(wallA, T0, 2), row(metered, T0, 5), row(wallA, T0 + MIN, 1)]);
      await store.addDecisionCounts([row(wallA, T0, 3)]);
      const minutes = await store.decisionBuckets({
        tenantId: "t",
        siteId: "s",
        grain: "minute",
        from: T0,
        to: T0 + 2 * MIN,
      });
      expect(minutes.map((b) => [b.bucket - T0, b.outcome, b.variant, b.count])).toEqual([
        [0, "metered", "", 5],
        [0, "wall_a", "a", 5],
        [MIN, "wall_a", "a", 1],
      ]);
      const hours = await store.decisionBuckets({
        tenantId: "t",
        siteId: "s",
        grain: "hour",
        from: T0 - HOUR,
        to: T0 + HOUR,
      });
      expect(hours.map((b) => [b.outcome, b.count, b.verdict, b.offer])).toEqual([
        ["metered", 5, "allow", ""],
        ["wall_a", 6, "deny", "offer_annual"],
      ]);
      const days = await store.decisionBuckets({
        tenantId: "t",
        siteId: "s",
        grain: "day",
        from: T0 - DAY,
        to: T0 + DAY,
      });
      expect(days.map((b) => [new Date(b.bucket).toISOString(), b.outcome, b.count])).toEqual([
        ["2026-11-21T00:00:00.000Z", "metered", 5],
        ["2026-11-21T00:00:00.000Z", "wall_a", 6],
      ]);
      // Another site's and another grain's rows are not read.
      expect(
        await store.decisionBuckets({ tenantId: "t", siteId: "other", grain: "day", from: 0, to: T0 + DAY }),
      ).toEqual([]);
    });

    it("adds a flush of 1,500 endings in one call, names past ASCII and quotes kept as sent", async () => {
      const { store } = world();
      // A week after the other tests' minutes, so only these rows are read back.
      const T1 = T0 + 7 * DAY;
      const rows = Array.from({ length: 1_500 }, (_, i) =>
        row(key("paywall", `wall ${i} «été» 'q' "d"`, "", i % 2 === 0 ? "deny" : "allow"), T1, i + 1),
      );
      await store.addDecisionCounts(rows);
      await store.addDecisionCounts(rows.slice(0, 10));
      // An empty flush is a no-op, not a statement with empty arrays.
      await store.addDecisionCounts([]);
      const minutes = await store.decisionBuckets({
        tenantId: "t",
        siteId: "s",
        grain: "minute",
        from: T1,
        to: T1 + MIN,
      });
      expect(minutes.length).toBe(1_500);
      const byOutcome = new Map(minutes.map((b) => [b.outcome, b]));
      expect(byOutcome.get(`wall 0 «été» 'q' "d"`)?.count).toBe(2);
      expect(byOutcome.get(`wall 9 «été» 'q' "d"`)?.count).toBe(20);
      expect(byOutcome.get(`wall 10 «été» 'q' "d"`)?.count).toBe(11);
      expect(byOutcome.get(`wall 1499 «été» 'q' "d"`)?.count).toBe(1_500);
      expect(byOutcome.get(`wall 1 «été» 'q' "d"`)?.verdict).toBe("allow");
      expect(minutes.reduce((sum, b) => sum + b.count, 0)).toBe((1_500 * 1_501) / 2 + 55);
    });

    it("adds up the deltas of two processes counting the same decisions", async () => {
      const { store } = world();
      const checked = validateSiteDocument(basicDocument());
      if (!checked.ok) throw new Error("fixture invalid");
      const site = compileSite(checked.document);
      const one = new DecisionCounts(store);
      const two = new DecisionCounts(store);
      const batch = (slot: number) => ({ results: [{ slot }], exposures: [] }) as never;
      const at = Date.parse("2026-11-22T10:00:30Z");
      for (let i = 0; i < 7; i++) one.count({ tenantId: "t", id: "s" }, site, batch(0), at);
      for (let i = 0; i < 5; i++) two.count({ tenantId: "t", id: "s" }, site, batch(0), at + 1000);
      await Promise.all([one.flush(), two.flush()]);
      one.count({ tenantId: "t", id: "s" }, site, batch(0), at + 2000);
      await one.flush();
      const [b] = await store.decisionBuckets({
        tenantId: "t",
        siteId: "s",
        grain: "minute",
        from: at - 30_000,
        to: at + 30_000,
      });
      expect(b?.count).toBe(13);
      expect(b?.feature).toBe(site.outcomeKeys[0]?.feature as string);
    });

    it("counts checkout sessions started by the day they started, completed and granted by the day they completed", async () => {
      const w = world();
      const day = Date.parse("2026-11-20T00:00:00Z");
      await addCheckout(w, {
        id: "cs_1",
        offer: "annual",
        createdAt: day + HOUR,
        completedAt: day + 2 * HOUR,
        grantedUserId: "00000000-0000-4000-8000-000000000001",
      });
      await addCheckout(w, {
        id: "cs_2",
        offer: "annual",
        createdAt: day + 23 * HOUR,
        completedAt: day + 25 * HOUR,
        grantedUserId: null,
      });
      await addCheckout(w, {
        id: "cs_3",
        offer: "monthly",
        createdAt: day + 3 * HOUR,
        completedAt: null,
        grantedUserId: null,
      });
      await addCheckout(w, {
        id: "cs_4",
        offer: "monthly",
        createdAt: day - DAY,
        completedAt: null,
        grantedUserId: null,
      });
      const days = await w.store.checkoutDays("t", "s", day, day + 2 * DAY);
      expect(
        days.map((d) => [new Date(d.day).toISOString().slice(0, 10), d.offer, d.started, d.completed, d.granted]),
      ).toEqual([
        ["2026-11-20", "annual", 2, 1, 1],
        ["2026-11-20", "monthly", 1, 0, 0],
        ["2026-11-21", "annual", 0, 1, 0],
      ]);
      const conversions = await w.store.conversions("t", "s", day, day + 2 * DAY);
      expect(conversions.map((c) => [c.userId, c.offer])).toEqual([["00000000-0000-4000-8000-000000000001", "annual"]]);
    });

    it("counts readers per meter value in one period, seen and count meters alike", async () => {
      const w = world();
      await addMeterValues(w, "articles", "2026-11", "seen", [1, 3, 3, 5]);
      await addMeterValues(w, "views", "2026-11-21", "count", [2, 2, 7]);
      expect(await w.store.meterValues("t", "s", "articles", "2026-11", "seen")).toEqual([
        { value: 1, readers: 1 },
        { value: 3, readers: 2 },
        { value: 5, readers: 1 },
      ]);
      expect(await w.store.meterValues("t", "s", "views", "2026-11-21", "count")).toEqual([
        { value: 2, readers: 2 },
        { value: 7, readers: 1 },
      ]);
      expect(await w.store.meterValues("t", "s", "articles", "2026-10", "seen")).toEqual([]);
    });
  },
);
