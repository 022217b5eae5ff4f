import type { CompiledSite } from "../core/compile";
import { evaluateBatch } from "../core/evaluate";
import type { BatchResult, FactSnapshot, FeatureDecision, MeterRead } from "../core/types";
import type { SiteState } from "../sites/registry";
import type { ImpactSample } from "./samples";

/** How the answers to one feature would move from the live document to the staged one. */
export interface FeatureImpact {
  readonly name: string;
  /** Samples naming the feature that either document answers. */
  readonly answered: number;
  /** Of those, the samples whose answer would differ. */
  readonly changed: number;
  /** Each change from a live answer to a staged one, most frequent first. */
  readonly transitions: readonly { readonly from: string; readonly to: string; readonly count: number }[];
}

export interface ImpactReport {
  readonly samples: number;
  readonly liveVersion: number | null;
  readonly stagedVersion: number | null;
  /** Most changed first, then by name. */
  readonly features: readonly FeatureImpact[];
}

/** A feature one document does not answer (unknown, disabled, unpublished, not running). */
const UNANSWERED = "(unanswered)";

/**
 * Replays stored samples (src/impact/samples.ts) against the site's live document and against a
 * staged one, and counts per feature the answers that would change, and from what to what. An
 * answer is compared by its outcome and type, and by its fields and destination; meter values
 * are not part of it (they change with every read).
 */
export function replayImpact(samples: readonly ImpactSample[], site: SiteState, staged: CompiledSite): ImpactReport {
  const live = site.live;
  const byName = new Map<string, { answered: number; changed: number; transitions: Map<string, number> }>();
  if (live !== null) {
    for (const sample of samples) {
      const before = decisionsOf(evaluateBatch(live, sample.features, snapshotOf(sample, live)));
      const after = decisionsOf(evaluateBatch(staged, sample.features, snapshotOf(sample, staged)));
      for (const name of new Set(sample.features)) {
        const from = before.get(name);
        const to = after.get(name);
        if (from === undefined && to === undefined) continue;
        let entry = byName.get(name);
        if (entry === undefined) {
          entry = { answered: 0, changed: 0, transitions: new Map() };
          byName.set(name, entry);
        }
        entry.answered++;
        const fromLabel = from === undefined ? UNANSWERED : labelOf(from);
        let toLabel = to === undefined ? UNANSWERED : labelOf(to);
        if (fromLabel === toLabel) {
          if (from === undefined || to === undefined || restOf(from) === restOf(to)) continue;
          toLabel = `${toLabel}, other fields`;
        }
        entry.changed++;
        const transition = JSON.stringify([fromLabel, toLabel]);
        entry.transitions.set(transition, (entry.transitions.get(transition) ?? 0) + 1);
      }
    }
  }
  const features = [...byName].map(
    ([name, e]): FeatureImpact => ({
      name,
      answered: e.answered,
      changed: e.changed,
      transitions: [...e.transitions]
        .map(([key, count]) => {
          const [from, to] = JSON.parse(key) as [string, string];
          return { from, to, count };
        })
        .sort((a, b) => b.count - a.count || a.from.localeCompare(b.from) || a.to.localeCompare(b.to)),
    }),
  );
  features.sort((a, b) => b.changed - a.changed || (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  return {
    samples: live === null ? 0 : samples.length,
    liveVersion: site.liveVersion,
    stagedVersion: site.previewVersion,
    features,
  };
}

function decisionsOf(result: BatchResult): Map<string, FeatureDecision> {
  const out = new Map<string, FeatureDecision>();
  for (let i = 0; i < result.answered.length; i++) {
    out.set(
      (result.answered[i] as { name: string }).name,
      (result.results[i] as { decision: FeatureDecision }).decision,
    );
  }
  return out;
}

/** A decision's short label: its outcome, and its verdict when it has one (`wallA (deny)`). */
function labelOf(d: FeatureDecision): string {
  return d.type === undefined ? d.outcome : `${d.outcome} (${d.type})`;
}

/** The rest of what a reader gets (fields, destination), key order aside. */
function restOf(d: FeatureDecision): string {
  return stableJson([d.fields ?? null, d.url ?? null, d.fallbackUrl ?? null]);
}

function stableJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${stableJson((value as Record<string, unknown>)[k])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

/**
 * The sample's facts as a snapshot for one document. A meter reads as the sample read it, with
 * the allowance this document gives it; a meter the sample holds no read of (a meter the staged
 * document adds) reads as a fresh, empty one for a known subject, and is unreadable without one,
 * as decide reads it.
 */
function snapshotOf(sample: ImpactSample, document: CompiledSite): FactSnapshot {
  return Object.freeze({
    now: sample.now,
    content: sample.content,
    articleId: sample.articleId,
    grants: sample.grants,
    user: sample.user,
    org: sample.org,
    context: sample.context,
    streaming: sample.streaming,
    external: sample.external,
    gift: sample.gift,
    newsletters: sample.newsletters,
    subject: sample.subject,
    meter: (name: string): MeterRead | undefined => {
      const meter = document.meters.get(name);
      if (meter === undefined || sample.subject === null) return undefined;
      const read = Object.hasOwn(sample.meters, name) ? sample.meters[name] : undefined;
      if (read === undefined) return { allowance: meter.allowance, count: 0, seen: false };
      return read.allowance === meter.allowance ? read : { ...read, allowance: meter.allowance };
    },
  });
}
