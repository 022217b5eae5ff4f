/**
 * Site document validation: the schema first (every error with its JSON pointer), then the
 * references and rules between the document's parts. The schema itself is in document-schema.ts;
 * this module re-exports it so callers import one place. Reference: docs/site-document.md.
 */
import type { TSchema } from "@sinclair/typebox";
import { type ValueError, ValueErrorType } from "@sinclair/typebox/errors";
import { Value } from "@sinclair/typebox/value";
import {
  type Condition,
  checkJourneyUrl,
  FACT_OPERATORS,
  type FactNamespace,
  FactTest,
  type FeatureDefinition,
  instantOf,
  isReferenceField,
  MeterTest,
  REMAINING_OPERATORS,
  RESERVED_COLUMNS,
  ReferenceSchema,
  ShallowConditionForms,
  ShallowDocumentSchema,
  type SiteDocument,
  urlTemplateParts,
} from "./document-schema";
import { isValidTimeZone } from "./period";

export * from "./document-schema";

export interface DocumentError {
  readonly path: string;
  readonly message: string;
}

const MAX_ERRORS = 100;

/** JSON pointer (RFC 6901) of a path of keys. */
function jsonPointer(...segments: (string | number)[]): string {
  let out = "";
  for (const s of segments) out += `/${String(s).replaceAll("~", "~0").replaceAll("/", "~1")}`;
  return out;
}

function describe(error: ValueError): string {
  const schema = error.schema as { anyOf?: { const?: unknown }[]; const?: unknown };
  if (error.type === ValueErrorType.Union && Array.isArray(schema.anyOf) && schema.anyOf.every((s) => "const" in s)) {
    return `must be one of ${schema.anyOf.map((s) => JSON.stringify(s.const)).join(", ")}`;
  }
  if (error.type === ValueErrorType.Literal) return `must be ${JSON.stringify(schema.const)}`;
  if (error.type === ValueErrorType.ObjectAdditionalProperties) return "unknown member";
  if (error.type === ValueErrorType.StringPattern && typeof error.value === "string") {
    return `${JSON.stringify(error.value)} does not match ${(error.schema as unknown as { pattern: string }).pattern}`;
  }
  return error.message;
}

class Collector {
  readonly errors: DocumentError[] = [];
  add(path: string, message: string): void {
    if (this.errors.length < MAX_ERRORS) this.errors.push({ path, message });
  }
  schema(schema: TSchema, value: unknown, base: string, skip?: (e: ValueError) => boolean): void {
    for (const e of Value.Errors(schema, value)) {
      if (skip?.(e)) continue;
      this.add(base + e.path, describe(e));
      if (this.errors.length >= MAX_ERRORS) return;
    }
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

const COMBINATOR_KEYS = ["all", "any", "not", "atLeast", "fact", "meter"] as const;

function conditionKind(value: Record<string, unknown>): (typeof COMBINATOR_KEYS)[number] | string[] {
  const found: (typeof COMBINATOR_KEYS)[number][] = [];
  for (const k of COMBINATOR_KEYS) if (Object.hasOwn(value, k)) found.push(k);
  if (found.length === 0 && Object.hasOwn(value, "of")) return "atLeast";
  return found.length === 1 ? (found[0] as (typeof COMBINATOR_KEYS)[number]) : found;
}

/** Shape of one condition and, recursively, of its children. */
function checkConditionShape(value: unknown, path: string, out: Collector): void {
  if (!isObject(value)) {
    out.add(path, "a condition must be an object");
    return;
  }
  const kind = conditionKind(value);
  if (Array.isArray(kind)) {
    out.add(
      path,
      kind.length === 0
        ? "a condition needs one of all, any, not, atLeast/of, fact or meter"
        : `a condition has exactly one form; found ${kind.join(", ")}`,
    );
    return;
  }
  const countSkip = (e: ValueError) =>
    e.type === ValueErrorType.ObjectMinProperties || e.type === ValueErrorType.ObjectMaxProperties;
  switch (kind) {
    case "all":
    case "any": {
      out.schema(ShallowConditionForms[kind], value, path);
      const list = value[kind];
      if (Array.isArray(list)) for (const [i, c] of list.entries()) checkConditionShape(c, `${path}/${kind}/${i}`, out);
      return;
    }
    case "not":
      out.schema(ShallowConditionForms.not, value, path);
      if (Object.hasOwn(value, "not")) checkConditionShape(value.not, `${path}/not`, out);
      return;
    case "atLeast": {
      out.schema(ShallowConditionForms.atLeast, value, path);
      const list = value.of;
      if (Array.isArray(list)) for (const [i, c] of list.entries()) checkConditionShape(c, `${path}/of/${i}`, out);
      return;
    }
    case "fact": {
      const ops = Object.keys(value).filter((k) => k !== "fact");
      const unknown = ops.filter((k) => !(FACT_OPERATORS as readonly string[]).includes(k));
      for (const k of unknown)
        out.add(`${path}/${k}`, `unknown operator "${k}" (operators: ${FACT_OPERATORS.join(", ")})`);
      if (ops.length - unknown.length !== 1 && unknown.length === 0) {
        out.add(path, `a fact test needs exactly one operator (${FACT_OPERATORS.join(", ")}); found ${ops.length}`);
      }
      out.schema(FactTest, value, path, (e) => countSkip(e) || e.type === ValueErrorType.ObjectAdditionalProperties);
      return;
    }
    case "meter": {
      const tests = Object.keys(value).filter((k) => k !== "meter");
      if (tests.length !== 1) out.add(path, "a meter test needs exactly one of remaining or allows");
      out.schema(MeterTest, value, path, countSkip);
      const remaining = value.remaining;
      if (isObject(remaining) && Object.keys(remaining).length !== 1) {
        out.add(`${path}/remaining`, `remaining needs exactly one of ${REMAINING_OPERATORS.join(", ")}`);
      }
      return;
    }
  }
}

function isOrigin(value: string): boolean {
  try {
    const u = new URL(value);
    return (u.protocol === "https:" || u.protocol === "http:") && u.origin === value;
  } catch {
    return false;
  }
}

interface SemanticContext {
  readonly doc: SiteDocument;
  readonly out: Collector;
}

/** The facts a valid gift link puts in the snapshot (src/gifts). */
const GIFT_FACTS: ReadonlySet<string> = new Set(["valid", "contentId", "gifter"]);

function checkConditionSemantics(c: Condition, path: string, ctx: SemanticContext): void {
  const { doc, out } = ctx;
  if ("all" in c) for (const [i, x] of c.all.entries()) checkConditionSemantics(x, `${path}/all/${i}`, ctx);
  else if ("any" in c) for (const [i, x] of c.any.entries()) checkConditionSemantics(x, `${path}/any/${i}`, ctx);
  else if ("not" in c) checkConditionSemantics(c.not, `${path}/not`, ctx);
  else if ("atLeast" in c) {
    if (c.atLeast > c.of.length)
      out.add(`${path}/atLeast`, `atLeast ${c.atLeast} exceeds the ${c.of.length} conditions in of`);
    for (const [i, x] of c.of.entries()) checkConditionSemantics(x, `${path}/of/${i}`, ctx);
  } else if ("meter" in c) {
    if (!doc.meters || !Object.hasOwn(doc.meters, c.meter)) out.add(`${path}/meter`, `unknown meter "${c.meter}"`);
  } else {
    const segments = c.fact.split(".");
    const ns = segments[0] as FactNamespace;
    if (ns === "grants" && segments.length !== 2) out.add(`${path}/fact`, "a grant fact is grants.<name>");
    if (ns === "external" && doc.identity.mode !== "external_only") {
      out.add(
        `${path}/fact`,
        `external.* facts exist only in identity mode external_only (this site is ${doc.identity.mode})`,
      );
    }
    if (ns === "gift" && (segments.length !== 2 || !GIFT_FACTS.has(segments[1] as string))) {
      out.add(`${path}/fact`, "a gift fact is gift.valid, gift.contentId or gift.gifter");
    }
    if (ns === "newsletters") {
      if (segments.length !== 2) out.add(`${path}/fact`, "a newsletter fact is newsletters.<slug>");
      else if (!(doc.newsletters ?? []).some((n) => n.slug === segments[1])) {
        out.add(`${path}/fact`, `unknown newsletter list "${segments[1]}"`);
      }
    }
    if (ns === "streaming") {
      const [, pipeline, column] = segments;
      if (segments.length !== 3) out.add(`${path}/fact`, "a streaming fact is streaming.<pipeline>.<column>");
      else if (!doc.pipelines || !Object.hasOwn(doc.pipelines, pipeline as string)) {
        out.add(`${path}/fact`, `unknown pipeline "${pipeline}"`);
      } else if (
        column !== "window_end" &&
        !Object.hasOwn(doc.pipelines[pipeline as string]?.columns ?? {}, column as string)
      ) {
        out.add(`${path}/fact`, `pipeline "${pipeline}" declares no column "${column}"`);
      }
    }
    for (const op of ["before", "after"] as const) {
      const v = c[op];
      if (v !== undefined && Number.isNaN(instantOf(v)))
        out.add(`${path}/${op}`, "not an ISO 8601 date-time or epoch milliseconds");
    }
  }
}

function checkOutcomeRef(feature: FeatureDefinition, id: string, path: string, what: string, out: Collector): void {
  if (Object.hasOwn(feature.outcomes, id)) return;
  out.add(path, `${what} names unknown outcome "${id}" (outcomes: ${Object.keys(feature.outcomes).join(", ")})`);
}

function checkSemantics(doc: SiteDocument, out: Collector): void {
  const ctx: SemanticContext = { doc, out };

  if (doc.identity.mode === "dual" && !doc.identity.upstream?.signOutUrl) {
    out.add("/identity/upstream", "identity mode dual needs upstream.signOutUrl (the upstream sign-out page)");
  }
  const signOutUrl = doc.identity.upstream?.signOutUrl;
  if (signOutUrl !== undefined && !/^https?:\/\/[^/?#\s]+/i.test(signOutUrl)) {
    out.add("/identity/upstream/signOutUrl", "must be an absolute http(s) URL");
  }

  (doc.allowedOrigins ?? []).forEach((origin, i) => {
    if (!isOrigin(origin))
      out.add(`/allowedOrigins/${i}`, `"${origin}" is not an origin (scheme://host[:port], no path or trailing slash)`);
  });

  const keyIds = new Set<string>();
  (doc.contentKeys ?? []).forEach((k, i) => {
    if (keyIds.has(k.id)) out.add(`/contentKeys/${i}/id`, `duplicate content key id "${k.id}"`);
    keyIds.add(k.id);
  });

  for (const [name, meter] of Object.entries(doc.meters ?? {})) {
    if (!isValidTimeZone(meter.timeZone)) {
      out.add(`${jsonPointer("meters", name)}/timeZone`, `"${meter.timeZone}" is not an IANA time zone name`);
    }
  }

  for (const [name, pipeline] of Object.entries(doc.pipelines ?? {})) {
    for (const column of Object.keys(pipeline.columns)) {
      if (RESERVED_COLUMNS.has(column))
        out.add(`${jsonPointer("pipelines", name, "columns", column)}`, `"${column}" is reserved`);
    }
  }

  for (const [name, item] of Object.entries(doc.catalog ?? {})) {
    const offer = item.checkout;
    if (offer === undefined) continue;
    const cp = `${jsonPointer("catalog", name)}/checkout`;
    if (offer.mode === "payment" && offer.duration === undefined)
      out.add(`${cp}/duration`, "a payment offer needs a duration (how long its grant lasts)");
    if (offer.mode === "subscription" && offer.duration !== undefined)
      out.add(`${cp}/duration`, "a subscription's grant lasts until it is cancelled: no duration");
  }

  const slugs = new Set<string>();
  const listIds = new Set<string>();
  (doc.newsletters ?? []).forEach((n, i) => {
    if (slugs.has(n.slug)) out.add(`/newsletters/${i}/slug`, `duplicate newsletter slug "${n.slug}"`);
    slugs.add(n.slug);
    if (n.id !== undefined) {
      const id = n.id.toLowerCase();
      if (listIds.has(id)) out.add(`/newsletters/${i}/id`, `duplicate newsletter id "${n.id}"`);
      listIds.add(id);
    }
  });

  for (const [featureName, feature] of Object.entries(doc.features ?? {})) {
    const fp = jsonPointer("features", featureName);
    checkOutcomeRef(feature, feature.default, `${fp}/default`, "default", out);
    checkOutcomeRef(feature, feature.onError, `${fp}/onError`, "onError", out);

    for (const [outcomeId, outcome] of Object.entries(feature.outcomes)) {
      const op = `${fp}/outcomes/${outcomeId}`;
      if (feature.purpose === "journey") {
        if (outcome.url === undefined) out.add(`${op}/url`, "a journey outcome needs a url");
        for (const member of ["url", "fallbackUrl"] as const) {
          const u = outcome[member];
          if (u === undefined) continue;
          const problem = checkJourneyUrl(u);
          if (problem !== null) out.add(`${op}/${member}`, problem);
          else if (member === "fallbackUrl" && u.includes("{"))
            out.add(`${op}/fallbackUrl`, "fallbackUrl takes no placeholders");
        }
        for (const fact of outcome.url === undefined ? [] : urlTemplateParts(outcome.url).facts) {
          if (fact.startsWith("external.") && doc.identity.mode !== "external_only") {
            out.add(`${op}/url`, `external.* facts exist only in identity mode external_only`);
          }
        }
      } else {
        if (outcome.url !== undefined) out.add(`${op}/url`, "only journey features' outcomes carry a url");
        if (outcome.fallbackUrl !== undefined)
          out.add(`${op}/fallbackUrl`, "only journey features' outcomes carry a fallbackUrl");
      }
      for (const [fieldName, value] of Object.entries(outcome.fields ?? {})) {
        if (!isReferenceField(value)) continue;
        const rp = `${op}/fields/${fieldName}`;
        const before = out.errors.length;
        out.schema(ReferenceSchema, value, rp);
        if (out.errors.length > before) continue;
        const item = doc.catalog?.[value.$ref.catalog];
        if (item === undefined || !Object.hasOwn(doc.catalog ?? {}, value.$ref.catalog)) {
          out.add(`${rp}/$ref/catalog`, `unknown catalog item "${value.$ref.catalog}"`);
          continue;
        }
        value.$ref.select.forEach((key, i) => {
          if (!Object.hasOwn(item, key))
            out.add(`${rp}/$ref/select/${i}`, `catalog item "${value.$ref.catalog}" has no key "${key}"`);
        });
      }
    }

    (feature.rules ?? []).forEach((rule, i) => {
      const rp = `${fp}/rules/${i}`;
      const hasThen = rule.then !== undefined;
      const hasSplit = rule.split !== undefined;
      if (hasThen === hasSplit) out.add(rp, "a rule needs exactly one of then or split");
      if (rule.then !== undefined) checkOutcomeRef(feature, rule.then, `${rp}/then`, "then", out);
      if (rule.split !== undefined) {
        const sp = `${rp}/split`;
        const experiment = doc.experiments?.[rule.split.experiment];
        if (experiment === undefined || !Object.hasOwn(doc.experiments ?? {}, rule.split.experiment)) {
          out.add(`${sp}/experiment`, `unknown experiment "${rule.split.experiment}"`);
        } else {
          for (const variant of Object.keys(experiment.variants)) {
            if (!Object.hasOwn(rule.split.outcomes, variant)) {
              out.add(`${sp}/outcomes`, `variant "${variant}" of experiment "${rule.split.experiment}" has no outcome`);
            }
          }
          for (const variant of Object.keys(rule.split.outcomes)) {
            if (!Object.hasOwn(experiment.variants, variant)) {
              out.add(`${sp}/outcomes/${variant}`, `experiment "${rule.split.experiment}" has no variant "${variant}"`);
            }
          }
        }
        for (const [variant, outcomeId] of Object.entries(rule.split.outcomes)) {
          checkOutcomeRef(feature, outcomeId, `${sp}/outcomes/${variant}`, `variant "${variant}"`, out);
        }
      }
      if (rule.tick !== undefined) {
        if (feature.purpose === "journey") out.add(`${rp}/tick`, "a journey feature charges no meter");
        rule.tick.forEach((m, j) => {
          if (!doc.meters || !Object.hasOwn(doc.meters, m)) out.add(`${rp}/tick/${j}`, `unknown meter "${m}"`);
        });
      }
      if (rule.when !== undefined) checkConditionSemantics(rule.when, `${rp}/when`, ctx);
    });
  }
}

/**
 * Validates a site document: the schema first (every error with its JSON pointer), then, when the
 * shape is right, the references and rules between its parts. Returns the input itself on success.
 */
export function validateSiteDocument(
  input: unknown,
): { ok: true; document: SiteDocument } | { ok: false; errors: { path: string; message: string }[] } {
  const out = new Collector();
  out.schema(ShallowDocumentSchema, input, "");
  if (isObject(input) && isObject(input.features)) {
    for (const [name, feature] of Object.entries(input.features)) {
      if (!isObject(feature) || !Array.isArray(feature.rules)) continue;
      feature.rules.forEach((rule, i) => {
        if (isObject(rule) && Object.hasOwn(rule, "when")) {
          checkConditionShape(rule.when, `${jsonPointer("features", name, "rules", i)}/when`, out);
        }
      });
    }
  }
  if (out.errors.length > 0) return { ok: false, errors: out.errors };
  const document = input as SiteDocument;
  checkSemantics(document, out);
  if (out.errors.length > 0) return { ok: false, errors: out.errors };
  return { ok: true, document };
}
