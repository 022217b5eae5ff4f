import { createHash } from "node:crypto";
import { Elysia } from "elysia";
import type { KeyedRate } from "../counters/quota-leases";
import { takeKeyedRateFields } from "../counters/take-rate";
import type { DecisionEngine } from "../decide/engine";
import { type JsonApiDeps, jsonApi } from "../http/error-plugins";
import { credentials } from "../identity/credentials";
import type { KeyedRequest } from "../keys/guard";
import { PREVIEW_HEADER } from "../preview/tokens";
import { OfrepFlagParams, OfrepRequest } from "./model";
import { bulkFeatures, evaluateFlags, type FlagEvaluator, InvalidContext } from "./service";

const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });

/** A strong ETag of an answer's bytes. */
const etagOf = (body: string) => `"${createHash("sha256").update(body).digest("base64url").slice(0, 32)}"`;

/**
 * The answer, with an ETag only when the evaluation ticked no meter (a ticking answer is not
 * repeatable: the next call counts again), and 304 to a matching If-None-Match.
 */
function answer(request: Request, body: unknown, ticked: boolean, fields: Record<string, string>): Response {
  const text = JSON.stringify(body);
  if (ticked) return new Response(text, { headers: { "content-type": "application/json", ...fields } });
  const etag = etagOf(text);
  if (request.headers.get("if-none-match") === etag) {
    return new Response(null, { status: 304, headers: { etag, ...fields } });
  }
  return new Response(text, { headers: { "content-type": "application/json", etag, ...fields } });
}

/**
 * The OpenFeature Remote Evaluation Protocol beside keyed decide (docs/contracts.md): the same
 * key and site header, the same rate window as /v1/decide (429 with Retry-After), flags evaluated
 * through the decide pipeline (meters tick as they do on decide).
 */
export type OfrepDeps = Parameters<typeof credentials>[0] & {
  readonly now: () => number;
  readonly keyedDecideRate: KeyedRate;
  readonly decisions: DecisionEngine;
  /** Who evaluates the flags (default: `evaluateFlags` with `decisions`; the decide thread's, when it runs). */
  readonly ofrepFlags?: FlagEvaluator;
};

export function ofrepRoutes(deps: OfrepDeps & JsonApiDeps) {
  const engine = deps.decisions;
  const flagsOf: FlagEvaluator =
    deps.ofrepFlags ??
    ((site, document, preview, names, context, now) =>
      evaluateFlags(engine, site, document, preview, names, context, now));
  // The same window as keyed decide, named as it: OFREP calls spend it too.
  const policy = { name: "keyed-decide", limit: deps.keyedDecideRate.limit, windowMs: deps.keyedDecideRate.windowMs };
  const prepare = async ({ apiKey, site }: KeyedRequest, request: Request) => {
    const now = deps.now();
    const fields = await takeKeyedRateFields(deps.keyedDecideRate, policy, apiKey.id, now);
    const token = site.preview === null ? null : request.headers.get(PREVIEW_HEADER);
    return { now, fields, ...(await engine.chooseDocument(site, token, now)) };
  };
  return new Elysia({ prefix: "/ofrep/v1/evaluate" })
    .use(jsonApi(deps))
    .use(credentials(deps))
    .guard({ apiKey: { anySiteOfTenant: false } })
    .post(
      "/flags/:key",
      async ({ apiKey, site, params, body, request }) => {
        const key = params.key;
        const { now, fields, document, preview } = await prepare({ apiKey, site }, request);
        let evaluated: Awaited<ReturnType<typeof evaluateFlags>>;
        try {
          evaluated = await flagsOf(site, document, preview, [key], body.context, now);
        } catch (error) {
          if (error instanceof InvalidContext) {
            return json(400, { key, errorCode: "INVALID_CONTEXT", errorDetails: error.message }, fields);
          }
          throw error;
        }
        const flag = evaluated.flags[0] as Record<string, unknown>;
        if (flag.errorCode === "FLAG_NOT_FOUND") return json(404, flag, fields);
        if (flag.errorCode !== undefined) return json(400, flag, fields);
        return answer(request, flag, evaluated.ticked, fields);
      },
      { params: OfrepFlagParams, body: OfrepRequest },
    )
    .post(
      "/flags",
      async ({ apiKey, site, body, request }) => {
        const { now, fields, document, preview } = await prepare({ apiKey, site }, request);
        let evaluated: Awaited<ReturnType<typeof evaluateFlags>>;
        try {
          const names = bulkFeatures(document, body.context);
          evaluated = await flagsOf(site, document, preview, names, body.context, now);
        } catch (error) {
          if (error instanceof InvalidContext)
            return json(400, { errorCode: "INVALID_CONTEXT", errorDetails: error.message }, fields);
          throw error;
        }
        return answer(request, { flags: evaluated.flags }, evaluated.ticked, fields);
      },
      { body: OfrepRequest },
    );
}
