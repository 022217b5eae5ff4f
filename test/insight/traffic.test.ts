import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import type { TrafficResult } from "../../scripts/insight-traffic";
import { freshDatabase, storeKinds } from "../helpers/databases";
import type { FakeStripe } from "../helpers/fake-stripe";
import { seedSite, serveHarness, startHarness } from "../helpers/harness";
import { demo, demoTraffic, startDemoStripe } from "./demo-traffic";

describe.each(storeKinds)("a scripted run of traffic on the demo site (%s store)", (kind) => {
  let result: TrafficResult;
  let stop: () => Promise<void>;
  let stripe: FakeStripe;

  beforeAll(async () => {
    const db = await freshDatabase(kind);
    const h = await startHarness(db);
    // Checkout sessions are stamped by Postgres' clock: the reports' windows must be on the same day.
    h.clock.set(Date.now());
    const { key } = await seedSite(h, "demo", demo);
    stripe = await startDemoStripe(h);
    const server = serveHarness(h);
    stop = async () => {
      await server.stop();
      await stripe.stop();
      await h.stop();
      await db.drop();
    };
    result = await demoTraffic(h, { base: server.base, key, stripe, readers: 16, runId: "t" });
  }, 120_000);
  afterAll(async () => {
    await stop();
  }, 60_000);

  it("shows exactly the decisions, funnel, experiment and meter counts the script produced", () => {
    expect(result.mismatches).toEqual([]);
    // Every reader read 5 metered articles, then met the wall twice.
    expect(result.expected.meterValues).toEqual({ "5": 16 });
    const walls = Object.values(result.expected.funnel).reduce((n, f) => n + f.walled, 0);
    expect(walls).toBe(32);
    expect(result.observed.decisions["paywall|metered|"]).toBe(80);
    const exposures = Object.values(result.observed.exposures).reduce((n, x) => n + x, 0);
    expect(exposures).toBe(32);
    const conversions = Object.values(result.observed.conversions).reduce((n, x) => n + x, 0);
    expect(conversions).toBeGreaterThan(0);
    const started = Object.values(result.observed.funnel).reduce((n, f) => n + f.started, 0);
    expect(started).toBeGreaterThan(conversions);
  });

  it("calls no winner on so small a sample, and says why", () => {
    const e = result.after.experiments.experiments.find((x) => x.experiment === "paywall_offer");
    expect(e?.verdict).toBe("too-early");
    expect(e?.winner).toBeNull();
    expect(e?.sentence).toContain("Too early to call");
    expect(e?.test).toContain("two-proportion z-test");
  });
});
