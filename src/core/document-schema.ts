/**
 * The site document's TypeBox schema (also exported as JSON Schema for editors), its static
 * types, and the small parsers the validator and the compiler share. Reference:
 * docs/site-document.md. Validation lives in document.ts.
 */
import { type Static, type TSchema, Type } from "@sinclair/typebox";

/** Names of features, outcomes, meters, experiments, variants, catalog items, fields, pipelines. */
export const NAME_PATTERN = "^[A-Za-z][A-Za-z0-9_-]{0,127}$";
const FACT_NAMESPACES = [
  "content",
  "grants",
  "user",
  "org",
  "context",
  "streaming",
  "external",
  "gift",
  "newsletters",
] as const;
export type FactNamespace = (typeof FACT_NAMESPACES)[number];
const FACT_PATH_PATTERN = `^(${FACT_NAMESPACES.join("|")})(\\.[^.]+)+$`;
const DURATION_PATTERN = "^[1-9][0-9]{0,8}[smhdw]$";
/** Date-time strings accepted by before/after, in rules and in facts: ISO 8601, date first. */
export const ISO_INSTANT = /^\d{4}-\d{2}-\d{2}([T ][0-9:.]+(Z|[+-]\d{2}:?\d{2})?)?$/;
const SLUG_PATTERN = "^[a-z][a-z0-9_]*$";
/** A uuid in its canonical text form (newsletter list ids). */
export const UUID_PATTERN = "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$";
const COLUMN_PATTERN = "^[a-z][a-z0-9_]{0,63}$";
const KEY_ID_PATTERN = "^[A-Za-z0-9._-]{1,64}$";
/** Streaming row members that a pipeline cannot declare as columns. */
export const RESERVED_COLUMNS: ReadonlySet<string> = new Set(["user_id", "window_end", "site_id"]);

const Name = (description?: string) => Type.String({ pattern: NAME_PATTERN, ...(description ? { description } : {}) });
const Description = Type.Optional(Type.String({ maxLength: 2000, description: "Free text for humans; ignored." }));

const Primitive = Type.Union([Type.String(), Type.Number(), Type.Boolean(), Type.Null()]);
const Comparable = Type.Union([Type.String(), Type.Number()]);
const Instant = Type.Union([
  Type.String({ description: "ISO 8601 date-time" }),
  Type.Number({ description: "epoch milliseconds" }),
]);
const Duration = Type.String({ pattern: DURATION_PATTERN, description: 'e.g. "30m", "12h", "7d", "2w"' });

/** Operators of a fact test; a test carries exactly one. */
export const FACT_OPERATORS = [
  "eq",
  "ne",
  "lt",
  "lte",
  "gt",
  "gte",
  "in",
  "notIn",
  "contains",
  "exists",
  "before",
  "after",
  "withinLast",
  "olderThan",
] as const;

export const REMAINING_OPERATORS = ["gt", "gte", "lt", "lte", "eq"] as const;

export const FactTest = Type.Object(
  {
    fact: Type.String({ pattern: FACT_PATH_PATTERN, description: "namespace.path.to.value" }),
    eq: Type.Optional(Primitive),
    ne: Type.Optional(Primitive),
    lt: Type.Optional(Comparable),
    lte: Type.Optional(Comparable),
    gt: Type.Optional(Comparable),
    gte: Type.Optional(Comparable),
    in: Type.Optional(Type.Array(Primitive)),
    notIn: Type.Optional(Type.Array(Primitive)),
    contains: Type.Optional(Primitive),
    exists: Type.Optional(Type.Boolean()),
    before: Type.Optional(Instant),
    after: Type.Optional(Instant),
    withinLast: Type.Optional(Duration),
    olderThan: Type.Optional(Duration),
  },
  { additionalProperties: false, minProperties: 2, maxProperties: 2, title: "Fact test" },
);

const RemainingTest = Type.Object(
  {
    gt: Type.Optional(Type.Integer()),
    gte: Type.Optional(Type.Integer()),
    lt: Type.Optional(Type.Integer()),
    lte: Type.Optional(Type.Integer()),
    eq: Type.Optional(Type.Integer()),
  },
  { additionalProperties: false, minProperties: 1, maxProperties: 1 },
);

export const MeterTest = Type.Object(
  {
    meter: Name("meter name"),
    remaining: Type.Optional(RemainingTest),
    allows: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false, minProperties: 2, maxProperties: 2, title: "Meter test" },
);

/** The condition forms, with `child` standing for a nested condition. */
function conditionForms<C extends TSchema>(child: C) {
  return {
    all: Type.Object({ all: Type.Array(child, { minItems: 1 }) }, { additionalProperties: false, title: "all" }),
    any: Type.Object({ any: Type.Array(child, { minItems: 1 }) }, { additionalProperties: false, title: "any" }),
    not: Type.Object({ not: child }, { additionalProperties: false, title: "not" }),
    atLeast: Type.Object(
      { atLeast: Type.Integer({ minimum: 1 }), of: Type.Array(child, { minItems: 1 }) },
      { additionalProperties: false, title: "atLeast" },
    ),
    fact: FactTest,
    meter: MeterTest,
  };
}

const ConditionSchema = Type.Recursive(
  (This) => {
    const f = conditionForms(This);
    return Type.Union([f.all, f.any, f.not, f.atLeast, f.fact, f.meter]);
  },
  { $id: "Condition", title: "Condition" },
);
export type Condition = Static<typeof ConditionSchema>;
export type FactTestCondition = Static<typeof FactTest>;
export type MeterTestCondition = Static<typeof MeterTest>;

/** Grant names, as the operator API and `grants.<name>` facts spell them. */
const GRANT_PATTERN = "^[A-Za-z0-9_:-]{1,128}$";

/**
 * What an offer needs to be bought through checkout (docs/checkout.md): the provider's price, the
 * grant a purchase confers, and how long it lasts (`payment`: `duration` after the purchase;
 * `subscription`: until the subscription is cancelled or refunded).
 */
const CheckoutOffer = Type.Object(
  {
    description: Description,
    price: Type.String({ pattern: "^[A-Za-z0-9_]{1,255}$", description: "the provider's price id, e.g. price_1Q..." }),
    grant: Type.String({ pattern: GRANT_PATTERN, description: "the grant a purchase confers (read as grants.<name>)" }),
    mode: Type.Union([Type.Literal("payment"), Type.Literal("subscription")], {
      description: "payment: one-time, the grant lasts `duration`; subscription: recurring, held until cancelled",
    }),
    duration: Type.Optional(
      Type.String({
        pattern: DURATION_PATTERN,
        description: 'payment mode only: how long the grant lasts, e.g. "30d"',
      }),
    ),
  },
  { additionalProperties: false, title: "Checkout offer" },
);
export type CheckoutOfferDefinition = Static<typeof CheckoutOffer>;

/** A catalog item: any members, plus an optional `checkout` that makes it an offer a reader can buy. */
const CatalogItem = Type.Object(
  { checkout: Type.Optional(CheckoutOffer) },
  { additionalProperties: true, title: "Catalog item" },
);

/** The document schema, with `condition` as the schema of a rule's `when`. */
function documentSchema<C extends TSchema>(condition: C) {
  const Rule = Type.Object(
    {
      description: Description,
      when: Type.Optional(condition),
      // biome-ignore lint/suspicious/noThenProperty: the format's rule member; its value is a string, never a thenable.
      then: Type.Optional(Name("outcome id")),
      split: Type.Optional(
        Type.Object(
          {
            experiment: Name("experiment name"),
            outcomes: Type.Record(Type.String({ pattern: NAME_PATTERN }), Name("outcome id"), {
              additionalProperties: false,
              description: "variant -> outcome id; every variant of the experiment",
            }),
          },
          { additionalProperties: false },
        ),
      ),
      tick: Type.Optional(Type.Array(Name("meter name"), { uniqueItems: true, minItems: 1 })),
    },
    { additionalProperties: false, title: "Rule", description: "Exactly one of then / split." },
  );

  const Outcome = Type.Object(
    {
      description: Description,
      type: Type.Optional(
        Type.String({ minLength: 1, maxLength: 64, description: "verdict: allow, deny, redirect, data, or another" }),
      ),
      fields: Type.Optional(
        Type.Record(
          Type.String({ pattern: NAME_PATTERN }),
          Type.Unknown({
            description: 'Any JSON value, or a reference { "$ref": { "catalog": "<item>", "select": ["key", ...] } }',
          }),
          { additionalProperties: false },
        ),
      ),
      url: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: "journey outcomes only" })),
      fallbackUrl: Type.Optional(Type.String({ minLength: 1, maxLength: 2048, description: "journey outcomes only" })),
    },
    { additionalProperties: false, title: "Outcome" },
  );

  const Feature = Type.Object(
    {
      description: Description,
      purpose: Type.Union([Type.Literal("decision"), Type.Literal("journey")]),
      enabled: Type.Optional(Type.Boolean({ default: true })),
      published: Type.Optional(Type.Boolean({ default: true })),
      running: Type.Optional(Type.Boolean({ default: true, description: "running on this site" })),
      outcomes: Type.Record(Type.String({ pattern: NAME_PATTERN }), Outcome, {
        additionalProperties: false,
        minProperties: 1,
      }),
      rules: Type.Optional(Type.Array(Rule)),
      default: Name("outcome id when no rule matches"),
      onError: Name("outcome id when a rule reads an unavailable fact"),
    },
    { additionalProperties: false, title: "Feature" },
  );

  return Type.Object(
    {
      $schema: Type.Optional(Type.String()),
      schemaVersion: Type.Literal(1),
      description: Description,
      identity: Type.Object(
        {
          mode: Type.Union([Type.Literal("svc_only"), Type.Literal("dual"), Type.Literal("external_only")]),
          signInEnabled: Type.Optional(Type.Boolean()),
          upstream: Type.Optional(
            Type.Object(
              {
                audience: Type.Optional(Type.String({ minLength: 1, maxLength: 512 })),
                signOutUrl: Type.Optional(Type.String({ minLength: 1, maxLength: 2048 })),
                cookieNames: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 256 }))),
                claims: Type.Optional(
                  Type.Record(Type.String({ pattern: NAME_PATTERN }), Type.String({ minLength: 1, maxLength: 256 }), {
                    additionalProperties: false,
                    description: "external fact name -> upstream claim name",
                  }),
                ),
              },
              { additionalProperties: false },
            ),
          ),
        },
        { additionalProperties: false },
      ),
      allowedOrigins: Type.Optional(Type.Array(Type.String({ minLength: 1, maxLength: 2048 }))),
      contentKeys: Type.Optional(
        Type.Array(
          Type.Object(
            {
              id: Type.String({ pattern: KEY_ID_PATTERN }),
              secret: Type.Optional(
                Type.String({
                  minLength: 16,
                  maxLength: 512,
                  description: "write-only: a new key's secret; left out, a known key keeps its stored secret",
                }),
              ),
              fingerprint: Type.Optional(
                Type.String({
                  pattern: "^sha256:[0-9a-f]{16}$",
                  description: "read-only: shown in place of the secret; ignored on deploy",
                }),
              ),
            },
            { additionalProperties: false },
          ),
          {
            description:
              "HMAC-SHA256 keys; the first is used when a payload has no kid. Secrets are write-only (docs/site-document.md)",
          },
        ),
      ),
      gifts: Type.Optional(
        Type.Object(
          {
            description: Description,
            perGifterPerMonth: Type.Integer({
              minimum: 0,
              maximum: 10_000,
              description: "gift links one reader may mint per calendar month (UTC)",
            }),
            lifetime: Type.String({ pattern: DURATION_PATTERN, description: 'how long a link reads, e.g. "14d"' }),
            redemptionsPerLink: Type.Integer({
              minimum: 1,
              maximum: 10_000,
              description: "distinct readers (user or device) one link lets in",
            }),
          },
          { additionalProperties: false, description: "Gift links (docs/gift-links.md); absent: none minted or read" },
        ),
      ),
      meters: Type.Optional(
        Type.Record(
          Type.String({ pattern: NAME_PATTERN }),
          Type.Object(
            {
              description: Description,
              kind: Type.Union([Type.Literal("seen"), Type.Literal("count")]),
              allowance: Type.Integer({ minimum: 0 }),
              period: Type.Union([
                Type.Literal("day"),
                Type.Literal("week"),
                Type.Literal("month"),
                Type.Literal("year"),
                Type.Literal("forever"),
              ]),
              timeZone: Type.String({ minLength: 1, maxLength: 64, description: "IANA time zone, e.g. Europe/London" }),
              retainDays: Type.Optional(
                Type.Integer({
                  minimum: 0,
                  maximum: 3650,
                  description:
                    "Days a past period's counts are kept after it ended (docs/operations.md, Retention); absent: SVC_RETAIN_METER_DAYS",
                }),
              ),
            },
            { additionalProperties: false },
          ),
          { additionalProperties: false },
        ),
      ),
      traits: Type.Optional(
        Type.Record(
          Type.String({ pattern: NAME_PATTERN }),
          Type.Object(
            {
              description: Description,
              type: Type.Union([
                Type.Literal("string"),
                Type.Literal("number"),
                Type.Literal("boolean"),
                Type.Literal("list"),
              ]),
              values: Type.Optional(
                Type.Array(Type.String({ minLength: 1, maxLength: 256 }), {
                  description: "allowed values (for string and list traits)",
                }),
              ),
              retired: Type.Optional(
                Type.Array(Type.String({ minLength: 1, maxLength: 256 }), {
                  description: "values once allowed: accepted from readers and dropped",
                }),
              ),
            },
            { additionalProperties: false },
          ),
          {
            additionalProperties: false,
            description: "user traits readers may set with PATCH /v1/id/user-details; none declared means any",
          },
        ),
      ),
      catalog: Type.Optional(
        Type.Record(Type.String({ pattern: NAME_PATTERN }), CatalogItem, {
          additionalProperties: false,
        }),
      ),
      experiments: Type.Optional(
        Type.Record(
          Type.String({ pattern: NAME_PATTERN }),
          Type.Object(
            {
              description: Description,
              salt: Type.String({ minLength: 1, maxLength: 256 }),
              variants: Type.Record(
                Type.String({ pattern: NAME_PATTERN }),
                Type.Integer({ minimum: 1, maximum: 1_000_000 }),
                {
                  additionalProperties: false,
                  minProperties: 1,
                },
              ),
            },
            { additionalProperties: false },
          ),
          { additionalProperties: false },
        ),
      ),
      features: Type.Optional(
        Type.Record(Type.String({ pattern: NAME_PATTERN }), Feature, { additionalProperties: false }),
      ),
      newsletters: Type.Optional(
        Type.Array(
          Type.Object(
            {
              id: Type.Optional(
                Type.String({
                  pattern: UUID_PATTERN,
                  description: "Assigned at the first deploy (uuid v7) and kept for the slug; may be left out.",
                }),
              ),
              slug: Type.String({ pattern: SLUG_PATTERN, maxLength: 128 }),
              label: Type.String({ minLength: 1, maxLength: 200 }),
              description: Type.Optional(Type.Union([Type.String({ maxLength: 2000 }), Type.Null()])),
              doubleOptIn: Type.Optional(
                Type.Boolean({ default: true, description: "A subscription stays pending until confirmed by mail." }),
              ),
            },
            { additionalProperties: false },
          ),
        ),
      ),
      pipelines: Type.Optional(
        Type.Record(
          Type.String({ pattern: NAME_PATTERN }),
          Type.Object(
            {
              description: Description,
              source: Type.Literal("organization", {
                description: "Who writes the rows: the organization, through POST /v1/streaming/{pipeline}.",
              }),
              columns: Type.Record(
                Type.String({ pattern: COLUMN_PATTERN }),
                Type.Union([
                  Type.Literal("number"),
                  Type.Literal("integer"),
                  Type.Literal("boolean"),
                  Type.Literal("string"),
                ]),
                { additionalProperties: false, maxProperties: 64, description: "Declared columns and their types." },
              ),
            },
            { additionalProperties: false },
          ),
          { additionalProperties: false },
        ),
      ),
    },
    { additionalProperties: false, title: "Site document" },
  );
}

export const SiteDocumentSchema = documentSchema(ConditionSchema);
export type SiteDocument = Static<typeof SiteDocumentSchema>;
export type FeatureDefinition = NonNullable<SiteDocument["features"]>[string];
export type PipelineDefinition = NonNullable<SiteDocument["pipelines"]>[string];
export type ColumnType = PipelineDefinition["columns"][string];
export type OutcomeDefinition = FeatureDefinition["outcomes"][string];
export type RuleDefinition = NonNullable<FeatureDefinition["rules"]>[number];

/**
 * The document with every `when` left opaque, and the condition forms with opaque children: the
 * validator walks conditions itself, because a union's error ("Expected union value" at the
 * rule) names no path inside it, and publishers need the exact operator that is wrong.
 */
export const ShallowDocumentSchema = documentSchema(Type.Unknown());
export const ShallowConditionForms = conditionForms(Type.Unknown());

export const ReferenceSchema = Type.Object(
  {
    $ref: Type.Object(
      {
        catalog: Type.String({ pattern: NAME_PATTERN }),
        select: Type.Array(Type.String({ minLength: 1 }), { minItems: 1, uniqueItems: true }),
      },
      { additionalProperties: false },
    ),
  },
  { additionalProperties: false },
);
export type ReferenceField = Static<typeof ReferenceSchema>;

/** A field value is a reference when it is an object with a `$ref` member. */
export function isReferenceField(value: unknown): value is ReferenceField {
  return typeof value === "object" && value !== null && !Array.isArray(value) && Object.hasOwn(value, "$ref");
}

/** Parses "30m", "12h", "7d", "2w", "45s" to milliseconds. */
export function parseDuration(text: string): number {
  const m = /^([1-9][0-9]{0,8})([smhdw])$/.exec(text);
  if (m === null) throw new Error(`invalid duration ${text}`);
  const unit = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000, w: 604_800_000 }[
    m[2] as "s" | "m" | "h" | "d" | "w"
  ];
  return Number(m[1]) * unit;
}

/** A rule's instant value as epoch ms, or NaN when it is not a date-time. */
export function instantOf(value: string | number): number {
  if (typeof value === "number") return Number.isFinite(value) ? value : Number.NaN;
  return ISO_INSTANT.test(value) ? Date.parse(value) : Number.NaN;
}

/**
 * A journey url: absolute http(s) with placeholders only after the host, or a path from the root.
 * Placeholders `{namespace.path}` are filled per request (see compile.ts).
 */
const URL_PLACEHOLDER = /\{([^{}]*)\}/g;
export function checkJourneyUrl(url: string): string | null {
  const firstBrace = url.search(/[{}]/);
  const literalPrefix = firstBrace === -1 ? url : url.slice(0, firstBrace);
  if (/^https?:\/\//i.test(url)) {
    if (firstBrace !== -1 && !/^https?:\/\/[^/?#{}\s]+[/?#]/i.test(literalPrefix)) {
      return "placeholders may only follow the host (https://host/...)";
    }
    try {
      new URL(url.replace(URL_PLACEHOLDER, "x"));
    } catch {
      return "not a valid URL";
    }
  } else if (!url.startsWith("/") || url.startsWith("//") || url.startsWith("/\\")) {
    return "must be an absolute http(s) URL or a path starting with a single /";
  }
  const factPath = new RegExp(FACT_PATH_PATTERN);
  let badPlaceholder = false;
  const stripped = url.replace(URL_PLACEHOLDER, (_m, inner: string) => {
    if (!factPath.test(inner)) badPlaceholder = true;
    return "";
  });
  if (badPlaceholder) return "a placeholder must name a fact path, e.g. {context.returnUrl}";
  if (/[{}]/.test(stripped)) return "unbalanced { or } (write a literal brace as %7B or %7D)";
  return null;
}

/** The fact paths read by a url's placeholders, with their positions split out. */
export function urlTemplateParts(url: string): { literals: string[]; facts: string[] } {
  const literals: string[] = [];
  const facts: string[] = [];
  let last = 0;
  for (const m of url.matchAll(URL_PLACEHOLDER)) {
    literals.push(url.slice(last, m.index));
    facts.push(m[1] as string);
    last = (m.index as number) + m[0].length;
  }
  literals.push(url.slice(last));
  return { literals, facts };
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * The site document's JSON Schema (draft 2020-12) for editors: `"$schema": "<file>"` in a document,
 * or `bun run svc schema > site.schema.json`. The recursive condition lives in `$defs.condition`.
 */
export function siteDocumentJsonSchema(): object {
  const plain = JSON.parse(JSON.stringify(SiteDocumentSchema)) as Record<string, unknown>;
  let condition: unknown;
  const walk = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(walk);
    if (!isPlainObject(node)) return node;
    if (node.$id === "Condition") {
      const { $id: _id, ...rest } = node;
      condition = walk(rest);
      return { $ref: "#/$defs/condition" };
    }
    if (node.$ref === "Condition") return { $ref: "#/$defs/condition" };
    const copy: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(node))
      copy[k] = k === "properties" || k === "patternProperties" ? mapValues(v) : walk(v);
    return copy;
  };
  const mapValues = (v: unknown): unknown => {
    if (!isPlainObject(v)) return v;
    const copy: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) copy[k] = walk(x);
    return copy;
  };
  const body = walk(plain) as Record<string, unknown>;
  return {
    $schema: "https://json-schema.org/draft/2020-12/schema",
    $id: "urn:svc:schema:site-document:1",
    ...body,
    title: "Site document (schemaVersion 1)",
    description:
      "A site's identity settings, origins, content keys, gift-link policy, meters, catalog, experiments, features, newsletter lists and streaming pipelines. See docs/site-document.md.",
    $defs: { condition },
  };
}
