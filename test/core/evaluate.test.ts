// biome-ignore-all lint/suspicious/noThenProperty: rules of the site-document format have a string `then` member.

import { jscDescribe } from "bun:jsc";
import { describe, expect, test } from "bun:test";
import { evaluateBatch, sharedEmpty } from "../../src/core/evaluate";
import { signContentPayload } from "../../src/core/verifier";
import { doc, NOW, type SnapshotOptions, site, snapshot } from "./snapshot";

const SECRET = "test-secret-0123456789";

const catalog = {
  basic: { id: "basic", title: "Basic", price: 5, currency: "EUR", internalSku: "SKU-1", terms: { months: 1 } },
};

/** One site exercising outcomes, meters, experiments and journeys. */
const testSite = site(
  doc({
    contentKeys: [
      { id: "k1", secret: SECRET },
      { id: "k2", secret: "second-secret-0123456789" },
    ],
    meters: {
      articles: { kind: "seen", allowance: 3, period: "month", timeZone: "Europe/London" },
      calls: { kind: "count", allowance: 2, period: "day", timeZone: "UTC" },
    },
    catalog,
    experiments: { wall: { salt: "wall-2026", variants: { a: 1, b: 1 } } },
    features: {
      verdicts: {
        purpose: "decision",
        outcomes: {
          allow: { type: "allow" },
          deny: { type: "deny" },
          redirect: { type: "redirect", fields: { to: "/subscribe" } },
          data: { type: "data", fields: { n: 1, list: [1, 2], nested: { a: { b: true } }, nothing: null } },
          future: { type: "sparkle", fields: { level: 3 } },
          plain: {},
          offer: {
            fields: { offer: { $ref: { catalog: "basic", select: ["title", "price", "terms"] } }, headline: "Hi" },
          },
        },
        rules: [
          { when: { fact: "context.pick", eq: "allow" }, then: "allow" },
          { when: { fact: "context.pick", eq: "deny" }, then: "deny" },
          { when: { fact: "context.pick", eq: "redirect" }, then: "redirect" },
          { when: { fact: "context.pick", eq: "data" }, then: "data" },
          { when: { fact: "context.pick", eq: "future" }, then: "future" },
          { when: { fact: "context.pick", eq: "offer" }, then: "offer" },
        ],
        default: "plain",
        onError: "deny",
      },
      paywall: {
        purpose: "decision",
        outcomes: {
          subscriber: { type: "allow" },
          metered: { type: "allow" },
          wallA: { type: "deny", fields: { variant: "a" } },
          wallB: { type: "deny", fields: { variant: "b" } },
          broken: { type: "deny", fields: { reason: "error" } },
        },
        rules: [
          { when: { fact: "grants.premium", exists: true }, then: "subscriber" },
          {
            when: { fact: "content.premium", eq: true },
            tick: ["articles"],
            then: "metered",
            description: "reads content",
          },
          { when: { meter: "articles", allows: true }, then: "metered", tick: ["articles"] },
          { split: { experiment: "wall", outcomes: { a: "wallA", b: "wallB" } } },
        ],
        default: "wallA",
        onError: "broken",
      },
      teaser: {
        purpose: "decision",
        outcomes: { on: { type: "allow" }, off: {} },
        rules: [{ when: { meter: "calls", remaining: { gt: 0 } }, then: "on", tick: ["calls"] }],
        default: "off",
        onError: "off",
      },
      second_split: {
        purpose: "decision",
        outcomes: { x: { type: "data" }, y: { type: "data" }, e: {} },
        rules: [{ split: { experiment: "wall", outcomes: { a: "x", b: "y" } }, tick: ["calls"] }],
        default: "x",
        onError: "e",
      },
      mixed: {
        purpose: "decision",
        outcomes: { hit: { type: "allow" }, e: { type: "deny" } },
        rules: [
          { when: { meter: "calls", remaining: { lt: 0 } }, then: "hit" },
          { when: { fact: "content.x", eq: 1 }, then: "hit" },
        ],
        default: "hit",
        onError: "e",
      },
      always_ticks: {
        purpose: "decision",
        outcomes: { ok: { type: "allow" }, e: { type: "deny" } },
        rules: [{ then: "ok", tick: ["articles"] }],
        default: "ok",
        onError: "e",
      },
      journey: {
        purpose: "journey",
        outcomes: {
          account: { url: "https://news.example/account" },
          checkout: {
            url: "https://shop.example/checkout?offer={context.offer}&u={user.id}",
            fallbackUrl: "https://news.example/subscribe",
          },
        },
        rules: [{ when: { fact: "grants.premium", exists: true }, then: "account" }],
        default: "checkout",
        onError: "checkout",
      },
      disabled: { purpose: "decision", enabled: false, outcomes: { x: {} }, default: "x", onError: "x" },
      unpublished: { purpose: "decision", published: false, outcomes: { x: {} }, default: "x", onError: "x" },
      stopped: { purpose: "decision", running: false, outcomes: { x: {} }, default: "x", onError: "x" },
    },
  }),
);

const run = (names: string[], options: SnapshotOptions = {}) => evaluateBatch(testSite, names, snapshot(options));

describe("outcomes", () => {
  test.each([
    ["allow", { outcome: "allow", type: "allow" }],
    ["deny", { outcome: "deny", type: "deny" }],
    ["redirect", { outcome: "redirect", type: "redirect", fields: { to: "/subscribe" } }],
    [
      "data",
      { outcome: "data", type: "data", fields: { n: 1, list: [1, 2], nested: { a: { b: true } }, nothing: null } },
    ],
    ["future", { outcome: "future", type: "sparkle", fields: { level: 3 } }],
    ["none", { outcome: "plain" }],
  ])("context.pick=%s answers exactly %o", (pick, expected) => {
    const d = run(["verdicts"], { context: { pick } }).decisions.verdicts;
    expect(d).toEqual(expected as never);
    // No member beyond those: `type` only with a verdict, `fields` only with fields, no `meters`.
    expect(Object.keys(d ?? {}).sort()).toEqual(Object.keys(expected).sort());
  });

  test("a reference field carries exactly the selected keys of the catalog item", () => {
    const d = run(["verdicts"], { context: { pick: "offer" } }).decisions.verdicts;
    expect(d).toEqual({
      outcome: "offer",
      fields: { offer: { title: "Basic", price: 5, terms: { months: 1 } }, headline: "Hi" },
    });
    expect(Object.keys((d?.fields as { offer: object } | undefined)?.offer ?? {})).toEqual(["title", "price", "terms"]);
    expect(JSON.stringify(d)).not.toContain("internalSku");
  });

  test("resolved fields are built once, frozen and shared across requests", () => {
    const a = run(["verdicts"], { context: { pick: "offer" } }).decisions.verdicts;
    const b = run(["verdicts"], { context: { pick: "offer" } }).decisions.verdicts;
    expect(a).toBe(b as never);
    expect(Object.isFrozen(a?.fields ?? {})).toBe(true);
    expect(Object.isFrozen((a?.fields as { offer: { terms: object } } | undefined)?.offer.terms ?? {})).toBe(true);
    // The catalog object given to the compiler is not shared with (or frozen by) the answers.
    expect(Object.isFrozen(catalog.basic.terms)).toBe(false);
  });
});

describe("the error slot", () => {
  const sign = (payload: string, secret = SECRET) => ({ payload, signature: signContentPayload(payload, secret) });
  const verified = (descriptor: { payload: string; signature: string } | undefined) => {
    const v = testSite.verifyContent(descriptor, NOW);
    return { content: v?.facts ?? null, articleId: v?.articleId ?? null };
  };
  const good = JSON.stringify({ id: "a1", premium: true });
  const cases: [string, SnapshotOptions, string][] = [
    ["valid descriptor reads content", verified(sign(good)), "metered"],
    ["content absent", verified(undefined), "broken"],
    [
      "forged signature",
      verified({ payload: good, signature: sign(good, "another-secret-0123456").signature }),
      "broken",
    ],
    ["tampered payload", verified({ payload: good.replace("a1", "a2"), signature: sign(good).signature }), "broken"],
    ["expired descriptor", verified(sign(JSON.stringify({ id: "a1", premium: true, exp: NOW / 1000 - 1 }))), "broken"],
    ["unknown kid", verified(sign(JSON.stringify({ id: "a1", premium: true, kid: "k9" }))), "broken"],
    [
      "second key by kid",
      verified(sign(JSON.stringify({ id: "a1", premium: true, kid: "k2" }), "second-secret-0123456789")),
      "metered",
    ],
    ["meter read with no subject", { content: { premium: false }, subject: null, meters: {} }, "broken"],
    [
      "experiment with no subject (meter spent)",
      { content: { premium: false }, subject: null, meters: { articles: { allowance: 3, count: 3, seen: false } } },
      "broken",
    ],
  ];
  test.each(cases)("%s", (_name, options, expected) => {
    const r = run(["paywall"], { meters: { articles: { allowance: 3, count: 0, seen: false } }, ...options });
    expect(r.decisions.paywall?.outcome).toBe(expected);
    if (expected === "broken") {
      expect(r.ticks).toEqual([]);
      expect(r.exposures).toEqual([]);
    }
  });

  test("a grant rule before the content read answers without touching content", () => {
    const r = run(["paywall"], { content: null, grants: { premium: true } });
    expect(r.decisions.paywall).toEqual({ outcome: "subscriber", type: "allow" });
  });

  test("a meter that cannot be read leaves no meters member", () => {
    const r = run(["teaser"], { subject: null, meters: {} });
    expect(r.decisions.teaser).toEqual({ outcome: "off" });
  });

  test("the error outcome reports the meters read before the error", () => {
    const r = run(["mixed"], { content: null, meters: { calls: { allowance: 2, count: 1, seen: false } } });
    expect(r.decisions.mixed).toEqual({ outcome: "e", type: "deny", meters: { calls: { allowance: 2, count: 1 } } });
  });

  test("ticking a seen meter needs the article id", () => {
    expect(run(["always_ticks"], { articleId: null }).decisions.always_ticks?.outcome).toBe("e");
    expect(run(["always_ticks"], { articleId: "a1" }).decisions.always_ticks?.outcome).toBe("ok");
  });

  test("ticking any meter needs a subject", () => {
    const r = run(["always_ticks"], { subject: null });
    expect(r.decisions.always_ticks?.outcome).toBe("e");
    expect(r.ticks).toEqual([]);
  });
});

describe("meters", () => {
  test("a seen meter: allowance and count as read, tick listed", () => {
    const r = run(["paywall"], {
      content: { premium: false },
      meters: { articles: { allowance: 3, count: 1, seen: false } },
    });
    expect(r.decisions.paywall).toEqual({
      outcome: "metered",
      type: "allow",
      meters: { articles: { allowance: 3, count: 1 } },
    });
    expect(r.ticks).toEqual(["articles"]);
  });

  test("a spent seen meter still shows its read and does not tick", () => {
    const r = run(["paywall"], {
      content: { premium: false },
      meters: { articles: { allowance: 3, count: 3, seen: false } },
    });
    expect(r.decisions.paywall?.meters).toEqual({ articles: { allowance: 3, count: 3 } });
    expect(r.decisions.paywall?.type).toBe("deny");
    expect(r.ticks).toEqual([]);
  });

  test("a spent seen meter lets an already-seen article through and ticks again (the counter ignores repeats)", () => {
    const r = run(["paywall"], {
      content: { premium: false },
      meters: { articles: { allowance: 3, count: 3, seen: true } },
    });
    expect(r.decisions.paywall?.outcome).toBe("metered");
    expect(r.ticks).toEqual(["articles"]);
  });

  test("a count meter: allowance and count as read, tick listed", () => {
    const r = run(["teaser"], { meters: { calls: { allowance: 2, count: 1, seen: false } } });
    expect(r.decisions.teaser).toEqual({ outcome: "on", type: "allow", meters: { calls: { allowance: 2, count: 1 } } });
    expect(r.ticks).toEqual(["calls"]);
  });

  test("a meter ticks once per request across features", () => {
    const r = run(["teaser", "second_split"], { meters: { calls: { allowance: 2, count: 0, seen: false } } });
    expect(r.ticks).toEqual(["calls"]);
  });

  test("no meters member when no rule read a meter", () => {
    const r = run(["paywall"], { grants: { premium: true } });
    expect(r.decisions.paywall && "meters" in r.decisions.paywall).toBe(false);
  });

  test("compiled features list the meters they read or tick", () => {
    expect(testSite.features.get("paywall")?.meters).toEqual(["articles"]);
    expect(testSite.features.get("second_split")?.meters).toEqual(["calls"]);
    expect(testSite.features.get("verdicts")?.meters).toEqual([]);
  });
});

describe("experiments and exposures", () => {
  const spent = { content: { premium: false }, meters: { articles: { allowance: 3, count: 3, seen: false } } };

  test("the same subject gets the same variant on every call", () => {
    for (const subject of ["u-1", "u-2", "u-3", "device-xyz"]) {
      const first = run(["paywall"], { ...spent, subject }).decisions.paywall?.outcome;
      for (let i = 0; i < 5; i++)
        expect(run(["paywall"], { ...spent, subject }).decisions.paywall?.outcome).toBe(first as string);
    }
  });

  test("the variant is the one the published bucketing formula gives", () => {
    const expected = testSite.experiments.get("wall")?.assign("u-42");
    const r = run(["paywall"], { ...spent, subject: "u-42" });
    expect(r.exposures).toEqual([{ experiment: "wall", variant: expected as string }]);
    expect(r.decisions.paywall?.outcome).toBe(expected === "a" ? "wallA" : "wallB");
  });

  test("two features splitting on one experiment give one exposure", () => {
    const r = run(["paywall", "second_split"], {
      ...spent,
      subject: "u-7",
      meters: { ...spent.meters, calls: { allowance: 2, count: 0, seen: false } },
    });
    expect(r.exposures).toHaveLength(1);
    const variant = r.exposures[0]?.variant;
    expect(r.decisions.second_split?.outcome).toBe(variant === "a" ? "x" : "y");
  });

  test("no exposure when the split rule is not reached", () => {
    expect(run(["paywall"], { grants: { premium: true } }).exposures).toEqual([]);
  });
});

describe("the arrays a batch answers with", () => {
  // JavaScriptCore's own description of an array names its kind ("ArrayWithContiguous", ...):
  // code compiled for one kind leaves its compiled form on meeting another (docs/performance.md).
  const kind = (array: readonly unknown[]) => /Array, \([^)]*\)\{\}, (\w+)/.exec(jscDescribe(array))?.[1];
  const spent = { content: { premium: false }, meters: { articles: { allowance: 3, count: 3, seen: false } } };

  test("no ticks and some ticks are the same kind of array", () => {
    const none = run(["paywall"], spent).ticks;
    const some = run(["paywall"], {
      content: { premium: false },
      meters: { articles: { allowance: 3, count: 1, seen: false } },
    }).ticks;
    expect(none).toEqual([]);
    expect(some).toEqual(["articles"]);
    expect(kind(none)).toBe("ArrayWithContiguous");
    expect(kind(none)).toBe(kind(some));
  });

  test("no exposures and some exposures are the same kind of array", () => {
    const none = run(["paywall"], { grants: { premium: true } }).exposures;
    const some = run(["paywall"], { ...spent, subject: "u-42" }).exposures;
    expect(none).toEqual([]);
    expect(some).toHaveLength(1);
    expect(kind(none)).toBe("ArrayWithContiguous");
    expect(kind(none)).toBe(kind(some));
  });

  test("the shared empty arrays stay empty from one batch to the next", () => {
    expect(run(["paywall"], spent).ticks).toBe(run(["paywall"], spent).ticks);
    expect(sharedEmpty<string>()).toEqual([]);
    expect(sharedEmpty<string>()).toHaveLength(0);
  });
});

describe("unanswered and batches", () => {
  test.each([["unknown"], ["disabled"], ["unpublished"], ["stopped"]])("%s is reported, not decided", (name) => {
    const r = run([name, "verdicts"]);
    expect(r.unanswered).toEqual([name]);
    expect(Object.keys(r.decisions)).toEqual(["verdicts"]);
  });

  test("a name asked twice is decided once and reported once", () => {
    const r = run(["teaser", "teaser", "nope", "nope"], { meters: { calls: { allowance: 2, count: 0, seen: false } } });
    expect(Object.keys(r.decisions)).toEqual(["teaser"]);
    expect(r.unanswered).toEqual(["nope"]);
    expect(r.ticks).toEqual(["calls"]);
  });

  test("an empty batch", () => {
    const r = run([]);
    expect(r.answered).toEqual([]);
    expect(r.results).toEqual([]);
    expect(r.decisions).toEqual({});
    expect([r.unanswered, r.ticks, r.exposures]).toEqual([[], [], []]);
  });

  const names = ["paywall", "teaser", "second_split", "verdicts", "journey", "disabled", "nope", "always_ticks"];
  const permutations = [
    names,
    [...names].reverse(),
    ["nope", "second_split", "always_ticks", "verdicts", "paywall", "disabled", "journey", "teaser"],
  ];
  const options: SnapshotOptions = {
    subject: "u-99",
    content: { premium: false },
    context: { pick: "data", offer: "annual" },
    meters: { articles: { allowance: 3, count: 1, seen: false }, calls: { allowance: 2, count: 0, seen: false } },
  };
  const asSets = (r: ReturnType<typeof run>) => ({
    decisions: r.decisions,
    unanswered: [...r.unanswered].sort(),
    ticks: [...r.ticks].sort(),
    exposures: r.exposures.map((e) => `${e.experiment}=${e.variant}`).sort(),
  });
  test.each(permutations.map((p) => [p.join(",")]))("order %s gives the same decisions and effect sets", (order) => {
    const baseline = asSets(run(names, options));
    expect(baseline.ticks).toEqual(["articles", "calls"]);
    expect(baseline.exposures).toHaveLength(1);
    expect(asSets(run(order.split(","), options))).toEqual(baseline);
  });
});

describe("journey features", () => {
  test("a literal url", () => {
    expect(run(["journey"], { grants: { premium: true } }).decisions.journey).toEqual({
      outcome: "account",
      url: "https://news.example/account",
    });
  });

  test("placeholders are filled and URL-encoded", () => {
    const d = run(["journey"], { context: { offer: "a&b c" }, user: { id: "u/1" } }).decisions.journey;
    expect(d).toEqual({
      outcome: "checkout",
      url: "https://shop.example/checkout?offer=a%26b%20c&u=u%2F1",
      fallbackUrl: "https://news.example/subscribe",
    });
  });

  test.each([
    ["a missing value", { context: {}, user: { id: "u1" } }],
    ["an unavailable namespace", { context: { offer: "x" }, user: null }],
    ["an object value", { context: { offer: { a: 1 } }, user: { id: "u1" } }],
  ] as [string, SnapshotOptions][])("%s leaves the url unresolved, with the fallback", (_n, options) => {
    expect(run(["journey"], options).decisions.journey).toEqual({
      outcome: "checkout",
      fallbackUrl: "https://news.example/subscribe",
    });
  });

  test("journeys charge no meter and report unanswered like any feature", () => {
    const r = run(["journey"]);
    expect(r.ticks).toEqual([]);
    expect(testSite.features.get("journey")?.purpose).toBe("journey");
  });
});

describe("the results a batch answers with", () => {
  // JavaScriptCore's id of an object's shape: code compiled for one shape leaves its compiled
  // form on meeting another, so every kind of result must have the same (docs/performance.md).
  const shape = (value: unknown) => /StructureID: (\d+)/.exec(jscDescribe(value))?.[1];
  const spent = { content: { premium: false }, meters: { articles: { allowance: 3, count: 3, seen: false } } };

  test("shared and per-request results, with and without an exposure, have one shape", () => {
    const shared = run(["verdicts"], { context: { pick: "allow" } }).results[0];
    const sharedExposed = run(["second_split"], { subject: "u-42" }).results[0];
    const built = run(["teaser"], { meters: { calls: { allowance: 2, count: 0, seen: false } } }).results[0];
    const builtExposed = run(["paywall"], { ...spent, subject: "u-42" }).results[0];
    const journey = run(["journey"], { context: { offer: "basic" }, user: { id: "u-1" } }).results[0];
    // Each is the kind it stands for: shared ones carry their JSON, built ones the head.
    expect(shared?.json).toBeString();
    expect(sharedExposed?.json).toBeString();
    expect(sharedExposed?.exposure).toEqual({ experiment: "wall", variant: expect.any(String) });
    expect(built?.json).toBeUndefined();
    expect(built?.decision.meters).toBeDefined();
    expect(builtExposed?.json).toBeUndefined();
    expect(builtExposed?.exposure).toBeDefined();
    expect(journey?.decision.url).toStartWith("https://shop.example/checkout");
    const shapes = [shared, sharedExposed, built, builtExposed, journey].map(shape);
    expect(shapes[0]).toBeDefined();
    expect(new Set(shapes).size).toBe(1);
  });

  test("a shared result is the same object from one batch to the next and keeps its decision", () => {
    const first = run(["verdicts"], { context: { pick: "deny" } }).results[0];
    const second = run(["verdicts"], { context: { pick: "deny" } }).results[0];
    expect(second).toBe(first);
    expect(second?.decision).toEqual({ outcome: "deny", type: "deny" });
  });
});
