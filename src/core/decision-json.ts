/**
 * A feature decision as a decide answer writes it: exactly `JSON.stringify` of the decision's
 * outcome, type, fields and meters, in that order, without the journey destinations (`url`,
 * `fallbackUrl` belong to the forward route, never to a decide answer).
 *
 * Written by hand because the keyed decide path answers thousands of times a second: shared
 * decisions are written once at compile (a prebuilt result carries its JSON), and a decision
 * built per request (meter values) writes its frozen `fields` from a cache instead of walking
 * them again. `test/core/decision-json.test.ts` checks it against `JSON.stringify`.
 */
import type { FeatureDecision } from "./types";

/** JSON of frozen, shared objects (an outcome's fields): written once, reused by every answer. */
const frozenJson = new WeakMap<object, string>();

function fieldsJson(fields: Readonly<Record<string, unknown>>): string {
  let json = frozenJson.get(fields);
  if (json === undefined) {
    json = JSON.stringify(fields);
    // Only a frozen object can be cached: its JSON can never change.
    if (Object.isFrozen(fields)) frozenJson.set(fields, json);
  }
  return json;
}

/** A JSON number as JSON.stringify writes it (non-finite numbers as null). */
function numberJson(n: number): string {
  return Number.isFinite(n) ? String(n) : "null";
}

/** The decision as a decide answer carries it (see the module comment). */
export function decisionJson(d: FeatureDecision): string {
  let out = `{"outcome":${JSON.stringify(d.outcome)}`;
  if (d.type !== undefined) out += `,"type":${JSON.stringify(d.type)}`;
  if (d.fields !== undefined) out += `,"fields":${fieldsJson(d.fields)}`;
  const meters = d.meters;
  if (meters !== undefined) {
    out += ',"meters":{';
    let first = true;
    for (const name in meters) {
      const m = meters[name];
      if (m === undefined) continue;
      out += `${first ? "" : ","}${JSON.stringify(name)}:{"allowance":${numberJson(m.allowance)},"count":${numberJson(m.count)}}`;
      first = false;
    }
    out += "}";
  }
  return `${out}}`;
}
