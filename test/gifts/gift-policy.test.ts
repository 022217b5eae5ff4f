// biome-ignore-all lint/suspicious/noThenProperty: rules of the site-document format have a string `then` member.
import { describe, expect, test } from "bun:test";
import { readFileSync } from "node:fs";
import { validateSiteDocument } from "../../src/core/document";
import { giftDocument } from "../fixtures/documents";

const withPaywallRule = (when: unknown) => {
  const doc = giftDocument();
  doc.features.paywall.rules = [{ when, then: "gifted" }] as typeof doc.features.paywall.rules;
  return doc;
};

const errorsOf = (document: unknown) => {
  const r = validateSiteDocument(document);
  return r.ok ? [] : r.errors;
};

describe("the gifts policy in the site document", () => {
  test("the demo document and the test fixture deploy with a policy and a gift rule before the meter rule", () => {
    const demo = JSON.parse(readFileSync("docs/examples/demo-site.json", "utf8"));
    expect(errorsOf(demo)).toEqual([]);
    expect(demo.gifts).toEqual({
      description: expect.any(String),
      perGifterPerMonth: 5,
      lifetime: "14d",
      redemptionsPerLink: 10,
    });
    const rules = demo.features.paywall.rules as { when?: { fact?: string; meter?: string } }[];
    const gift = rules.findIndex((r) => r.when?.fact === "gift.valid");
    const meter = rules.findIndex((r) => r.when?.meter === "articles");
    expect(gift).toBeGreaterThanOrEqual(0);
    expect(gift).toBeLessThan(meter);
    expect(errorsOf(giftDocument())).toEqual([]);
  });

  test.each([
    ["gift.valid", true],
    ["gift.contentId", true],
    ["gift.gifter", true],
    ["gift.other", false],
    ["gift.valid.deeper", false],
  ])("a rule may read %s: %p", (fact, ok) => {
    const errors = errorsOf(withPaywallRule({ fact, exists: true }));
    if (ok) expect(errors).toEqual([]);
    else
      expect(errors).toEqual([
        { path: "/features/paywall/rules/0/when/fact", message: expect.stringMatching(/gift\.valid/) },
      ]);
  });

  test.each([
    [
      "a negative allowance",
      { perGifterPerMonth: -1, lifetime: "14d", redemptionsPerLink: 1 },
      "/gifts/perGifterPerMonth",
    ],
    ["no readers", { perGifterPerMonth: 5, lifetime: "14d", redemptionsPerLink: 0 }, "/gifts/redemptionsPerLink"],
    [
      "a lifetime that is no duration",
      { perGifterPerMonth: 5, lifetime: "14 days", redemptionsPerLink: 1 },
      "/gifts/lifetime",
    ],
    ["an unknown member", { perGifterPerMonth: 5, lifetime: "14d", redemptionsPerLink: 1, cap: 3 }, "/gifts/cap"],
  ])("refuses %s with its path", (_name, gifts, path) => {
    const errors = errorsOf({ ...giftDocument(), gifts });
    expect(errors.map((e) => e.path)).toContain(path);
  });
});
