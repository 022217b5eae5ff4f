import { describe, expect, it } from "bun:test";
import type { OutcomeKey } from "../../src/core/types";
import { MemoryInsightStore } from "../../src/insight/memory-store";
import { experimentsReport, funnelReport, MINIMUM } from "../../src/insight/service";
import { normalCdf, twoProportionZTest, wilson } from "../../src/insight/stats";
import type { SiteState } from "../../src/sites/registry";
import { site } from "../core/snapshot";
import { basicDocument } from "../fixtures/documents";

describe("the statistics", () => {
  it("matches the normal distribution's known values", () => {
    expect(normalCdf(0)).toBeCloseTo(0.5, 7);
    expect(normalCdf(1.959963984540054)).toBeCloseTo(0.975, 6);
    expect(normalCdf(-2.5758)).toBeCloseTo(0.005, 5);
  });

  it("gives the Wilson interval of 10 in 100 as 5.5% to 17.4%", () => {
    const [lo, hi] = wilson(10, 100);
    expect(lo).toBeCloseTo(0.0552, 4);
    expect(hi).toBeCloseTo(0.1744, 4);
    expect(wilson(0, 0)).toEqual([0, 0]);
  });

  it("tests 200 of 1000 against 250 of 1000: z = 2.677, p = 0.0074", () => {
    const t = twoProportionZTest(200, 1000, 250, 1000);
    expect(t.difference).toBeCloseTo(0.05, 10);
    expect(t.z).toBeCloseTo(2.6774, 3);
    expect(t.p).toBeCloseTo(0.00742, 4);
    expect(t.interval[0]).toBeCloseTo(0.0133, 3);
    expect(t.interval[1]).toBeCloseTo(0.0867, 3);
  });
});

describe("the experiment report", () => {
  const document = site(basicDocument());
  const state = {
    tenantId: "t",
    id: "s",
    disabled: false,
    liveVersion: 1,
    previewVersion: null,
    live: document,
    preview: null,
  } as SiteState;
  const now = Date.parse("2026-11-21T12:30:00Z");
  const experiment = document.experiments.get("wall");
  if (experiment === undefined) throw new Error("fixture has no experiment");
  /** Users assigned each variant by the experiment's own hash. */
  const usersOf = (variant: string, n: number) => {
    const out: string[] = [];
    for (let i = 0; out.length < n; i++) {
      const id = `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`;
      if (experiment.assign(id) === variant) out.push(id);
    }
    return out;
  };
  const exposure = (variant: string): OutcomeKey => ({
    feature: "",
    outcome: "",
    type: null,
    offer: null,
    experiment: "wall",
    variant,
  });

  async function world(exposures: Record<string, number>, conversions: Record<string, number>) {
    const store = new MemoryInsightStore();
    await store.addDecisionCounts(
      Object.entries(exposures).map(([v, count]) => ({
        tenantId: "t",
        siteId: "s",
        key: exposure(v),
        minute: now - (now % 60_000),
        count,
      })),
    );
    for (const [v, n] of Object.entries(conversions)) {
      for (const user of usersOf(v, n)) {
        store.checkouts.push({
          tenantId: "t",
          siteId: "s",
          offer: "basic",
          createdAt: now,
          completedAt: now,
          grantedUserId: user,
        });
      }
    }
    return experimentsReport({ insight: store, flushCounters: async () => {}, now: () => now }, state, "24h");
  }

  it("credits conversions to the variant the same hash assigns, and calls nothing before the minimum sample", async () => {
    const report = await world({ a: 400, b: 400 }, { a: 8, b: 30 });
    const e = report.experiments[0];
    expect(e?.variants.map((v) => [v.variant, v.exposures, v.conversions])).toEqual([
      ["a", 400, 8],
      ["b", 400, 30],
    ]);
    expect(e?.verdict).toBe("too-early");
    expect(e?.winner).toBeNull();
    expect(e?.variants[1]?.versusControl).toBeUndefined();
    expect(e?.sentence).toContain(`at least ${MINIMUM.exposures} exposures and ${MINIMUM.conversions} conversions`);
  });

  it("names the better variant once the sample is large enough and the difference is significant", async () => {
    const e = (await world({ a: 1000, b: 1000 }, { a: 20, b: 60 })).experiments[0];
    expect(e?.enough).toBe(true);
    expect(e?.verdict).toBe("better");
    expect(e?.winner).toBe("b");
    expect(e?.variants[1]?.versusControl?.p).toBeLessThan(0.001);
    expect(e?.sentence).toContain("b converts at 6.0% against 2.0% for a");
  });

  it("says the difference could be chance when it is not significant", async () => {
    const e = (await world({ a: 1000, b: 1000 }, { a: 30, b: 36 })).experiments[0];
    expect(e?.verdict).toBe("no-difference");
    expect(e?.winner).toBeNull();
    expect(e?.sentence).toContain("could be chance");
  });

  it("puts walls in the funnel by the offer they show, and checkouts by the day they started", async () => {
    const store = new MemoryInsightStore();
    const wall: OutcomeKey = {
      feature: "paywall",
      outcome: "wallA",
      type: "deny",
      offer: "basic",
      experiment: "wall",
      variant: "a",
    };
    const open: OutcomeKey = {
      feature: "paywall",
      outcome: "metered",
      type: "allow",
      offer: null,
      experiment: "",
      variant: "",
    };
    await store.addDecisionCounts([
      { tenantId: "t", siteId: "s", key: wall, minute: now - (now % 60_000), count: 9 },
      { tenantId: "t", siteId: "s", key: open, minute: now - (now % 60_000), count: 40 },
    ]);
    store.checkouts.push({
      tenantId: "t",
      siteId: "s",
      offer: "basic",
      createdAt: now,
      completedAt: null,
      grantedUserId: null,
    });
    const f = await funnelReport({ insight: store, flushCounters: async () => {}, now: () => now }, state, "7d");
    expect(f.days).toEqual([{ day: "2026-11-21", offer: "basic", walled: 9, started: 1, completed: 0, granted: 0 }]);
    expect(f.total).toMatchObject({ walled: 9, started: 1 });
  });
});
