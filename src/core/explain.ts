/**
 * Explain: why a feature resolved as it did, against the same frozen snapshot decide evaluated.
 * It walks the document's own rules (not the compiled closures) in the compiled evaluation's
 * order and short-circuits, and tests each leaf with the compiled leaf itself, so a leaf means
 * here exactly what it means to decide. Pure: no I/O, no clock, no effects.
 */
import type { CompiledSite } from "./compile";
import {
  compileCondition,
  compileFactAccessor,
  ERROR,
  type EvalState,
  FALSE,
  TRUE,
  type Truth,
  UNAVAILABLE,
} from "./conditions";
import type { Condition, FactTestCondition, FeatureDefinition, MeterTestCondition } from "./document-schema";
import type { FactSnapshot, FeatureDecision } from "./types";

/** How far a fact can be trusted: a signed descriptor or gift link, the service's store, or the caller's word. */
export type FactSource = "signed" | "stored" | "unverified";

export interface FactRead {
  readonly fact: string;
  readonly source: FactSource;
  /** False when the fact's namespace is unavailable (e.g. content with no verified descriptor). */
  readonly available: boolean;
  /** The value read (absent when the path holds nothing or the namespace is unavailable). */
  readonly value?: unknown;
}

export interface MeterReading {
  readonly meter: string;
  /** False when the meter could not be read (no subject, or its value could not be loaded). */
  readonly available: boolean;
  readonly allowance?: number;
  readonly count?: number;
  readonly remaining?: number;
  /** Seen meters: this article is already counted this period. */
  readonly seen?: boolean;
}

export interface RuleTrace {
  readonly index: number;
  /** The rule's condition in the document's words; null for a rule without `when`. */
  readonly condition: Condition | null;
  readonly result: "matched" | "not matched" | "error";
  readonly facts: FactRead[];
  readonly meters: MeterReading[];
}

export interface FeatureExplanation {
  readonly outcome: string;
  readonly type?: string;
  /** The rule that decided: its index and condition, `default`, or `onError` with the reason. */
  readonly matched:
    | {
        readonly rule: number;
        readonly condition: Condition | null;
        readonly split?: { experiment: string; variant: string };
      }
    | { readonly rule: "default" }
    | { readonly rule: "onError"; readonly reason: string };
  /** The rules evaluated, in order, up to the one that decided. */
  readonly rules: RuleTrace[];
  /** For a deny: what would change it, in words (e.g. "grant `premium`"). */
  readonly wouldChange?: string[];
}

const SOURCES: Readonly<Record<string, FactSource>> = {
  content: "signed",
  gift: "signed",
  context: "unverified",
};

/** A leaf that did not hold, for "what would change it". */
interface Miss {
  readonly leaf: Condition;
  /** The leaf sits under an odd number of `not`s: it must turn false. */
  readonly negated: boolean;
  readonly value: unknown;
  readonly reading?: MeterReading;
}

interface Trace {
  facts: FactRead[];
  meters: MeterReading[];
  misses: Miss[];
}

/** Explains one answered feature (its definition, the snapshot, and what decide resolved). */
export function explainFeature(
  site: CompiledSite,
  name: string,
  snapshot: FactSnapshot,
  decision: FeatureDecision,
): FeatureExplanation {
  const def = site.document.features?.[name] as FeatureDefinition;
  const meterKind = (m: string) => site.meters.get(m)?.kind ?? "count";
  const rules: RuleTrace[] = [];
  const missed: Miss[][] = [];
  let matched: FeatureExplanation["matched"] = { rule: "default" };
  const list = def.rules ?? [];
  for (let i = 0; i < list.length; i++) {
    const rule = list[i] as NonNullable<FeatureDefinition["rules"]>[number];
    const trace: Trace = { facts: [], meters: [], misses: [] };
    const truth = rule.when === undefined ? TRUE : walk(rule.when, snapshot, meterKind, trace, false);
    const condition = rule.when ?? null;
    if (truth === FALSE) {
      rules.push({ index: i, condition, result: "not matched", facts: trace.facts, meters: trace.meters });
      if (!deniesOnly(def, rule)) missed.push(trace.misses);
      continue;
    }
    rules.push({
      index: i,
      condition,
      result: truth === ERROR ? "error" : "matched",
      facts: trace.facts,
      meters: trace.meters,
    });
    if (truth === ERROR) {
      matched = { rule: "onError", reason: unavailableReason(trace, i) };
      break;
    }
    const ticks = rule.tick ?? [];
    if (ticks.length > 0 && snapshot.subject === null) {
      matched = {
        rule: "onError",
        reason: `rule ${i} ticks a meter and the request names no subject (userId or deviceId)`,
      };
    } else if (ticks.some((m) => meterKind(m) === "seen") && snapshot.articleId === null) {
      matched = { rule: "onError", reason: `rule ${i} ticks a seen meter and the request has no verified content` };
    } else if (rule.split !== undefined) {
      const experiment = site.experiments.get(rule.split.experiment);
      if (snapshot.subject === null || experiment === undefined) {
        matched = { rule: "onError", reason: `rule ${i} splits by experiment and the request names no subject` };
      } else {
        const variant = experiment.assign(snapshot.subject);
        matched = { rule: i, condition, split: { experiment: experiment.name, variant } };
      }
    } else matched = { rule: i, condition };
    break;
  }
  const out: {
    outcome: string;
    type?: string;
    matched: FeatureExplanation["matched"];
    rules: RuleTrace[];
    wouldChange?: string[];
  } = { outcome: decision.outcome, matched, rules };
  if (decision.type !== undefined) out.type = decision.type;
  if (decision.type === "deny") out.wouldChange = wouldChange(matched, missed);
  return out;
}

/** Whether every outcome a rule can end in is a deny (then missing it changes nothing). */
function deniesOnly(def: FeatureDefinition, rule: NonNullable<FeatureDefinition["rules"]>[number]): boolean {
  const ids =
    rule.split !== undefined ? Object.values(rule.split.outcomes) : rule.then === undefined ? [] : [rule.then];
  return ids.every((id) => def.outcomes[id]?.type === "deny");
}

function unavailableReason(trace: Trace, index: number): string {
  const fact = trace.facts.find((f) => !f.available);
  if (fact !== undefined) {
    const ns = fact.fact.split(".")[0];
    return ns === "content"
      ? `rule ${index} reads ${fact.fact} and the request has no verified content descriptor`
      : `rule ${index} reads ${fact.fact}, which is unavailable on this request`;
  }
  const meter = trace.meters.find((m) => !m.available);
  return meter !== undefined
    ? `rule ${index} reads meter ${meter.meter}, which cannot be read (no subject, or the read failed)`
    : `rule ${index} read an unavailable fact`;
}

function wouldChange(matched: FeatureExplanation["matched"], missed: Miss[][]): string[] {
  const out: string[] = [];
  if (matched.rule === "onError") {
    if (matched.reason.includes("verified content")) out.push("a verified content descriptor (content)");
    if (matched.reason.includes("no subject")) out.push("a subject (userId or deviceId)");
  }
  for (const misses of missed) for (const miss of misses) out.push(hint(miss));
  return [...new Set(out)];
}

function hint(miss: Miss): string {
  const leaf = miss.leaf;
  if ("meter" in leaf) {
    const m = leaf as MeterTestCondition;
    const r = miss.reading;
    const left = r?.remaining === undefined ? "" : ` (${r.remaining} of ${r.allowance} left this period)`;
    if (m.allows !== undefined) {
      const wantsRead = m.allows !== miss.negated;
      return wantsRead
        ? `a read left of meter \`${m.meter}\`${left}: it renews when the meter's period rolls over`
        : `no reads left of meter \`${m.meter}\`${left}`;
    }
    const [op, n] = Object.entries(m.remaining ?? {})[0] as [string, number];
    return `${miss.negated ? "not " : ""}remaining ${op} ${n} on meter \`${m.meter}\`${left}`;
  }
  const f = leaf as FactTestCondition;
  const [op, operand] = Object.entries(f).find(([k]) => k !== "fact") as [string, unknown];
  if (f.fact.startsWith("grants.") && ((op === "exists" && operand === true) || (op === "eq" && operand === true))) {
    return miss.negated ? `no grant \`${f.fact.slice(7)}\`` : `grant \`${f.fact.slice(7)}\``;
  }
  if (f.fact.startsWith("grants.") && op === "exists" && operand === false) {
    return miss.negated ? `grant \`${f.fact.slice(7)}\`` : `no grant \`${f.fact.slice(7)}\``;
  }
  const now = miss.value === undefined ? "absent" : JSON.stringify(miss.value);
  return `${miss.negated ? "not " : ""}\`${f.fact}\` ${op} ${JSON.stringify(operand)} (now ${now})`;
}

/** Evaluates a condition as the compiled one does (same short-circuits), recording what it read. */
function walk(
  c: Condition,
  s: FactSnapshot,
  meterKind: (m: string) => "seen" | "count",
  trace: Trace,
  negated: boolean,
): Truth {
  if ("all" in c) {
    for (const part of c.all) {
      const r = walk(part, s, meterKind, trace, negated);
      if (r !== TRUE) return r;
    }
    return TRUE;
  }
  if ("any" in c) {
    for (const part of c.any) {
      const r = walk(part, s, meterKind, trace, negated);
      if (r !== FALSE) return r;
    }
    return FALSE;
  }
  if ("not" in c) {
    const r = walk(c.not, s, meterKind, trace, !negated);
    return r === ERROR ? ERROR : r === TRUE ? FALSE : TRUE;
  }
  if ("atLeast" in c) {
    let yes = 0;
    const n = c.of.length;
    for (let i = 0; i < n; i++) {
      const r = walk(c.of[i] as Condition, s, meterKind, trace, negated);
      if (r === ERROR) return ERROR;
      if (r === TRUE && ++yes >= c.atLeast) return TRUE;
      if (yes + (n - i - 1) < c.atLeast) return FALSE;
    }
    return FALSE;
  }
  const state: EvalState = { meters: undefined };
  const truth = compileCondition(c, { meterKind })(s, state);
  if ("meter" in c) {
    const read = s.meter(c.meter);
    const reading: MeterReading =
      read === undefined
        ? { meter: c.meter, available: false }
        : {
            meter: c.meter,
            available: true,
            allowance: read.allowance,
            count: read.count,
            remaining: read.allowance - read.count,
            ...(meterKind(c.meter) === "seen" ? { seen: read.seen } : {}),
          };
    if (!trace.meters.some((m) => m.meter === c.meter)) trace.meters.push(reading);
    if (truth !== ERROR && (truth === TRUE) === negated)
      trace.misses.push({ leaf: c, negated, value: undefined, reading });
    return truth;
  }
  const value = compileFactAccessor(c.fact)(s);
  const available = value !== UNAVAILABLE;
  const read: FactRead = {
    fact: c.fact,
    source: SOURCES[c.fact.split(".")[0] as string] ?? "stored",
    available,
    ...(available && value !== undefined ? { value } : {}),
  };
  if (!trace.facts.some((f) => f.fact === c.fact)) trace.facts.push(read);
  if (truth !== ERROR && (truth === TRUE) === negated) {
    trace.misses.push({ leaf: c, negated, value: available ? value : undefined });
  }
  return truth;
}
