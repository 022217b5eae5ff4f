// biome-ignore-all lint/suspicious/noThenProperty: rules of the site-document format have a string `then` member.
import { describe, expect, test } from "bun:test";
import { evaluateBatch } from "../../src/core/evaluate";
import type { BatchResult } from "../../src/core/types";
import { answerJson } from "../../src/decide/answer-json";
import { doc, site, snapshot } from "../core/snapshot";

const SCHEMA = "iglu:com.example/experiment_exposure/jsonschema/1-0-0";

/** The answer as DESIGN.md writes it, built as an object and serialised by JSON.stringify. */
function reference(r: BatchResult, preview: boolean, accessMissing: boolean): string {
  const decisions: Record<string, unknown> = {};
  for (const [name, d] of Object.entries(r.decisions)) {
    const { url: _u, fallbackUrl: _f, ...rest } = d;
    decisions[name] = rest;
  }
  const answer: Record<string, unknown> = {
    decisions,
    unanswered: r.unanswered,
    preview,
    exposures: r.exposures.map((e) => ({
      schema: SCHEMA,
      data: { experiment: e.experiment, variant: e.variant, preview },
    })),
  };
  if (accessMissing) answer.accessMissing = true;
  return JSON.stringify(answer);
}

const compiled = site(
  doc({
    meters: { articles: { kind: "count", allowance: 3, period: "month", timeZone: "UTC" } },
    catalog: { plan: { id: "basic", title: "Basic «plan»", price: 5 } },
    experiments: { wall: { salt: "wall-1", variants: { a: 1, b: 1 } } },
    features: {
      plain: { purpose: "decision", outcomes: { on: {} }, default: "on", onError: "on" },
      offer: {
        purpose: "decision",
        outcomes: {
          show: {
            type: "data",
            fields: { plan: { $ref: { catalog: "plan", select: ["title", "price"] } }, note: 'a"b' },
          },
        },
        default: "show",
        onError: "show",
      },
      paywall: {
        purpose: "decision",
        outcomes: { free: { type: "allow" }, wall: { type: "deny", fields: { banner: "Subscribe" } } },
        rules: [{ when: { meter: "articles", allows: true }, then: "free", tick: ["articles"] }],
        default: "wall",
        onError: "wall",
      },
      split: {
        purpose: "decision",
        outcomes: { x: { type: "allow" }, y: { type: "data", fields: { n: 1 } } },
        rules: [{ split: { experiment: "wall", outcomes: { a: "x", b: "y" } } }],
        default: "x",
        onError: "x",
      },
      journey: {
        purpose: "journey",
        outcomes: { go: { url: "https://shop.example/checkout?u={user.id}", fallbackUrl: "https://news.example/" } },
        default: "go",
        onError: "go",
      },
      off: { purpose: "decision", enabled: false, outcomes: { on: {} }, default: "on", onError: "on" },
    },
  }),
);

const batches: [string, string[]][] = [
  ["nothing", []],
  ["one shared decision", ["plain"]],
  ["catalog fields", ["offer"]],
  ["a meter read per request", ["paywall"]],
  ["an exposure", ["split"]],
  ["a journey (destinations left out)", ["journey"]],
  ["unanswered names, repeated", ["nope", "off", "nope", "plain", "plain"]],
  ["everything", ["split", "paywall", "offer", "journey", "plain", "off", "missing"]],
];

describe("answerJson", () => {
  test.each(batches)("%s: the same bytes as the answer object serialised", (_name, names) => {
    for (const count of [0, 5]) {
      const s = snapshot({
        user: { id: "u/1" },
        subject: "reader-7",
        meters: { articles: { allowance: 3, count, seen: false } },
      });
      for (const [preview, accessMissing] of [
        [false, false],
        [true, true],
      ] as const) {
        const r = evaluateBatch(compiled, names, s);
        expect(answerJson(r, preview, accessMissing, JSON.stringify(SCHEMA))).toBe(
          reference(r, preview, accessMissing),
        );
      }
    }
  });

  test("a meter read shows in the answer, a shared decision carries its JSON from compile", () => {
    const r = evaluateBatch(
      compiled,
      ["paywall", "plain"],
      snapshot({ meters: { articles: { allowance: 3, count: 1, seen: false } } }),
    );
    expect(r.results[0]?.json).toBeUndefined();
    expect(r.results[1]?.json).toBe('{"outcome":"on"}');
    const answer = JSON.parse(answerJson(r, false, false, JSON.stringify(SCHEMA)));
    expect(answer.decisions.paywall).toEqual({
      outcome: "free",
      type: "allow",
      meters: { articles: { allowance: 3, count: 1 } },
    });
  });
});
