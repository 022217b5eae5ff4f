/**
 * Batch evaluation: every named feature against one frozen snapshot, then the effects merged.
 * Each feature is a pure function of (compiled feature, snapshot), and the merge keeps a meter
 * once and an experiment once, so the same names in any order give the same decisions, the same
 * set of ticks and the same set of exposures. Nothing here applies an effect.
 */
import type { CompiledSite } from "./compile";
import type { BatchResult, Exposure, FactSnapshot, FeatureDecision } from "./types";

const NO_TICKS: readonly string[] = Object.freeze([]);
const NO_EXPOSURES: readonly Exposure[] = Object.freeze([]);

/**
 * Evaluates the named features of a site. A name that is unknown, disabled, unpublished or not
 * running on the site is reported once in `unanswered`; a name given twice is evaluated once.
 * Journey features evaluate like decision features (they never tick). Ticks and exposures are in
 * first-seen order of `names`; as sets they do not depend on that order.
 */
export function evaluateBatch(site: CompiledSite, names: readonly string[], snapshot: FactSnapshot): BatchResult {
  const decisions: Record<string, FeatureDecision> = {};
  const unanswered: string[] = [];
  let ticks: string[] | undefined;
  let exposures: Exposure[] | undefined;
  const features = site.features;
  for (let i = 0; i < names.length; i++) {
    const name = names[i] as string;
    const feature = features.get(name);
    if (feature === undefined || !feature.answerable) {
      if (!unanswered.includes(name)) unanswered.push(name);
      continue;
    }
    // Feature names match ^[A-Za-z]..., so a name can never be "__proto__" here.
    if (Object.hasOwn(decisions, name)) continue;
    const r = feature.evaluate(snapshot);
    decisions[name] = r.decision;
    for (const meter of r.ticks) {
      if (ticks === undefined) ticks = [meter];
      else if (!ticks.includes(meter)) ticks.push(meter);
    }
    const exposure = r.exposure;
    if (exposure !== undefined) {
      if (exposures === undefined) exposures = [exposure];
      else if (!exposures.some((e) => e.experiment === exposure.experiment)) exposures.push(exposure);
    }
  }
  return { decisions, unanswered, ticks: ticks ?? NO_TICKS, exposures: exposures ?? NO_EXPOSURES };
}
