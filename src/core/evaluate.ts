/**
 * Batch evaluation: every named feature against one frozen snapshot, then the effects merged.
 * Each feature is a pure function of (compiled feature, snapshot), and the merge keeps a meter
 * once and an experiment once, so the same names in any order give the same decisions, the same
 * set of ticks and the same set of exposures. Nothing here applies an effect.
 */
import type { CompiledSite } from "./compile";
import type { BatchResult, CompiledFeature, Exposure, FactSnapshot, FeatureDecision, FeatureResult } from "./types";

/**
 * An empty array of the kind a batch builds (`[value]`, then pushes: JavaScriptCore's contiguous
 * array), shared by the batches that have no ticks or no exposures. Not frozen, and not an empty
 * literal: either is another kind of array to the JIT, and code compiled while it met only one
 * kind left its compiled form (an OSR exit) on meeting the other, minutes into a load, to be
 * compiled again (docs/performance.md, "Compiles in the measured windows"). Read-only by type;
 * nothing writes to it.
 */
export function sharedEmpty<T>(): readonly T[] {
  const empty = [undefined] as unknown as T[];
  empty.length = 0;
  return empty;
}

const NO_TICKS: readonly string[] = sharedEmpty();
const NO_EXPOSURES: readonly Exposure[] = sharedEmpty();

/**
 * A batch keeps its answers as two arrays: a decide answer is written from them directly, and
 * an object keyed by feature name (a different shape for every set of names) is only built for
 * the callers that read `decisions`.
 */
class Batch implements BatchResult {
  private byName: Record<string, FeatureDecision> | undefined;

  constructor(
    readonly answered: readonly CompiledFeature[],
    readonly results: readonly FeatureResult[],
    readonly unanswered: string[],
    readonly ticks: readonly string[],
    readonly exposures: readonly Exposure[],
  ) {}

  get decisions(): Record<string, FeatureDecision> {
    if (this.byName === undefined) {
      const out: Record<string, FeatureDecision> = {};
      for (let i = 0; i < this.answered.length; i++) {
        out[(this.answered[i] as CompiledFeature).name] = (this.results[i] as FeatureResult).decision;
      }
      this.byName = out;
    }
    return this.byName;
  }
}

function hasExperiment(exposures: readonly Exposure[], experiment: string): boolean {
  for (let i = 0; i < exposures.length; i++) if ((exposures[i] as Exposure).experiment === experiment) return true;
  return false;
}

/** Whether a feature is already among the answered ones (a batch names a handful). */
function isAnswered(answered: readonly CompiledFeature[], feature: CompiledFeature): boolean {
  for (let i = 0; i < answered.length; i++) if (answered[i] === feature) return true;
  return false;
}

/**
 * Evaluates the named features of a site. A name that is unknown, disabled, unpublished or not
 * running on the site is reported once in `unanswered`; a name given twice is evaluated once.
 * Journey features evaluate like decision features (they never tick). Ticks and exposures are in
 * first-seen order of `names`; as sets they do not depend on that order.
 */
export function evaluateBatch(site: CompiledSite, names: readonly string[], snapshot: FactSnapshot): BatchResult {
  const answered: CompiledFeature[] = [];
  const results: FeatureResult[] = [];
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
    if (isAnswered(answered, feature)) continue;
    const r = feature.evaluate(snapshot);
    answered.push(feature);
    results.push(r);
    const charged = r.ticks;
    for (let t = 0; t < charged.length; t++) {
      const meter = charged[t] as string;
      if (ticks === undefined) ticks = [meter];
      else if (!ticks.includes(meter)) ticks.push(meter);
    }
    const exposure = r.exposure;
    if (exposure !== undefined) {
      if (exposures === undefined) exposures = [exposure];
      else if (!hasExperiment(exposures, exposure.experiment)) exposures.push(exposure);
    }
  }
  return new Batch(answered, results, unanswered, ticks ?? NO_TICKS, exposures ?? NO_EXPOSURES);
}
