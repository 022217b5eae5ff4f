// biome-ignore-all lint/suspicious/noThenProperty: rules of the site-document format have a string `then` member.
// biome-ignore-all lint/suspicious/noExplicitAny: test documents are plain JSON mutated one member at a time.
import { describe, expect, test } from "bun:test";
import { Value } from "@sinclair/typebox/value";
import { SiteDocumentSchema, siteDocumentJsonSchema, validateSiteDocument } from "../../src/core/document";
import { doc } from "./snapshot";

/** A valid document with one of everything, for breaking one thing at a time. */
function base(): Record<string, any> {
  return doc({
    identity: { mode: "svc_only" },
    allowedOrigins: ["https://news.example", "http://localhost:3000"],
    contentKeys: [
      { id: "k1", secret: "test-secret-0123456789" },
      { id: "k2", secret: "test-secret-9876543210" },
    ],
    meters: { articles: { kind: "seen", allowance: 5, period: "month", timeZone: "Europe/London" } },
    catalog: { offer: { id: "o1", title: "Offer", price: 5 } },
    experiments: { wall: { salt: "s", variants: { a: 1, b: 1 } } },
    features: {
      paywall: {
        purpose: "decision",
        outcomes: {
          allow: { type: "allow" },
          denyA: { type: "deny", fields: { offer: { $ref: { catalog: "offer", select: ["id", "title"] } } } },
          denyB: { type: "deny" },
        },
        rules: [
          {
            when: {
              all: [
                { fact: "content.premium", eq: true },
                { meter: "articles", allows: true },
              ],
            },
            then: "allow",
            tick: ["articles"],
          },
          { split: { experiment: "wall", outcomes: { a: "denyA", b: "denyB" } } },
        ],
        default: "allow",
        onError: "denyB",
      },
      journey: {
        purpose: "journey",
        outcomes: { go: { url: "https://shop.example/buy?x={context.x}", fallbackUrl: "https://shop.example/" } },
        default: "go",
        onError: "go",
      },
    },
    newsletters: [{ slug: "daily", label: "Daily" }],
    pipelines: { scores: { source: "organization", columns: { score: "number" } } },
  });
}

function errorsOf(mutate: (d: Record<string, any>) => void): { path: string; message: string }[] {
  const d = base();
  mutate(d);
  const r = validateSiteDocument(d);
  return r.ok ? [] : r.errors;
}

test("pipeline columns may be number, integer, boolean or string", () => {
  const d = base();
  d.pipelines.scores.columns = { a: "number", b: "integer", c: "boolean", d: "string" };
  d.features.paywall.rules[0].when = { fact: "streaming.scores.b", gte: 2 };
  expect(validateSiteDocument(d).ok).toBe(true);
});

test("the base document is valid and returned as given", () => {
  const d = base();
  const r = validateSiteDocument(d);
  expect(r).toEqual({ ok: true, document: d as never });
  if (r.ok) expect(r.document).toBe(d as never);
});

type Case = [string, (d: Record<string, any>) => void, string, RegExp];

describe("structural errors name their JSON pointer", () => {
  const cases: Case[] = [
    ["not an object", () => {}, "", /object/],
    ["schemaVersion 2", (d) => (d.schemaVersion = 2), "/schemaVersion", /must be 1/],
    ["unknown top-level member", (d) => (d.feature = {}), "/feature", /unknown member/],
    [
      "identity mode",
      (d) => (d.identity.mode = "both"),
      "/identity/mode",
      /one of "svc_only", "dual", "external_only"/,
    ],
    ["meter kind", (d) => (d.meters.articles.kind = "unique"), "/meters/articles/kind", /one of/],
    [
      "meter allowance negative",
      (d) => (d.meters.articles.allowance = -1),
      "/meters/articles/allowance",
      /greater or equal/,
    ],
    ["meter period", (d) => (d.meters.articles.period = "hour"), "/meters/articles/period", /one of/],
    [
      "experiment weight zero",
      (d) => (d.experiments.wall.variants.a = 0),
      "/experiments/wall/variants/a",
      /greater or equal to 1/,
    ],
    [
      "experiment weight fractional",
      (d) => (d.experiments.wall.variants.a = 0.5),
      "/experiments/wall/variants/a",
      /integer/,
    ],
    [
      "experiment with no variants",
      (d) => (d.experiments.wall.variants = {}),
      "/experiments/wall/variants",
      /at least 1/,
    ],
    ["bad feature name", (d) => (d.features["9lives"] = d.features.paywall), "/features/9lives", /unknown member/],
    [
      "feature purpose",
      (d) => (d.features.paywall.purpose = "banner"),
      "/features/paywall/purpose",
      /one of "decision", "journey"/,
    ],
    ["missing onError", (d) => delete d.features.paywall.onError, "/features/paywall/onError", /required/],
    [
      "unknown rule member",
      (d) => (d.features.paywall.rules[0].than = "allow"),
      "/features/paywall/rules/0/than",
      /unknown member/,
    ],
    [
      "unknown operator",
      (d) => (d.features.paywall.rules[0].when.all[0] = { fact: "content.premium", equals: true }),
      "/features/paywall/rules/0/when/all/0/equals",
      /unknown operator "equals"/,
    ],
    [
      "two operators",
      (d) => (d.features.paywall.rules[0].when.all[0] = { fact: "content.n", gte: 1, lt: 5 }),
      "/features/paywall/rules/0/when/all/0",
      /exactly one operator/,
    ],
    [
      "unknown namespace",
      (d) => (d.features.paywall.rules[0].when.all[0] = { fact: "cookies.x", eq: 1 }),
      "/features/paywall/rules/0/when/all/0/fact",
      /does not match/,
    ],
    [
      "namespace with no path",
      (d) => (d.features.paywall.rules[0].when.all[0] = { fact: "content", exists: true }),
      "/features/paywall/rules/0/when/all/0/fact",
      /does not match/,
    ],
    [
      "in needs an array",
      (d) => (d.features.paywall.rules[0].when.all[0] = { fact: "context.s", in: "a" }),
      "/features/paywall/rules/0/when/all/0/in",
      /array/,
    ],
    [
      "bad duration",
      (d) => (d.features.paywall.rules[0].when.all[0] = { fact: "content.t", withinLast: "7 days" }),
      "/features/paywall/rules/0/when/all/0/withinLast",
      /does not match/,
    ],
    [
      "empty all",
      (d) => (d.features.paywall.rules[0].when = { all: [] }),
      "/features/paywall/rules/0/when/all",
      /greater or equal to 1/,
    ],
    [
      "two forms in one condition",
      (d) => (d.features.paywall.rules[0].when = { all: [], any: [] }),
      "/features/paywall/rules/0/when",
      /exactly one form/,
    ],
    [
      "no form",
      (d) => (d.features.paywall.rules[0].when = { eq: 1 }),
      "/features/paywall/rules/0/when",
      /needs one of all, any/,
    ],
    [
      "nested bad condition",
      (d) => (d.features.paywall.rules[0].when = { not: { any: [{ fact: "context.a", exists: "yes" }] } }),
      "/features/paywall/rules/0/when/not/any/0/exists",
      /boolean/,
    ],
    [
      "atLeast zero",
      (d) => (d.features.paywall.rules[0].when = { atLeast: 0, of: [{ fact: "context.a", exists: true }] }),
      "/features/paywall/rules/0/when/atLeast",
      /greater or equal/,
    ],
    [
      "meter test with two tests",
      (d) => (d.features.paywall.rules[0].when = { meter: "articles", allows: true, remaining: { gt: 1 } }),
      "/features/paywall/rules/0/when",
      /exactly one of remaining or allows/,
    ],
    [
      "remaining with two operators",
      (d) => (d.features.paywall.rules[0].when = { meter: "articles", remaining: { gt: 1, lt: 3 } }),
      "/features/paywall/rules/0/when/remaining",
      /exactly one of/,
    ],
    ["short secret", (d) => (d.contentKeys[0].secret = "short"), "/contentKeys/0/secret", /length/],
    ["newsletter slug", (d) => (d.newsletters[0].slug = "Daily-News"), "/newsletters/0/slug", /does not match/],
    ["newsletter id", (d) => (d.newsletters[0].id = "daily"), "/newsletters/0/id", /does not match/],
    [
      "pipeline source",
      (d) => (d.pipelines.scores.source = "vendor"),
      "/pipelines/scores/source",
      /must be "organization"/,
    ],
    [
      "pipeline column type",
      (d) => (d.pipelines.scores.columns.score = "float"),
      "/pipelines/scores/columns/score",
      /one of/,
    ],
    [
      "too many pipeline columns",
      (d) => {
        for (let i = 0; i < 65; i++) d.pipelines.scores.columns[`c${i}`] = "number";
      },
      "/pipelines/scores/columns",
      /64/,
    ],
    [
      "duplicate tick",
      (d) => (d.features.paywall.rules[0].tick = ["articles", "articles"]),
      "/features/paywall/rules/0/tick",
      /unique/,
    ],
  ];
  test.each(cases)("%s", (_name, mutate, path, message) => {
    const r = _name === "not an object" ? validateSiteDocument([]) : undefined;
    const errors = r !== undefined ? (r.ok ? [] : r.errors) : errorsOf(mutate);
    const hit = errors.find((e) => e.path === path);
    expect(hit, JSON.stringify(errors)).toBeDefined();
    expect(hit?.message).toMatch(message);
  });
});

describe("semantic errors name their JSON pointer", () => {
  const cases: Case[] = [
    [
      "default names an unknown outcome",
      (d) => (d.features.paywall.default = "nope"),
      "/features/paywall/default",
      /unknown outcome "nope"/,
    ],
    [
      "onError names an unknown outcome",
      (d) => (d.features.paywall.onError = "nope"),
      "/features/paywall/onError",
      /unknown outcome/,
    ],
    [
      "then names an unknown outcome",
      (d) => (d.features.paywall.rules[0].then = "nope"),
      "/features/paywall/rules/0/then",
      /unknown outcome/,
    ],
    [
      "split names an unknown outcome",
      (d) => (d.features.paywall.rules[1].split.outcomes.b = "nope"),
      "/features/paywall/rules/1/split/outcomes/b",
      /unknown outcome/,
    ],
    [
      "a rule with then and split",
      (d) => (d.features.paywall.rules[1].then = "allow"),
      "/features/paywall/rules/1",
      /exactly one of then or split/,
    ],
    [
      "a rule with neither",
      (d) => delete d.features.paywall.rules[1].split,
      "/features/paywall/rules/1",
      /exactly one of then or split/,
    ],
    [
      "unknown meter read",
      (d) => (d.features.paywall.rules[0].when.all[1].meter = "views"),
      "/features/paywall/rules/0/when/all/1/meter",
      /unknown meter "views"/,
    ],
    [
      "unknown meter ticked",
      (d) => (d.features.paywall.rules[0].tick = ["views"]),
      "/features/paywall/rules/0/tick/0",
      /unknown meter "views"/,
    ],
    [
      "unknown experiment",
      (d) => (d.features.paywall.rules[1].split.experiment = "nope"),
      "/features/paywall/rules/1/split/experiment",
      /unknown experiment/,
    ],
    [
      "split misses a variant",
      (d) => delete d.features.paywall.rules[1].split.outcomes.b,
      "/features/paywall/rules/1/split/outcomes",
      /variant "b" of experiment "wall" has no outcome/,
    ],
    [
      "split names a variant the experiment lacks",
      (d) => (d.features.paywall.rules[1].split.outcomes.c = "denyB"),
      "/features/paywall/rules/1/split/outcomes/c",
      /has no variant "c"/,
    ],
    [
      "unknown catalog item",
      (d) => (d.features.paywall.outcomes.denyA.fields.offer.$ref.catalog = "gone"),
      "/features/paywall/outcomes/denyA/fields/offer/$ref/catalog",
      /unknown catalog item "gone"/,
    ],
    [
      "selected key missing",
      (d) => d.features.paywall.outcomes.denyA.fields.offer.$ref.select.push("colour"),
      "/features/paywall/outcomes/denyA/fields/offer/$ref/select/2",
      /no key "colour"/,
    ],
    [
      "malformed reference",
      (d) => (d.features.paywall.outcomes.denyA.fields.offer = { $ref: "offer" }),
      "/features/paywall/outcomes/denyA/fields/offer/$ref",
      /object/,
    ],
    [
      "empty selection",
      (d) => (d.features.paywall.outcomes.denyA.fields.offer.$ref.select = []),
      "/features/paywall/outcomes/denyA/fields/offer/$ref/select",
      /greater or equal to 1/,
    ],
    [
      "journey outcome without url",
      (d) => delete d.features.journey.outcomes.go.url,
      "/features/journey/outcomes/go/url",
      /needs a url/,
    ],
    [
      "decision outcome with url",
      (d) => (d.features.paywall.outcomes.allow.url = "https://x.example/"),
      "/features/paywall/outcomes/allow/url",
      /only journey/,
    ],
    [
      "decision outcome with fallbackUrl",
      (d) => (d.features.paywall.outcomes.allow.fallbackUrl = "https://x.example/"),
      "/features/paywall/outcomes/allow/fallbackUrl",
      /only journey/,
    ],
    [
      "journey ticking a meter",
      (d) => (d.features.journey.rules = [{ then: "go", tick: ["articles"] }]),
      "/features/journey/rules/0/tick",
      /charges no meter/,
    ],
    [
      "journey url not absolute",
      (d) => (d.features.journey.outcomes.go.url = "shop.example/buy"),
      "/features/journey/outcomes/go/url",
      /absolute http\(s\) URL or a path/,
    ],
    [
      "journey url protocol-relative",
      (d) => (d.features.journey.outcomes.go.url = "//evil.example/"),
      "/features/journey/outcomes/go/url",
      /single \//,
    ],
    [
      "journey placeholder in the host",
      (d) => (d.features.journey.outcomes.go.url = "https://{context.host}/buy"),
      "/features/journey/outcomes/go/url",
      /only follow the host/,
    ],
    [
      "journey placeholder not a fact",
      (d) => (d.features.journey.outcomes.go.url = "https://shop.example/{offer}"),
      "/features/journey/outcomes/go/url",
      /fact path/,
    ],
    [
      "journey placeholder unbalanced",
      (d) => (d.features.journey.outcomes.go.url = "https://shop.example/{context.x"),
      "/features/journey/outcomes/go/url",
      /unbalanced/,
    ],
    [
      "fallbackUrl with a placeholder",
      (d) => (d.features.journey.outcomes.go.fallbackUrl = "https://shop.example/{context.x}"),
      "/features/journey/outcomes/go/fallbackUrl",
      /no placeholders/,
    ],
    [
      "invalid time zone",
      (d) => (d.meters.articles.timeZone = "Europe/Atlantis"),
      "/meters/articles/timeZone",
      /not an IANA time zone/,
    ],
    [
      "offset instead of a zone name",
      (d) => (d.meters.articles.timeZone = "+01:00"),
      "/meters/articles/timeZone",
      /not an IANA time zone/,
    ],
    [
      "duplicate content key id",
      (d) => (d.contentKeys[1].id = "k1"),
      "/contentKeys/1/id",
      /duplicate content key id "k1"/,
    ],
    [
      "duplicate newsletter slug",
      (d) => d.newsletters.push({ slug: "daily", label: "Again" }),
      "/newsletters/1/slug",
      /duplicate newsletter slug "daily"/,
    ],
    [
      "duplicate newsletter id",
      (d) => {
        d.newsletters[0].id = "0190a5f2-9c3e-7bbb-8123-0123456789ab";
        d.newsletters.push({ id: "0190A5F2-9C3E-7BBB-8123-0123456789AB", slug: "weekly", label: "Weekly" });
      },
      "/newsletters/1/id",
      /duplicate newsletter id/,
    ],
    [
      "newsletter fact naming no list",
      (d) => (d.features.paywall.rules[0].when = { fact: "newsletters.weekly", eq: "subscribed" }),
      "/features/paywall/rules/0/when/fact",
      /unknown newsletter list "weekly"/,
    ],
    [
      "newsletter fact with a member path",
      (d) => (d.features.paywall.rules[0].when = { fact: "newsletters.daily.status", eq: "subscribed" }),
      "/features/paywall/rules/0/when/fact",
      /newsletters\.<slug>/,
    ],
    [
      "origin with a path",
      (d) => (d.allowedOrigins[0] = "https://news.example/"),
      "/allowedOrigins/0",
      /not an origin/,
    ],
    ["origin that is not a URL", (d) => (d.allowedOrigins[1] = "*"), "/allowedOrigins/1", /not an origin/],
    [
      "atLeast more than of",
      (d) => (d.features.paywall.rules[0].when = { atLeast: 3, of: [{ fact: "context.a", exists: true }] }),
      "/features/paywall/rules/0/when/atLeast",
      /exceeds/,
    ],
    [
      "unparseable before",
      (d) => (d.features.paywall.rules[0].when = { fact: "content.t", before: "next tuesday" }),
      "/features/paywall/rules/0/when/before",
      /date-time/,
    ],
    [
      "grant path too deep",
      (d) => (d.features.paywall.rules[0].when = { fact: "grants.premium.since", exists: true }),
      "/features/paywall/rules/0/when/fact",
      /grants\.<name>/,
    ],
    [
      "unknown pipeline",
      (d) => (d.features.paywall.rules[0].when = { fact: "streaming.clicks.score", gt: 1 }),
      "/features/paywall/rules/0/when/fact",
      /unknown pipeline "clicks"/,
    ],
    [
      "undeclared pipeline column",
      (d) => (d.features.paywall.rules[0].when = { fact: "streaming.scores.rank", gt: 1 }),
      "/features/paywall/rules/0/when/fact",
      /no column "rank"/,
    ],
    [
      "reserved pipeline column",
      (d) => (d.pipelines.scores.columns.user_id = "string"),
      "/pipelines/scores/columns/user_id",
      /reserved/,
    ],
    [
      "external facts outside external_only",
      (d) => (d.features.paywall.rules[0].when = { fact: "external.tier", eq: "gold" }),
      "/features/paywall/rules/0/when/fact",
      /external_only/,
    ],
    ["dual without a sign-out page", (d) => (d.identity = { mode: "dual" }), "/identity/upstream", /signOutUrl/],
  ];
  test.each(cases)("%s", (_name, mutate, path, message) => {
    const errors = errorsOf(mutate);
    const hit = errors.find((e) => e.path === path);
    expect(hit, JSON.stringify(errors)).toBeDefined();
    expect(hit?.message).toMatch(message);
  });

  test("external facts are fine in external_only", () => {
    const errors = errorsOf((d) => {
      d.identity = { mode: "external_only", upstream: { audience: "news", claims: { tier: "subscription_tier" } } };
      d.features.paywall.rules[0].when = { fact: "external.tier", eq: "gold" };
    });
    expect(errors).toEqual([]);
  });

  test("every problem is reported, not just the first", () => {
    const errors = errorsOf((d) => {
      d.features.paywall.default = "x";
      d.features.paywall.onError = "y";
      d.meters.articles.timeZone = "Nowhere/Town";
    });
    expect(errors.map((e) => e.path).sort()).toEqual([
      "/features/paywall/default",
      "/features/paywall/onError",
      "/meters/articles/timeZone",
    ]);
  });

  test("pointers escape / and ~ in keys", () => {
    const errors = errorsOf((d) => (d.catalog["a/b~c"] = {}));
    expect(errors.map((e) => e.path)).toContain("/catalog/a~1b~0c");
  });
});

describe("JSON Schema export", () => {
  const schema = siteDocumentJsonSchema() as Record<string, any>;

  test("carries $schema, $id, title and a $defs condition", () => {
    expect(schema.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
    expect(typeof schema.$id).toBe("string");
    expect(schema.title).toContain("Site document");
    expect(schema.$defs.condition.anyOf).toHaveLength(6);
    expect(schema.properties.features.patternProperties).toBeDefined();
  });

  test("is plain JSON with every condition reference resolved to $defs", () => {
    const text = JSON.stringify(schema);
    expect(JSON.parse(text)).toEqual(schema);
    expect(text).not.toContain('"$ref":"Condition"');
    expect(text).not.toContain('"$id":"Condition"');
    expect(text.match(/"\$ref":"#\/\$defs\/condition"/g)?.length).toBeGreaterThanOrEqual(5);
  });

  test("the TypeBox schema accepts a valid document", () => {
    expect(Value.Check(SiteDocumentSchema, base())).toBe(true);
  });
});
