import { explainFeature, type FeatureExplanation } from "../core/explain";
import type { BatchResult, CompiledFeature, FactSnapshot, FeatureResult } from "../core/types";
import type { DecideRequest } from "./request";
import { evaluateRequest } from "./service";
import type { DecideDeps } from "./sources";

/** The keyed decide answer under `explain: true` (docs/contracts.md): why, not a decision to act on. */
export interface ExplainAnswer {
  readonly explain: Record<string, FeatureExplanation & { meters?: FeatureResult["decision"]["meters"] }>;
  readonly unanswered: readonly string[];
  readonly preview: boolean;
  /** The subject meters and splits used (the user id, else the device id), or null. */
  readonly subject: string | null;
  /** Whether the request's content descriptor verified (`content.*` available). */
  readonly contentVerified: boolean;
}

/**
 * Explains a keyed decide request: the same snapshot and evaluation as decide, with no effect at
 * all (no meter ticks, no gift redemption counted, no exposures to fire), then each answered
 * feature walked rule by rule (core/explain.ts).
 */
export function explainJson(deps: DecideDeps, req: DecideRequest): string | Promise<string> {
  let snapshot: FactSnapshot | undefined;
  const evaluated = evaluateRequest(deps, req, (s) => {
    snapshot = s;
  });
  const answer = (result: BatchResult) => JSON.stringify(explainAnswer(req, snapshot as FactSnapshot, result));
  return evaluated instanceof Promise ? evaluated.then(answer) : answer(evaluated);
}

function explainAnswer(req: DecideRequest, snapshot: FactSnapshot, result: BatchResult): ExplainAnswer {
  const explain: ExplainAnswer["explain"] = {};
  for (let i = 0; i < result.answered.length; i++) {
    const feature = result.answered[i] as CompiledFeature;
    const decision = (result.results[i] as FeatureResult).decision;
    const explained = explainFeature(req.document, feature.name, snapshot, decision);
    explain[feature.name] = decision.meters === undefined ? explained : { ...explained, meters: decision.meters };
  }
  return {
    explain,
    unanswered: result.unanswered,
    preview: req.preview,
    subject: snapshot.subject,
    contentVerified: snapshot.content !== null,
  };
}
