import { describe, expect, test } from "bun:test";
import { compileSite } from "../../src/core/compile";
import { FACT_OPERATORS, validateSiteDocument } from "../../src/core/document";
import { evaluateBatch } from "../../src/core/evaluate";
import { signContentPayload } from "../../src/core/verifier";
import { snapshot } from "./snapshot";

const demo = await Bun.file(new URL("../../docs/examples/demo-site.json", import.meta.url)).json();
const NOW = Date.parse("2026-11-21T12:00:00Z");

describe("docs/examples/demo-site.json", () => {
  const checked = validateSiteDocument(demo);

  test("validates", () => {
    expect(checked.ok ? [] : checked.errors).toEqual([]);
  });

  const site = compileSite(demo);

  test("compiles with the settings the first run relies on", () => {
    expect(site.identityMode).toBe("svc_only");
    expect([...site.allowedOrigins]).toEqual(["http://localhost:3000"]);
    expect(demo.contentKeys[0]).toEqual({ id: "demo-2026", secret: "demo-content-key-change-me" });
    expect(site.meters.get("articles")).toMatchObject({ kind: "seen", allowance: 5 });
    expect(site.meters.get("articles")?.periodKey(NOW)).toBe("2026-11");
    expect(site.meters.get("api_views")).toMatchObject({ kind: "count", allowance: 100 });
    expect(site.meters.get("api_views")?.periodKey(NOW)).toBe("2026-11-21");
    expect(site.features.get("subscribe_journey")?.purpose).toBe("journey");
  });

  test("exercises every condition form and operator", () => {
    const text = JSON.stringify(demo.features);
    for (const form of ["all", "any", "not", "atLeast", "meter", "remaining", "allows"])
      expect(text).toContain(`"${form}"`);
    // Every operator the schema knows, so a new operator must show up in the demo too.
    for (const op of FACT_OPERATORS) {
      expect(text).toContain(`"${op}":`);
    }
    for (const ns of ["content.", "grants.", "user.", "context.", "streaming.", "gift."])
      expect(text).toContain(`"${ns}`);
    expect(text).toContain('"$ref"');
    expect(text).toContain('"split"');
  });

  const signed = (facts: Record<string, unknown>, key = { id: "demo-2026", secret: "demo-content-key-change-me" }) => {
    const payload = JSON.stringify(facts);
    const v = site.verifyContent({ payload, signature: signContentPayload(payload, key.secret) }, NOW);
    if (v === null) throw new Error("demo descriptor did not verify");
    return { content: v.facts, articleId: v.articleId };
  };

  test("the paywall meters, then splits between the two offers", () => {
    const article = signed({ id: "a-1", access: "metered" });
    const open = evaluateBatch(
      site,
      ["paywall"],
      snapshot({ ...article, meters: { articles: { allowance: 5, count: 2, seen: false } } }),
    );
    expect(open.decisions.paywall).toMatchObject({
      outcome: "metered",
      type: "allow",
      meters: { articles: { allowance: 5, count: 2 } },
    });
    expect(open.ticks).toEqual(["articles"]);

    const spent = evaluateBatch(
      site,
      ["paywall"],
      snapshot({ ...article, subject: "reader-1", meters: { articles: { allowance: 5, count: 5, seen: false } } }),
    );
    const offer = (spent.decisions.paywall?.fields as { offer: Record<string, unknown> } | undefined)?.offer ?? {};
    expect(Object.keys(offer).length).toBeGreaterThan(0);
    expect(["wall_monthly", "wall_annual"]).toContain(spent.decisions.paywall?.outcome as string);
    expect(Object.keys(offer)).not.toContain("internalSku");
    expect(spent.exposures).toEqual([
      {
        experiment: "paywall_offer",
        variant: spent.decisions.paywall?.outcome === "wall_monthly" ? "monthly" : "annual",
      },
    ]);
  });

  test("the rotated key verifies with its kid", () => {
    const article = signed(
      { id: "a-2", access: "free", kid: "demo-2027" },
      { id: "demo-2027", secret: "demo-content-key-next-rotation" },
    );
    expect(evaluateBatch(site, ["paywall"], snapshot(article)).decisions.paywall?.outcome).toBe("free_article");
  });

  test("without a descriptor the paywall takes its error slot", () => {
    const r = evaluateBatch(site, ["paywall"], snapshot({ content: null, articleId: null }));
    expect(r.decisions.paywall?.outcome).toBe("wall_generic");
  });

  test("disabled, unpublished and stopped features are unanswered", () => {
    const r = evaluateBatch(
      site,
      ["legacy_paywall", "homepage_takeover", "election_widget", "recirculation"],
      snapshot({ meters: { api_views: { allowance: 100, count: 0, seen: false } } }),
    );
    expect(r.unanswered).toEqual(["legacy_paywall", "homepage_takeover", "election_widget"]);
    expect(r.decisions.recirculation?.outcome).toBe("recommend");
  });

  test("the journey falls back when its placeholder has no value", () => {
    expect(evaluateBatch(site, ["subscribe_journey"], snapshot()).decisions.subscribe_journey).toEqual({
      outcome: "checkout",
      fallbackUrl: "http://localhost:3000/subscribe",
    });
  });
});
