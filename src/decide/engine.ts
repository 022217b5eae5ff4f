import type { CompiledSite } from "../core/compile";
import type { BatchResult } from "../core/types";
import type { PreviewTokens } from "../preview/tokens";
import type { SiteState } from "../sites/registry";
import { answerJson } from "./answer-json";
import { explainJson } from "./explain";
import type { DecideRequest, Effects } from "./request";
import { decideJson, evaluateRequest } from "./service";
import { type DecideDeps, type DecideSources, decideDepsOf } from "./sources";

/**
 * The one face of decide that other capabilities use (OFREP, browser decide, console try, impact
 * replay, the operator's explain): they depend on this, never on decide's internals. Errors that
 * are not decisions (a store past its deadline) reject; denials are values in the result.
 */
export interface DecisionEngine {
  /** Evaluates every named feature against one snapshot; what happens then is `effects`' choice. */
  evaluate(req: DecideRequest, effects: Effects): BatchResult | Promise<BatchResult>;
  /** Decide's answer as JSON, with its effects applied (meter ticks, gift redemptions). */
  decideJson(req: DecideRequest): string | Promise<string>;
  /** What decide would answer, as JSON, with no effect at all (the console's try). */
  tryJson(req: DecideRequest): string | Promise<string>;
  /** Explain's answer as JSON: the same evaluation, with no effect at all. */
  explainJson(req: DecideRequest): string | Promise<string>;
  /** The document a request evaluates: staged under a valid preview token, otherwise live. */
  chooseDocument(site: SiteState, token: string | null, now: number): Promise<ChosenDocument>;
}

export interface ChosenDocument {
  readonly document: CompiledSite;
  readonly preview: boolean;
}

/**
 * What keyed decide hands on after answering (impact replay keeps a sample). Declared here, so
 * decide does not import the capability that implements it.
 */
export interface DecisionSampler {
  offer(engine: DecisionEngine, req: DecideRequest, answer: string): void;
}

export interface DecisionEngineDeps extends DecideSources {
  readonly previewTokens: Pick<PreviewTokens, "verify">;
}

/** Builds the engine once per process (the composition root holds it as `deps.decisions`). */
export function createDecisionEngine(deps: DecisionEngineDeps): DecisionEngine {
  const decideDeps: DecideDeps = decideDepsOf(deps);
  return {
    evaluate: (req, effects) => evaluateRequest(decideDeps, req, effects),
    decideJson: (req) => decideJson(decideDeps, req),
    explainJson: (req) => explainJson(decideDeps, req),
    tryJson: (req) => {
      // An observer that never applies the ticks: nothing counted, nothing recorded.
      const answer = (result: BatchResult) =>
        answerJson(result, req.preview, req.accessMissing === true, decideDeps.exposureSchemaJson);
      const result = evaluateRequest(decideDeps, req, () => {});
      return result instanceof Promise ? result.then(answer) : answer(result);
    },
    chooseDocument: (site, token, now) => chooseDocument(deps.previewTokens, site, token, now),
  };
}

/**
 * The staged document under a valid preview token for this site; otherwise, silently, live.
 * The token is only verified when one is sent, so ordinary calls pay nothing for it.
 */
export async function chooseDocument(
  previewTokens: Pick<PreviewTokens, "verify">,
  site: SiteState,
  token: string | null,
  now: number,
): Promise<ChosenDocument> {
  const live = site.live as CompiledSite;
  if (token === null || site.preview === null) return { document: live, preview: false };
  const valid = await previewTokens.verify(token, site.tenantId, site.id, now);
  return valid ? { document: site.preview, preview: true } : { document: live, preview: false };
}
