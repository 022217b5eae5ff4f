import { describe, expect, test } from "bun:test";
import { evaluateBatch } from "../../src/core/evaluate";
import { NOW, oneRule, type SnapshotOptions, site, snapshot } from "./snapshot";

const HOUR = 3_600_000;
const DAY = 24 * HOUR;
const iso = (ms: number) => new Date(ms).toISOString();

/** Outcome of feature `f` whose single rule is `when` -> yes, default no, onError err. */
function outcomeOf(when: unknown, options: SnapshotOptions = {}): string | undefined {
  return evaluateBatch(site(oneRule(when)), ["f"], snapshot(options)).decisions.f?.outcome;
}

type Case = [string, unknown, SnapshotOptions, "yes" | "no" | "err"];

const ctx = (context: Record<string, unknown>): SnapshotOptions => ({ context });
const content = (c: Record<string, unknown>): SnapshotOptions => ({ content: c });

describe("fact operators", () => {
  const cases: Case[] = [
    ["eq matches a string", { fact: "context.section", eq: "sport" }, ctx({ section: "sport" }), "yes"],
    ["eq is strict about types", { fact: "context.n", eq: 1 }, ctx({ n: "1" }), "no"],
    ["eq null matches null", { fact: "context.x", eq: null }, ctx({ x: null }), "yes"],
    ["eq null does not match a missing path", { fact: "context.x", eq: null }, ctx({}), "no"],
    ["eq on a missing path is false", { fact: "context.section", eq: "sport" }, ctx({}), "no"],
    ["ne differs", { fact: "context.section", ne: "sport" }, ctx({ section: "news" }), "yes"],
    ["ne equal is false", { fact: "context.section", ne: "sport" }, ctx({ section: "sport" }), "no"],
    ["ne on a missing path is true (ne is not eq)", { fact: "context.section", ne: "sport" }, ctx({}), "yes"],
    ["lt numbers", { fact: "context.n", lt: 5 }, ctx({ n: 4 }), "yes"],
    ["lt equal is false", { fact: "context.n", lt: 5 }, ctx({ n: 5 }), "no"],
    ["lte equal", { fact: "context.n", lte: 5 }, ctx({ n: 5 }), "yes"],
    ["lte above", { fact: "context.n", lte: 5 }, ctx({ n: 6 }), "no"],
    ["gt above", { fact: "context.n", gt: 5 }, ctx({ n: 6 }), "yes"],
    ["gt equal is false", { fact: "context.n", gt: 5 }, ctx({ n: 5 }), "no"],
    ["gte equal", { fact: "context.n", gte: 5 }, ctx({ n: 5 }), "yes"],
    ["gte below", { fact: "context.n", gte: 5 }, ctx({ n: 4 }), "no"],
    ["gt does not coerce a numeric string", { fact: "context.n", gt: 5 }, ctx({ n: "6" }), "no"],
    ["lt compares strings by code units", { fact: "context.s", lt: "m" }, ctx({ s: "apple" }), "yes"],
    ["comparison on a missing path is false", { fact: "context.n", gt: 0 }, ctx({}), "no"],
    ["in hits", { fact: "context.s", in: ["a", "b"] }, ctx({ s: "b" }), "yes"],
    ["in misses", { fact: "context.s", in: ["a", "b"] }, ctx({ s: "c" }), "no"],
    [
      "in over a long list (set lookup)",
      { fact: "context.n", in: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] },
      ctx({ n: 11 }),
      "yes",
    ],
    [
      "in over a long list is strict",
      { fact: "context.n", in: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] },
      ctx({ n: "11" }),
      "no",
    ],
    ["notIn misses", { fact: "context.s", notIn: ["a", "b"] }, ctx({ s: "c" }), "yes"],
    ["notIn hits", { fact: "context.s", notIn: ["a", "b"] }, ctx({ s: "a" }), "no"],
    [
      "contains an array element",
      { fact: "content.tags", contains: "breaking" },
      content({ tags: ["x", "breaking"] }),
      "yes",
    ],
    ["contains missing from array", { fact: "content.tags", contains: "breaking" }, content({ tags: ["x"] }), "no"],
    [
      "contains a substring",
      { fact: "content.headline", contains: "vote" },
      content({ headline: "The vote is in" }),
      "yes",
    ],
    ["contains on a number is false", { fact: "content.n", contains: "1" }, content({ n: 1 }), "no"],
    ["exists true", { fact: "context.x", exists: true }, ctx({ x: 0 }), "yes"],
    ["exists true on a missing path", { fact: "context.x", exists: true }, ctx({}), "no"],
    ["exists true on null is false", { fact: "context.x", exists: true }, ctx({ x: null }), "no"],
    ["exists false on a missing path", { fact: "context.x", exists: false }, ctx({}), "yes"],
    ["exists false on a value", { fact: "context.x", exists: false }, ctx({ x: false }), "no"],
    ["grant held", { fact: "grants.premium", exists: true }, { grants: { premium: true } }, "yes"],
    ["grant not held", { fact: "grants.premium", exists: true }, { grants: { other: true } }, "no"],
    ["grants are own members only", { fact: "grants.constructor", exists: true }, { grants: {} }, "no"],
    [
      "before an ISO instant",
      { fact: "content.publishedAt", before: "2020-01-01T00:00:00Z" },
      content({ publishedAt: "2019-12-31T23:59:59Z" }),
      "yes",
    ],
    [
      "before is strict",
      { fact: "content.publishedAt", before: "2020-01-01T00:00:00Z" },
      content({ publishedAt: "2020-01-01T00:00:00Z" }),
      "no",
    ],
    [
      "before with epoch ms in the rule",
      { fact: "content.publishedAt", before: Date.parse("2020-01-01T00:00:00Z") },
      content({ publishedAt: "2019-06-01" }),
      "yes",
    ],
    [
      "after with an epoch-ms fact",
      { fact: "content.publishedAt", after: "2020-01-01T00:00:00Z" },
      content({ publishedAt: Date.parse("2021-01-01T00:00:00Z") }),
      "yes",
    ],
    [
      "after earlier",
      { fact: "content.publishedAt", after: "2020-01-01T00:00:00Z" },
      content({ publishedAt: "2019-01-01T00:00:00Z" }),
      "no",
    ],
    [
      "after with an unparseable fact is false",
      { fact: "content.publishedAt", after: "2020-01-01T00:00:00Z" },
      content({ publishedAt: "yesterday" }),
      "no",
    ],
    [
      "withinLast inside",
      { fact: "content.publishedAt", withinLast: "12h" },
      content({ publishedAt: iso(NOW - 11 * HOUR) }),
      "yes",
    ],
    [
      "withinLast outside",
      { fact: "content.publishedAt", withinLast: "12h" },
      content({ publishedAt: iso(NOW - 13 * HOUR) }),
      "no",
    ],
    [
      "withinLast excludes the future",
      { fact: "content.publishedAt", withinLast: "12h" },
      content({ publishedAt: iso(NOW + HOUR) }),
      "no",
    ],
    ["withinLast in minutes", { fact: "context.t", withinLast: "30m" }, ctx({ t: NOW - 29 * 60_000 }), "yes"],
    [
      "olderThan older",
      { fact: "content.updatedAt", olderThan: "7d" },
      content({ updatedAt: iso(NOW - 8 * DAY) }),
      "yes",
    ],
    [
      "olderThan newer",
      { fact: "content.updatedAt", olderThan: "7d" },
      content({ updatedAt: iso(NOW - 6 * DAY) }),
      "no",
    ],
    [
      "olderThan in weeks",
      { fact: "content.updatedAt", olderThan: "2w" },
      content({ updatedAt: iso(NOW - 15 * DAY) }),
      "yes",
    ],
    [
      "deep path",
      { fact: "content.author.address.city", eq: "Leeds" },
      content({ author: { address: { city: "Leeds" } } }),
      "yes",
    ],
    [
      "deep path through a missing member",
      { fact: "content.author.address.city", eq: "Leeds" },
      content({ author: {} }),
      "no",
    ],
    ["array index segment", { fact: "content.tags.0", eq: "a" }, content({ tags: ["a", "b"] }), "yes"],
    ["prototype members are not facts", { fact: "content.constructor", exists: true }, content({}), "no"],
    ["user trait", { fact: "user.country", in: ["GB", "IE"] }, { user: { country: "IE" } }, "yes"],
    ["streaming column", { fact: "streaming.scores.score", lt: 0.2 }, { streaming: { scores: { score: 0.1 } } }, "yes"],
    ["streaming row absent", { fact: "streaming.scores.score", lt: 0.2 }, { streaming: {} }, "no"],
    ["gift fact", { fact: "gift.valid", eq: true }, { gift: { valid: true } }, "yes"],
  ];
  test.each(cases)("%s", (_name, when, options, expected) => {
    expect(outcomeOf(when, options)).toBe(expected);
  });
});

describe("combinators", () => {
  const a = { fact: "context.a", eq: true };
  const b = { fact: "context.b", eq: true };
  const c = { fact: "context.c", eq: true };
  const contentRead = { fact: "content.x", eq: 1 };
  const cases: Case[] = [
    ["all true", { all: [a, b] }, ctx({ a: true, b: true }), "yes"],
    ["all with one false", { all: [a, b] }, ctx({ a: true, b: false }), "no"],
    ["all of one", { all: [a] }, ctx({ a: true }), "yes"],
    ["any with one true", { any: [a, b] }, ctx({ b: true }), "yes"],
    ["any all false", { any: [a, b] }, ctx({}), "no"],
    ["not true", { not: a }, ctx({ a: true }), "no"],
    ["not false", { not: a }, ctx({}), "yes"],
    ["atLeast 2 of 3 met", { atLeast: 2, of: [a, b, c] }, ctx({ a: true, c: true }), "yes"],
    ["atLeast 2 of 3 not met", { atLeast: 2, of: [a, b, c] }, ctx({ b: true }), "no"],
    ["atLeast 3 of 3", { atLeast: 3, of: [a, b, c] }, ctx({ a: true, b: true, c: true }), "yes"],
    ["nested", { all: [{ any: [a, b] }, { not: c }] }, ctx({ b: true }), "yes"],
    ["nested, inner not fails", { all: [{ any: [a, b] }, { not: c }] }, ctx({ b: true, c: true }), "no"],
    ["all short-circuits before an unavailable fact", { all: [a, contentRead] }, { context: {}, content: null }, "no"],
    [
      "all reaching an unavailable fact errors",
      { all: [a, contentRead] },
      { context: { a: true }, content: null },
      "err",
    ],
    [
      "any short-circuits before an unavailable fact",
      { any: [a, contentRead] },
      { context: { a: true }, content: null },
      "yes",
    ],
    ["any reaching an unavailable fact errors", { any: [a, contentRead] }, { context: {}, content: null }, "err"],
    ["not of an unavailable fact errors (not false)", { not: contentRead }, { content: null }, "err"],
    ["atLeast stops once met", { atLeast: 1, of: [a, contentRead] }, { context: { a: true }, content: null }, "yes"],
    ["atLeast stops once unreachable", { atLeast: 2, of: [a, b, contentRead] }, { context: {}, content: null }, "no"],
    [
      "atLeast reaching an unavailable fact errors",
      { atLeast: 2, of: [a, contentRead] },
      { context: { a: true }, content: null },
      "err",
    ],
  ];
  test.each(cases)("%s", (_name, when, options, expected) => {
    expect(outcomeOf(when, options)).toBe(expected);
  });
});

describe("meter tests", () => {
  const read = (count: number, seen = false) => ({
    meters: { seen_m: { allowance: 3, count, seen }, count_m: { allowance: 10, count, seen: false } },
  });
  const cases: Case[] = [
    ["remaining gt", { meter: "count_m", remaining: { gt: 0 } }, read(9), "yes"],
    ["remaining gt exhausted", { meter: "count_m", remaining: { gt: 0 } }, read(10), "no"],
    ["remaining gte", { meter: "count_m", remaining: { gte: 2 } }, read(8), "yes"],
    ["remaining lt", { meter: "count_m", remaining: { lt: 2 } }, read(9), "yes"],
    ["remaining lte", { meter: "count_m", remaining: { lte: 1 } }, read(8), "no"],
    ["remaining eq", { meter: "count_m", remaining: { eq: 0 } }, read(10), "yes"],
    ["remaining can go below zero", { meter: "count_m", remaining: { lt: 0 } }, read(12), "yes"],
    ["allows with allowance left", { meter: "seen_m", allows: true }, read(2), "yes"],
    ["allows when spent", { meter: "seen_m", allows: true }, read(3), "no"],
    ["a seen meter allows an already-seen article when spent", { meter: "seen_m", allows: true }, read(3, true), "yes"],
    [
      "a count meter ignores seen",
      { meter: "count_m", allows: true },
      { meters: { count_m: { allowance: 1, count: 1, seen: true } } },
      "no",
    ],
    ["allows false", { meter: "seen_m", allows: false }, read(3), "yes"],
    ["an unreadable meter errors", { meter: "seen_m", allows: true }, { meters: {} }, "err"],
  ];
  test.each(cases)("%s", (_name, when, options, expected) => {
    expect(outcomeOf(when, options)).toBe(expected);
  });
});

describe("unavailable namespaces route the feature to its error slot", () => {
  const cases: Case[] = [
    ["content.* with no verified descriptor", { fact: "content.section", exists: false }, { content: null }, "err"],
    ["user.* with no user", { fact: "user.country", exists: false }, { user: null }, "err"],
    ["context.* is always available", { fact: "context.section", exists: false }, { context: {} }, "yes"],
    ["grants.* is always available", { fact: "grants.premium", exists: false }, { grants: {} }, "yes"],
  ];
  test.each(cases)("%s", (_name, when, options, expected) => {
    expect(outcomeOf(when, options)).toBe(expected);
  });
});
