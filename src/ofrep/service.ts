import type { CompiledSite } from "../core/compile";
import { explainFeature } from "../core/explain";
import type { BatchResult, CompiledFeature, FactSnapshot, FeatureResult } from "../core/types";
import type { DecisionEngine } from "../decide/engine";
import type { DecideInput } from "../decide/model";
import { tickingObserver } from "../decide/request";
import type { SiteState } from "../sites/registry";
import type { OfrepFailure, OfrepSuccess } from "./model";

/** Context members the service reads itself; every other member is decide's `context.*`. */
const RESERVED = new Set(["targetingKey", "userId", "deviceId", "content", "svc", "svc.features"]);

export interface FlagsAnswer {
  readonly flags: (OfrepSuccess | OfrepFailure)[];
  /** Whether the evaluation ticked a meter (then the answer carries no ETag). */
  readonly ticked: boolean;
}

/** A context that is not an object, or a member of the wrong type: OFREP's INVALID_CONTEXT. */
export class InvalidContext extends Error {
  override readonly name = "InvalidContext";
}

/** `evaluateFlags` with its engine chosen: the process' own, or the decide thread's. */
export type FlagEvaluator = (
  site: SiteState,
  document: CompiledSite,
  preview: boolean,
  names: string[],
  context: unknown,
  now: number,
) => FlagsAnswer | Promise<FlagsAnswer>;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === "object" && v !== null && !Array.isArray(v);

/**
 * An OpenFeature evaluation context as a decide body: `targetingKey` (or `userId`) is the user,
 * `deviceId` an anonymous device, `content` the signed descriptor; the rest is `context.*`.
 */
function decideInputOf(context: unknown, features: string[]): DecideInput {
  if (context === undefined || context === null) return { features };
  if (!isObject(context)) throw new InvalidContext("context must be an object");
  const rest: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(context)) if (!RESERVED.has(k)) rest[k] = v;
  const input: { -readonly [K in keyof DecideInput]: DecideInput[K] } = { features, context: rest };
  const user = context.userId ?? context.targetingKey;
  if (user !== undefined) {
    if (typeof user !== "string" || user.length < 1 || user.length > 128) {
      throw new InvalidContext("targetingKey must be a string of 1 to 128 characters");
    }
    input.userId = user;
  }
  if (context.deviceId !== undefined) {
    if (typeof context.deviceId !== "string" || context.deviceId.length < 1 || context.deviceId.length > 128) {
      throw new InvalidContext("deviceId must be a string of 1 to 128 characters");
    }
    input.deviceId = context.deviceId;
  }
  const content = context.content;
  if (content !== undefined) {
    if (!isObject(content) || typeof content.payload !== "string" || typeof content.signature !== "string") {
      throw new InvalidContext("content must be a signed descriptor { payload, signature }");
    }
    input.content = { payload: content.payload, signature: content.signature };
  }
  return input;
}

/**
 * The features a bulk request evaluates. Named in context `svc.features` (or `svc: { features }`),
 * a list or a comma-separated string: those. Not named (a stock OpenFeature SDK): the site's
 * client features (`clientFeatures`).
 */
export function bulkFeatures(document: CompiledSite, context: unknown): string[] {
  if (context !== undefined && context !== null && !isObject(context)) {
    throw new InvalidContext("context must be an object");
  }
  const named = isObject(context)
    ? (context["svc.features"] ?? (isObject(context.svc) ? context.svc.features : undefined))
    : undefined;
  if (named === undefined) return clientFeatures(document);
  const list = typeof named === "string" ? named.split(",").map((s) => s.trim()) : named;
  if (!Array.isArray(list) || list.length === 0 || list.length > 100) {
    throw new InvalidContext("svc.features names 1 to 100 features to evaluate");
  }
  for (const name of list) {
    if (typeof name !== "string" || name.length < 1 || name.length > 128) {
      throw new InvalidContext("svc.features must hold feature names");
    }
  }
  return [...new Set(list as string[])];
}

/**
 * What a bulk request that names no features evaluates: every published decision feature whose
 * rules tick no meter, by name. A ticking feature counts each time it is asked,
 * and a stock SDK asks for all flags at every start, context change and poll, so it is evaluated
 * only when named (in `svc.features`, or as a single flag).
 */
function clientFeatures(document: CompiledSite): string[] {
  const out: string[] = [];
  for (const feature of document.features.values()) {
    if (!feature.published || feature.purpose !== "decision") continue;
    const rules = document.document.features?.[feature.name]?.rules ?? [];
    if (rules.some((r) => r.tick !== undefined && r.tick.length > 0)) continue;
    out.push(feature.name);
  }
  return out.sort();
}

/** Whether a feature needs a subject: it reads or ticks a meter, or splits by experiment. */
function needsSubject(document: CompiledSite, feature: CompiledFeature): boolean {
  if (feature.meters.length > 0) return true;
  return (document.document.features?.[feature.name]?.rules ?? []).some((r) => r.split !== undefined);
}

/**
 * Evaluates flags through the decide pipeline: one snapshot, the batch's meter ticks applied
 * once (as decide does), and each answer as OFREP's: `variant` the outcome id, `value` its fields,
 * `reason` from the rule that decided. Unknown: FLAG_NOT_FOUND; not answerable on the site:
 * DISABLED with the default outcome (nothing evaluated, nothing ticked); a feature that needs a
 * subject without one: TARGETING_KEY_MISSING (and it is not evaluated).
 */
export function evaluateFlags(
  engine: DecisionEngine,
  site: SiteState,
  document: CompiledSite,
  preview: boolean,
  names: string[],
  context: unknown,
  now: number,
): FlagsAnswer | Promise<FlagsAnswer> {
  const input = decideInputOf(context, []);
  const hasSubject = input.userId !== undefined || input.deviceId !== undefined;
  const early = new Map<string, OfrepSuccess | OfrepFailure>();
  const evaluate: string[] = [];
  for (const key of names) {
    const feature = document.features.get(key);
    if (feature === undefined || !feature.published) {
      early.set(key, { key, errorCode: "FLAG_NOT_FOUND", errorDetails: `No feature ${key} on this site.` });
    } else if (!feature.answerable) {
      early.set(key, disabled(document, key));
    } else if (!hasSubject && needsSubject(document, feature)) {
      early.set(key, {
        key,
        errorCode: "TARGETING_KEY_MISSING",
        errorDetails: `${key} needs a subject: set targetingKey (a user id) or deviceId.`,
      });
    } else evaluate.push(key);
  }
  const answer = (flags: Map<string, OfrepSuccess>, ticked: boolean): FlagsAnswer => ({
    flags: names.map((key) => early.get(key) ?? (flags.get(key) as OfrepSuccess)),
    ticked,
  });
  if (evaluate.length === 0) return answer(new Map(), false);
  let flags = new Map<string, OfrepSuccess>();
  let ticked = false;
  const evaluated = engine.evaluate(
    { site, document, preview, input: { ...input, features: evaluate }, userId: input.userId ?? null, now },
    tickingObserver((snapshot, result, applyTicks) => {
      applyTicks();
      ticked = result.ticks.length > 0;
      flags = successes(document, snapshot, result, preview);
    }),
  );
  if (evaluated instanceof Promise) return evaluated.then(() => answer(flags, ticked));
  return answer(flags, ticked);
}

function successes(
  document: CompiledSite,
  snapshot: FactSnapshot,
  result: BatchResult,
  preview: boolean,
): Map<string, OfrepSuccess> {
  const out = new Map<string, OfrepSuccess>();
  for (let i = 0; i < result.answered.length; i++) {
    const feature = result.answered[i] as CompiledFeature;
    const r = result.results[i] as FeatureResult;
    const matched = explainFeature(document, feature.name, snapshot, r.decision).matched;
    const reason =
      matched.rule === "default"
        ? "DEFAULT"
        : matched.rule === "onError"
          ? "ERROR"
          : matched.split !== undefined
            ? "SPLIT"
            : matched.condition === null
              ? "STATIC"
              : "TARGETING_MATCH";
    const metadata: Record<string, string | number | boolean> = { preview };
    if (r.decision.type !== undefined) metadata.type = r.decision.type;
    if (r.exposure !== undefined) {
      metadata.experiment = r.exposure.experiment;
      metadata.experimentVariant = r.exposure.variant;
    }
    if (typeof matched.rule === "number") metadata.rule = matched.rule;
    out.set(feature.name, {
      key: feature.name,
      value: r.decision.fields ?? {},
      reason,
      variant: r.decision.outcome,
      metadata,
    });
  }
  return out;
}

/** A feature switched off on the site: its default outcome, not evaluated. */
function disabled(document: CompiledSite, key: string): OfrepSuccess {
  const def = document.document.features?.[key];
  const id = def?.default ?? "";
  const outcome = def?.outcomes[id];
  const metadata: Record<string, string | number | boolean> = {};
  if (outcome?.type !== undefined) metadata.type = outcome.type;
  return { key, value: plainFields(outcome?.fields), reason: "DISABLED", variant: id, metadata };
}

/** A disabled feature's default fields, catalog references left out (they resolve only when evaluated). */
function plainFields(fields: Record<string, unknown> | undefined): Record<string, unknown> {
  if (fields === undefined) return {};
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(fields)) if (!(typeof v === "object" && v !== null && "$ref" in v)) out[k] = v;
  return out;
}
