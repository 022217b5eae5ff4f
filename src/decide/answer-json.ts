/**
 * The decide answer (DESIGN.md's response contract, members in its order) written straight to
 * JSON, without building the answer object: the same bytes `JSON.stringify` would give for it.
 * Shared decisions carry their JSON from compile (`FeatureResult.json`), feature names their
 * quoted key (`CompiledFeature.jsonKey`), so an answer is mostly string concatenation.
 * `test/decide/answer-json.test.ts` checks it against `JSON.stringify` of the object.
 */
import { resultJson } from "../core/decision-json";
import type { BatchResult, CompiledFeature, Exposure, FeatureResult } from "../core/types";

/** An exposure's experiment and variant as JSON members; exposures are frozen per arm at compile. */
const exposureMembers = new WeakMap<Exposure, string>();

function exposureJson(schemaJson: string, e: Exposure, preview: boolean): string {
  let members = exposureMembers.get(e);
  if (members === undefined) {
    members = `"experiment":${JSON.stringify(e.experiment)},"variant":${JSON.stringify(e.variant)}`;
    if (Object.isFrozen(e)) exposureMembers.set(e, members);
  }
  return `{"schema":${schemaJson},"data":{${members},"preview":${preview}}}`;
}

/** A decide answer's JSON; `schemaJson` is the exposure schema URI already quoted. */
export function answerJson(result: BatchResult, preview: boolean, accessMissing: boolean, schemaJson: string): string {
  let out = '{"decisions":{';
  const { answered, results } = result;
  for (let i = 0; i < answered.length; i++) {
    if (i > 0) out += ",";
    out += (answered[i] as CompiledFeature).jsonKey + resultJson(results[i] as FeatureResult);
  }
  out += `},"unanswered":${result.unanswered.length === 0 ? "[]" : JSON.stringify(result.unanswered)},"preview":${preview},"exposures":[`;
  const exposures = result.exposures;
  for (let i = 0; i < exposures.length; i++) {
    if (i > 0) out += ",";
    out += exposureJson(schemaJson, exposures[i] as Exposure, preview);
  }
  return `${out}]${accessMissing ? ',"accessMissing":true' : ""}}`;
}
