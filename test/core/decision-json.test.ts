import { describe, expect, test } from "bun:test";
import { decisionJson } from "../../src/core/decision-json";
import { deepFreeze } from "../../src/core/freeze";
import type { FeatureDecision } from "../../src/core/types";

/** What a decide answer carries of a decision: everything but the journey destinations. */
function reference(d: FeatureDecision): string {
  const { url: _u, fallbackUrl: _f, ...rest } = d;
  return JSON.stringify(rest);
}

const fields = deepFreeze({
  title: 'Ünïcode \u2028 "quoted" \\ back\nslash',
  price: 5.5,
  list: [1, "two", null, { deep: [true, false] }],
  empty: {},
});

const cases: [string, FeatureDecision][] = [
  ["an outcome alone", { outcome: "none" }],
  ["outcome and type", { outcome: "metered", type: "allow" }],
  ["frozen fields", Object.freeze({ outcome: "offer", type: "data", fields })],
  ["fields that are not frozen", { outcome: "offer", fields: { a: [1, 2], b: "x" } }],
  [
    "meters read per request",
    {
      outcome: "wall",
      type: "deny",
      fields,
      meters: { articles: { allowance: 5, count: 5 }, calls: { allowance: 0, count: 12 } },
    },
  ],
  [
    "a meter name and outcome that need escaping",
    { outcome: 'o"ut\u0001', meters: { 'a"b': { allowance: 1, count: 0 } } },
  ],
  ["an empty meters object", { outcome: "x", meters: {} }],
  [
    "a journey's destinations, left out",
    { outcome: "checkout", url: "https://shop.example/?a=1", fallbackUrl: "https://news.example/" },
  ],
];

describe("decisionJson", () => {
  test.each(cases)("%s: the same bytes as JSON.stringify without destinations", (_name, decision) => {
    expect(decisionJson(decision)).toBe(reference(decision));
    expect(JSON.parse(decisionJson(decision))).toEqual(JSON.parse(reference(decision)));
  });

  test("fields are written as they are when the decision is written, frozen or not", () => {
    const shared = deepFreeze({ n: 1 });
    const first = decisionJson({ outcome: "a", fields: shared });
    expect(decisionJson({ outcome: "b", fields: shared })).toBe('{"outcome":"b","fields":{"n":1}}');
    expect(first).toBe('{"outcome":"a","fields":{"n":1}}');
    const open: Record<string, unknown> = { n: 1 };
    expect(decisionJson({ outcome: "a", fields: open })).toBe('{"outcome":"a","fields":{"n":1}}');
    open.n = 2;
    expect(decisionJson({ outcome: "a", fields: open })).toBe('{"outcome":"a","fields":{"n":2}}');
  });
});
