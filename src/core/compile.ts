/**
 * Compiles a validated site document once per deploy: conditions to closures, fact paths to
 * accessors, outcomes to frozen decisions (catalog references resolved), experiments to bucket
 * tables, meters to period-key functions, content keys to keyed HMAC states. Evaluation then
 * parses nothing and, on the common path, allocates nothing.
 */
import {
  type CompiledCondition,
  compileCondition,
  compileFactAccessor,
  ERROR,
  type EvalState,
  FALSE,
  type MeterValues,
  metersRead,
  readsNamespace,
} from "./conditions";
import { decisionJsonHead } from "./decision-json";
import {
  type FactNamespace,
  type FeatureDefinition,
  isReferenceField,
  type OutcomeDefinition,
  type RuleDefinition,
  type SiteDocument,
  urlTemplateParts,
} from "./document-schema";
import { deepFreeze } from "./freeze";
import { type CompiledExperiment, compileExperiment } from "./hash";
import { createPeriodKey } from "./period";
import type {
  CompiledFeature,
  CompiledMeter,
  ContentDescriptor,
  Exposure,
  FactSnapshot,
  FeatureDecision,
  FeatureResult,
  IdentityMode,
  OutcomeKey,
} from "./types";
import { createContentVerifier, type VerifiedContent } from "./verifier";

export interface CompiledSite {
  readonly document: SiteDocument;
  readonly identityMode: IdentityMode;
  readonly allowedOrigins: ReadonlySet<string>;
  readonly meters: ReadonlyMap<string, CompiledMeter>;
  readonly features: ReadonlyMap<string, CompiledFeature>;
  readonly experiments: ReadonlyMap<string, CompiledExperiment>;
  /**
   * Every way a feature can end, once each; a result's `slot` indexes it (decision counts). An
   * experiment's exposures are counted too, one key per variant with an empty feature and outcome.
   */
  readonly outcomeKeys: readonly OutcomeKey[];
  /** Each split arm's exposure -> the slot of its (experiment, variant) in `outcomeKeys`. */
  readonly exposureSlots: ReadonlyMap<Exposure, number>;
  /**
   * Features whose rules or url templates read `streaming.*`; null when none does, so decide
   * loads a user's streaming values only for a request naming one of them.
   */
  readonly streamingFeatures: ReadonlySet<string> | null;
  /** Features that read `newsletters.*`; null when none does (decide then reads no standing). */
  readonly newsletterFeatures: ReadonlySet<string> | null;
  /**
   * Verifies a content descriptor against the site's content keys. Null when absent, forged,
   * malformed, signed with an unknown `kid` or expired: `content.*` is then unavailable.
   */
  verifyContent(descriptor: ContentDescriptor | undefined, nowMs: number): VerifiedContent | null;
}

const EMPTY: readonly string[] = Object.freeze([]);

interface OutcomeRuntime {
  readonly id: string;
  /** Shared frozen decision; for a templated url it lacks `url`, which is resolved per request. */
  readonly base: FeatureDecision;
  /** Resolves a templated url; null when the url is literal (then it is already in `base`). */
  readonly resolveUrl: ((s: FactSnapshot) => string | undefined) | null;
  /** `base` as a decide answer writes it, up to the meters (`decisionJsonHead`). */
  readonly jsonHead: string;
}

/** A `{namespace.path}` url template: each placeholder URL-encoded; any missing value -> unresolved. */
function compileUrlTemplate(url: string): (s: FactSnapshot) => string | undefined {
  const { literals, facts } = urlTemplateParts(url);
  const getters = facts.map(compileFactAccessor);
  const n = getters.length;
  return (s) => {
    let out = literals[0] as string;
    for (let i = 0; i < n; i++) {
      const v = (getters[i] as (s: FactSnapshot) => unknown)(s);
      if (typeof v === "string") {
        if (v.length === 0) return undefined;
        out += encodeURIComponent(v);
      } else if (typeof v === "number" || typeof v === "boolean") out += encodeURIComponent(String(v));
      else return undefined;
      out += literals[i + 1] as string;
    }
    return out;
  };
}

function compileOutcome(id: string, o: OutcomeDefinition, catalog: SiteDocument["catalog"]): OutcomeRuntime {
  const base: {
    outcome: string;
    type?: string;
    fields?: Record<string, unknown>;
    url?: string;
    fallbackUrl?: string;
  } = { outcome: id };
  if (o.type !== undefined) base.type = o.type;
  if (o.fields !== undefined) {
    const fields: Record<string, unknown> = {};
    for (const [name, value] of Object.entries(o.fields)) {
      if (isReferenceField(value)) {
        const item = catalog?.[value.$ref.catalog] as Record<string, unknown>;
        const picked: Record<string, unknown> = {};
        for (const key of value.$ref.select) picked[key] = structuredClone(item[key]);
        fields[name] = picked;
      } else {
        fields[name] = structuredClone(value);
      }
    }
    base.fields = deepFreeze(fields);
  }
  const templated = o.url?.includes("{") ?? false;
  if (o.url !== undefined && !templated) base.url = o.url;
  if (o.fallbackUrl !== undefined) base.fallbackUrl = o.fallbackUrl;
  return {
    id,
    base: Object.freeze(base),
    resolveUrl: templated ? compileUrlTemplate(o.url as string) : null,
    jsonHead: decisionJsonHead(base),
  };
}

/** The decision for an outcome: the shared frozen one unless meters were read or the url is templated. */
function decisionOf(o: OutcomeRuntime, s: FactSnapshot, meters: MeterValues | undefined): FeatureDecision {
  if (meters === undefined && o.resolveUrl === null) return o.base;
  const b = o.base;
  const d: {
    outcome: string;
    type?: string;
    fields?: Readonly<Record<string, unknown>>;
    meters?: MeterValues;
    url?: string;
    fallbackUrl?: string;
  } = { outcome: b.outcome };
  if (b.type !== undefined) d.type = b.type;
  if (b.fields !== undefined) d.fields = b.fields;
  if (meters !== undefined) d.meters = meters;
  const url = o.resolveUrl === null ? b.url : o.resolveUrl(s);
  if (url !== undefined) d.url = url;
  if (b.fallbackUrl !== undefined) d.fallbackUrl = b.fallbackUrl;
  return d;
}

/**
 * Every feature result, prebuilt or built per request, with or without an exposure, is one of
 * these: one object shape, so the code reading results (evaluateBatch, the answer's JSON, the
 * decision counts) stays compiled for it. Four shapes of plain object (frozen and not, each with
 * and without `exposure`) made evaluateBatch's optimized code exit and be compiled again
 * (docs/performance.md, "Compiles in the measured windows"). Not frozen (a frozen object is
 * another shape): `readonly` keeps a shared result unwritten.
 */
class Result implements FeatureResult {
  readonly decision: FeatureDecision;
  readonly ticks: readonly string[];
  readonly exposure: Exposure | undefined;
  readonly json: string | undefined;
  readonly jsonHead: string | undefined;
  readonly slot: number;

  constructor(
    decision: FeatureDecision,
    ticks: readonly string[],
    exposure: Exposure | undefined,
    json: string | undefined,
    jsonHead: string | undefined,
    slot: number,
  ) {
    this.decision = decision;
    this.ticks = ticks;
    this.exposure = exposure;
    this.json = json;
    this.jsonHead = jsonHead;
    this.slot = slot;
  }
}

/** One way a rule can end: an outcome, its exposure if split, and the prebuilt result when shareable. */
interface Arm {
  readonly outcome: OutcomeRuntime;
  readonly exposure: Exposure | undefined;
  readonly prebuilt: FeatureResult | undefined;
  readonly slot: number;
}

/** Hands out one slot per (feature, outcome, experiment, variant), in first-seen order. */
type SlotOf = (outcome: OutcomeRuntime, exposure: Exposure | undefined) => number;

function outcomeSlots(keys: OutcomeKey[], exposures: Map<Exposure, number>, feature: string): SlotOf {
  const known = new Map<string, number>();
  return (outcome, exposure) => {
    if (exposure !== undefined) exposures.set(exposure, exposureSlot(keys, exposure));
    const experiment = exposure?.experiment ?? "";
    const variant = exposure?.variant ?? "";
    const id = `${outcome.id}\u0001${experiment}\u0001${variant}`;
    let slot = known.get(id);
    if (slot === undefined) {
      slot = keys.length;
      const offer = outcome.base.fields?.checkoutOffer;
      keys.push(
        Object.freeze({
          feature,
          outcome: outcome.id,
          type: outcome.base.type ?? null,
          offer: typeof offer === "string" ? offer : null,
          experiment,
          variant,
        }),
      );
      known.set(id, slot);
    }
    return slot;
  };
}

interface RuleRuntime {
  readonly when: CompiledCondition | null;
  readonly ticks: readonly string[];
  /** Ticking needs a subject; ticking a seen meter also needs the article id. */
  readonly ticksSeen: boolean;
  readonly thenArm: Arm | null;
  readonly split: { readonly experiment: CompiledExperiment; readonly arms: ReadonlyMap<string, Arm> } | null;
}

/** The slot counting an experiment variant's exposures (feature and outcome empty). */
function exposureSlot(keys: OutcomeKey[], e: Exposure): number {
  for (let i = 0; i < keys.length; i++) {
    const k = keys[i] as OutcomeKey;
    if (k.feature === "" && k.experiment === e.experiment && k.variant === e.variant) return i;
  }
  keys.push(
    Object.freeze({ feature: "", outcome: "", type: null, offer: null, experiment: e.experiment, variant: e.variant }),
  );
  return keys.length - 1;
}

function makeArm(
  slotOf: SlotOf,
  outcome: OutcomeRuntime,
  ticks: readonly string[],
  exposure: Exposure | undefined,
): Arm {
  const slot = slotOf(outcome, exposure);
  const prebuilt =
    outcome.resolveUrl === null
      ? new Result(outcome.base, ticks, exposure, `${outcome.jsonHead}}`, undefined, slot)
      : undefined;
  return { outcome, exposure, prebuilt, slot };
}

function result(arm: Arm, ticks: readonly string[], s: FactSnapshot, meters: MeterValues | undefined): FeatureResult {
  if (meters === undefined && arm.prebuilt !== undefined) return arm.prebuilt;
  return new Result(decisionOf(arm.outcome, s, meters), ticks, arm.exposure, undefined, arm.outcome.jsonHead, arm.slot);
}

/** Shared by features that read no meter: their conditions never write to it. */
const NO_METER_STATE: EvalState = Object.freeze({ meters: undefined }) as EvalState;

function compileFeature(
  name: string,
  def: FeatureDefinition,
  doc: SiteDocument,
  experiments: ReadonlyMap<string, CompiledExperiment>,
  keys: OutcomeKey[],
  exposureSlots: Map<Exposure, number>,
): CompiledFeature {
  const slotOf = outcomeSlots(keys, exposureSlots, name);
  const outcomes = new Map<string, OutcomeRuntime>();
  for (const [id, o] of Object.entries(def.outcomes)) outcomes.set(id, compileOutcome(id, o, doc.catalog));
  const outcome = (id: string): OutcomeRuntime => {
    const o = outcomes.get(id);
    if (o === undefined) throw new Error(`feature ${name}: unknown outcome ${id}`);
    return o;
  };
  const meterKind = (m: string) => {
    const meter = doc.meters?.[m];
    if (meter === undefined) throw new Error(`feature ${name}: unknown meter ${m}`);
    return meter.kind;
  };

  const reads: string[] = [];
  const allMeters: string[] = [];
  const rules: RuleRuntime[] = (def.rules ?? []).map((r: RuleDefinition) => {
    const ruleReads = r.when === undefined ? [] : metersRead(r.when);
    const ticks: readonly string[] = r.tick === undefined ? EMPTY : Object.freeze([...new Set(r.tick)]);
    for (const m of ruleReads) if (!reads.includes(m)) reads.push(m);
    for (const m of [...ruleReads, ...ticks]) if (!allMeters.includes(m)) allMeters.push(m);
    let split: RuleRuntime["split"] = null;
    if (r.split !== undefined) {
      const experiment = experiments.get(r.split.experiment);
      if (experiment === undefined) throw new Error(`feature ${name}: unknown experiment ${r.split.experiment}`);
      const arms = new Map<string, Arm>();
      for (const variant of experiment.variants) {
        const id = r.split.outcomes[variant];
        if (id === undefined) throw new Error(`feature ${name}: variant ${variant} has no outcome`);
        arms.set(variant, makeArm(slotOf, outcome(id), ticks, Object.freeze({ experiment: experiment.name, variant })));
      }
      split = { experiment, arms };
    }
    return {
      when: r.when === undefined ? null : compileCondition(r.when, { meterKind }),
      ticks,
      ticksSeen: ticks.some((m) => meterKind(m) === "seen"),
      thenArm: r.then === undefined ? null : makeArm(slotOf, outcome(r.then), ticks, undefined),
      split,
    };
  });

  const defaultArm = makeArm(slotOf, outcome(def.default), EMPTY, undefined);
  const errorArm = makeArm(slotOf, outcome(def.onError), EMPTY, undefined);
  const readsMeters = reads.length > 0;
  const ruleCount = rules.length;

  const evaluate = (s: FactSnapshot): FeatureResult => {
    const state: EvalState = readsMeters ? { meters: undefined } : NO_METER_STATE;
    for (let i = 0; i < ruleCount; i++) {
      const rule = rules[i] as RuleRuntime;
      if (rule.when !== null) {
        const truth = rule.when(s, state);
        if (truth === FALSE) continue;
        if (truth === ERROR) return result(errorArm, EMPTY, s, state.meters);
      }
      if (rule.ticks.length > 0 && (s.subject === null || (rule.ticksSeen && s.articleId === null))) {
        return result(errorArm, EMPTY, s, state.meters);
      }
      if (rule.split !== null) {
        if (s.subject === null) return result(errorArm, EMPTY, s, state.meters);
        const arm = rule.split.arms.get(rule.split.experiment.assign(s.subject)) as Arm;
        return result(arm, rule.ticks, s, state.meters);
      }
      return result(rule.thenArm as Arm, rule.ticks, s, state.meters);
    }
    return result(defaultArm, EMPTY, s, state.meters);
  };

  const enabled = def.enabled ?? true;
  const published = def.published ?? true;
  const running = def.running ?? true;
  return Object.freeze({
    name,
    jsonKey: `${JSON.stringify(name)}:`,
    purpose: def.purpose,
    answerable: enabled && published && running,
    published,
    meters: Object.freeze(allMeters),
    evaluate,
  });
}

/** Whether a feature's rules or outcome urls read a fact of the namespace. */
function featureReadsNamespace(def: FeatureDefinition, ns: FactNamespace): boolean {
  if ((def.rules ?? []).some((r) => r.when !== undefined && readsNamespace(r.when, ns))) return true;
  return Object.values(def.outcomes).some(
    (o) => o.url !== undefined && urlTemplateParts(o.url).facts.some((f) => f.startsWith(`${ns}.`)),
  );
}

/**
 * Compiles a validated site document (see validateSiteDocument). Throws only on a document that
 * did not pass validation.
 */
export function compileSite(document: SiteDocument): CompiledSite {
  const meters = new Map<string, CompiledMeter>();
  for (const [name, m] of Object.entries(document.meters ?? {})) {
    meters.set(
      name,
      Object.freeze({ name, kind: m.kind, allowance: m.allowance, periodKey: createPeriodKey(m.period, m.timeZone) }),
    );
  }
  const experiments = new Map<string, CompiledExperiment>();
  for (const [name, e] of Object.entries(document.experiments ?? {})) {
    experiments.set(name, compileExperiment(name, e.salt, e.variants));
  }
  const features = new Map<string, CompiledFeature>();
  const outcomeKeys: OutcomeKey[] = [];
  const exposureSlots = new Map<Exposure, number>();
  for (const [name, f] of Object.entries(document.features ?? {})) {
    features.set(name, compileFeature(name, f, document, experiments, outcomeKeys, exposureSlots));
  }
  // A stored document names its keys by id; the registry puts the secrets back before compiling.
  const verifier = createContentVerifier(
    (document.contentKeys ?? []).flatMap((k) => (k.secret === undefined ? [] : [{ id: k.id, secret: k.secret }])),
  );
  const streamingFeatures = new Set<string>();
  for (const [name, f] of Object.entries(document.features ?? {})) {
    if (featureReadsNamespace(f, "streaming")) streamingFeatures.add(name);
  }
  const newsletterFeatures = new Set<string>();
  for (const [name, f] of Object.entries(document.features ?? {})) {
    if (featureReadsNamespace(f, "newsletters")) newsletterFeatures.add(name);
  }
  return Object.freeze({
    document,
    identityMode: document.identity.mode,
    allowedOrigins: new Set(document.allowedOrigins ?? []),
    meters,
    features,
    experiments,
    outcomeKeys: Object.freeze(outcomeKeys),
    exposureSlots,
    streamingFeatures: streamingFeatures.size > 0 ? streamingFeatures : null,
    newsletterFeatures: newsletterFeatures.size > 0 ? newsletterFeatures : null,
    verifyContent: (descriptor: ContentDescriptor | undefined, nowMs: number): VerifiedContent | null =>
      verifier(descriptor, nowMs),
  });
}
