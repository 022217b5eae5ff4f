/**
 * A feature decision as a decide answer writes it: exactly `JSON.stringify` of the decision's
 * outcome, type, fields and meters, in that order, without the journey destinations (`url`,
 * `fallbackUrl` belong to the forward route, never to a decide answer).
 *
 * Written by hand because the keyed decide path answers thousands of times a second: an
 * outcome's JSON is written once at compile (a shared result carries it whole, a result with
 * this request's meter values carries its head), so an answer walks no fields and no catalog
 * objects. `test/core/decision-json.test.ts` checks it against `JSON.stringify`.
 */
import type { FeatureDecision, FeatureResult } from "./types";

// Bound once, not read from the global object in the hot path: a compiled function's read of a
// global left its compiled form whenever that object changed (docs/performance.md, "Compiles in
// the measured windows").
const isFiniteNumber = Number.isFinite;

/** A JSON number as JSON.stringify writes it (non-finite numbers as null). */
function numberJson(n: number): string {
  return isFiniteNumber(n) ? `${n}` : "null";
}

/**
 * A decision's JSON up to its meters: outcome, type and fields, without the closing brace. An
 * outcome's head is written once at compile; a decision with meter values appends them to it.
 */
export function decisionJsonHead(d: FeatureDecision): string {
  let out = `{"outcome":${JSON.stringify(d.outcome)}`;
  if (d.type !== undefined) out += `,"type":${JSON.stringify(d.type)}`;
  if (d.fields !== undefined) out += `,"fields":${JSON.stringify(d.fields)}`;
  return out;
}

/**
 * Meter names as JSON strings. The names come from deployed documents, so a handful recur; the
 * cache stops growing at QUOTED_MAX (names past it are quoted each time).
 */
const quotedNames = new Map<string, string>();
const QUOTED_MAX = 4096;

function quotedName(name: string): string {
  let quoted = quotedNames.get(name);
  if (quoted === undefined) {
    quoted = JSON.stringify(name);
    if (quotedNames.size < QUOTED_MAX) quotedNames.set(name, quoted);
  }
  return quoted;
}

/** `,"meters":{...}` for a decision that read meters. */
function metersJson(meters: NonNullable<FeatureDecision["meters"]>): string {
  let out = ',"meters":{';
  let first = true;
  for (const name in meters) {
    const m = meters[name];
    if (m === undefined) continue;
    out += `${first ? "" : ","}${quotedName(name)}:{"allowance":${numberJson(m.allowance)},"count":${numberJson(m.count)}}`;
    first = false;
  }
  return `${out}}`;
}

/** The decision as a decide answer carries it (see the module comment). */
export function decisionJson(d: FeatureDecision): string {
  return `${decisionJsonHead(d)}${d.meters === undefined ? "" : metersJson(d.meters)}}`;
}

/**
 * A feature result's decision as a decide answer carries it: the JSON written at compile for a
 * shared decision, the outcome's head plus this request's meter values otherwise.
 */
export function resultJson(r: FeatureResult): string {
  if (r.json !== undefined) return r.json;
  const meters = r.decision.meters;
  if (r.jsonHead !== undefined) return meters === undefined ? `${r.jsonHead}}` : `${r.jsonHead}${metersJson(meters)}}`;
  return decisionJson(r.decision);
}
