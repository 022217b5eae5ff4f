import { describe, expect, it } from "bun:test";
import { evaluateBatch } from "../../src/core/evaluate";
import { type DecisionCountRow, DecisionCounts } from "../../src/counters/decision-counts";
import { site, snapshot } from "../core/snapshot";
import { basicDocument } from "../fixtures/documents";

const SITE = { tenantId: "t", id: "s" };
const T0 = Date.parse("2026-11-21T12:00:10Z");
const spent = { articles: { allowance: 3, count: 3, seen: false }, calls: { allowance: 2, count: 0, seen: false } };

/** A sink that keeps what each flush wrote, and fails while `failing` is set. */
function sink() {
  const writes: DecisionCountRow[][] = [];
  const s = {
    failing: false,
    writes,
    async addDecisionCounts(rows: readonly DecisionCountRow[]) {
      if (s.failing) throw new Error("store down");
      writes.push([...rows]);
    },
  };
  return s;
}

const named = (rows: readonly DecisionCountRow[]) =>
  rows.map((r) => [
    r.key.feature,
    r.key.outcome,
    r.key.variant,
    new Date(r.minute).toISOString().slice(11, 16),
    r.count,
  ]);

describe("DecisionCounts", () => {
  const document = site(basicDocument());

  it("gives every ending of every feature one slot, and each experiment variant's exposures one more", () => {
    const keys = document.outcomeKeys.map((k) => `${k.feature}:${k.outcome}:${k.variant}`);
    expect(new Set(keys).size).toBe(keys.length);
    expect(keys).toContain("paywall:wallA:a");
    expect(keys).toContain("paywall:wallB:b");
    // wallB is also the default (no variant): a slot of its own.
    expect(keys).toContain("paywall:wallB:");
    expect(keys).toContain("::a");
    expect(keys).toContain("::b");
    const wall = document.outcomeKeys.find((k) => k.outcome === "wallA");
    expect(wall?.type).toBe("deny");
  });

  it("counts each answered feature and each exposure once per batch, per minute, and zeroes what it flushed", async () => {
    const s = sink();
    const counts = new DecisionCounts(s);
    const batch = evaluateBatch(
      document,
      ["paywall", "teaser", "section"],
      snapshot({ subject: "reader-1", meters: spent }),
    );
    const variant = batch.exposures[0]?.variant as string;
    const wall = variant === "a" ? "wallA" : "wallB";
    counts.count(SITE, document, batch, T0);
    counts.count(SITE, document, batch, T0 + 30_000);
    // The next minute: the first minute's counts are kept apart.
    counts.count(SITE, document, batch, T0 + 60_000);
    await counts.flush();
    expect(named(s.writes[0] as DecisionCountRow[]).sort()).toEqual(
      [
        ["paywall", wall, variant, "12:00", 2],
        ["teaser", "on", "", "12:00", 2],
        ["section", "other", "", "12:00", 2],
        ["", "", variant, "12:00", 2],
        ["paywall", wall, variant, "12:01", 1],
        ["teaser", "on", "", "12:01", 1],
        ["section", "other", "", "12:01", 1],
        ["", "", variant, "12:01", 1],
      ].sort(),
    );
    await counts.flush();
    expect(s.writes.length).toBe(1);
  });

  it("keeps a failed flush's rows for the next one, with what was counted meanwhile", async () => {
    const s = sink();
    const counts = new DecisionCounts(s);
    const batch = evaluateBatch(document, ["section"], snapshot());
    counts.count(SITE, document, batch, T0);
    s.failing = true;
    await expect(counts.flush()).rejects.toThrow("store down");
    counts.count(SITE, document, batch, T0 + 1000);
    s.failing = false;
    await counts.flush();
    const total = (s.writes[0] as DecisionCountRow[]).reduce((n, r) => n + r.count, 0);
    expect(total).toBe(2);
  });

  it("keeps the counts of a replaced document apart from the new one's", async () => {
    const s = sink();
    const counts = new DecisionCounts(s);
    const next = site(basicDocument());
    counts.count(SITE, document, evaluateBatch(document, ["section"], snapshot()), T0);
    counts.count(SITE, next, evaluateBatch(next, ["section"], snapshot()), T0);
    counts.count(SITE, document, evaluateBatch(document, ["section"], snapshot()), T0);
    await counts.flush();
    expect(named(s.writes[0] as DecisionCountRow[])).toEqual([
      ["section", "other", "", "12:00", 2],
      ["section", "other", "", "12:00", 1],
    ]);
  });
});
