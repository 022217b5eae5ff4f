import { TypeCompiler } from "@sinclair/typebox/compiler";
import type { Config } from "../config";
import type { CompiledSite } from "../core/compile";
import type { KeyedRate } from "../counters/quota-leases";
import { takeKeyedRate } from "../counters/take-rate";
import { bodyTooLarge, jsonBodyOf } from "../http/body-limit";
import { errorResponseOf, validationError } from "../http/error-envelope";
import type { HotRequest, HotRoute } from "../infra/hot-request";
import { authenticateKeyed, type KeyedRequest, type KeyGuardDeps } from "../keys/guard";
import type { Logger } from "../logger";
import { PREVIEW_HEADER } from "../preview/tokens";
import type { SiteState } from "../sites/registry";
import { chooseDocument, type DecisionEngine, type DecisionEngineDeps, type DecisionSampler } from "./engine";
import { explainJson } from "./explain";
import { checkSubjects, DecideBody, type DecideInput } from "./model";
import type { DecideRequest } from "./request";
import { decideJson } from "./service";
import { decideDepsOf } from "./sources";

/** What keyed decide needs of the process (a narrow view of the app's deps). */
export interface KeyedDecideDeps extends KeyGuardDeps, DecisionEngineDeps {
  readonly config: Pick<Config, "maxBodyBytes" | "igluVendor" | "readDeadlineMs">;
  readonly keyedDecideRate: KeyedRate;
  readonly decisions: DecisionEngine;
  readonly impact: DecisionSampler;
  readonly logger: Logger;
}

/** One Headers for every answer: Bun copies it natively, cheaper than reading an object's entries. */
const JSON_HEADERS = new Headers({ "content-type": "application/json" });

/**
 * POST /v1/decide, the keyed server-to-server route publishers call thousands of times a
 * second. It is a plain `(Request) => Response` handler that the server registers as a Bun
 * native route (see `createApp`), so the hot path skips Elysia's per-request lifecycle; the
 * bench measured that lifecycle at about half of this route's budget. It keeps the contract of
 * every other route: the same envelope, statuses and messages.
 *
 * Order: declared body over the limit (413); key guard (400 site header, 401, 403, 404);
 * body (400 malformed, 413 chunked over the limit); schema (422); rate window (429); decide.
 * The key is checked before the body is read, so an unauthenticated caller costs a header read.
 */
export function keyedDecideHandler(deps: KeyedDecideDeps): (request: Request) => Promise<Response> {
  const handle = keyedDecide(deps, (json) => new Response(json, { headers: JSON_HEADERS }));
  // The fetch route's callers expect a promise (Elysia, tracing spans); only the hot path does not.
  return (request) => Promise.resolve(handle(request));
}

/**
 * The same route for the h1 transport's hot path (`NativeRoute.hot`): it reads the transport's
 * light request and answers a decision as its JSON text, which the transport writes as a 200 of
 * `application/json` (an error is still a `Response`). Where nothing has to wait (the key and the
 * reader's meters in memory, no preview token) it answers at once, with no promise.
 */
export function keyedDecideText(deps: KeyedDecideDeps): HotRoute {
  return keyedDecide(deps, (json) => json);
}

/**
 * Keyed decide, step by step: each step that may wait (the key guard on a cold key, a chunked
 * body, the rate window across processes, a preview token, meters not yet in memory) goes on
 * synchronously when its value is at hand and through a promise only when it is not. So the
 * common request makes no promise, no closure and no async frame; a thrown error, at once or
 * later, becomes its answer in the envelope (`errorResponseOf`).
 */
function keyedDecide<R>(
  deps: KeyedDecideDeps,
  answer: (json: string) => R,
): (request: HotRequest) => R | Response | Promise<R | Response> {
  const decideDeps = decideDepsOf(deps);
  const schema = TypeCompiler.Compile(DecideBody);
  const maxBody = deps.config.maxBodyBytes;
  const impact = deps.impact;
  const decisions = deps.decisions;
  const fail = (request: HotRequest, error: unknown): Response => errorResponseOf(deps.logger, request, error);

  const answered = (req: DecideRequest, json: string): R => {
    // Answered: impact replay may keep it (a countdown here; a pick is captured later).
    impact.offer(decisions, req, json);
    return answer(json);
  };
  const decide = (req: DecideRequest): R | Promise<R> => {
    // The one check explain adds to the path: an absent member.
    const decided = req.input.explain === true ? explainJson(decideDeps, req) : decideJson(decideDeps, req);
    return decided instanceof Promise ? decided.then((json) => answered(req, json)) : answered(req, decided);
  };
  const choose = (request: HotRequest, site: SiteState, input: DecideInput, now: number): R | Promise<R> => {
    // The preview header is only read while the site has a staged document.
    const token = site.preview === null ? null : request.headers.get(PREVIEW_HEADER);
    const userId = input.userId ?? null;
    if (token !== null) {
      return chooseDocument(deps.previewTokens, site, token, now).then(({ document, preview }) =>
        decide({ site, document, preview, input, userId, now }),
      );
    }
    return decide({ site, document: site.live as CompiledSite, preview: false, input, userId, now });
  };
  const withBody = (request: HotRequest, guarded: KeyedRequest, body: unknown): R | Promise<R> => {
    if (!schema.Check(body)) throw validationError(schema.Errors(body), DecideBody);
    const input = body as DecideInput;
    checkSubjects(input);
    const now = deps.now();
    const rated = takeKeyedRate(deps.keyedDecideRate, guarded.apiKey.id, now);
    if (rated !== undefined) return rated.then(() => choose(request, guarded.site, input, now));
    return choose(request, guarded.site, input, now);
  };
  const withKey = (request: HotRequest, length: string | null, guarded: KeyedRequest): R | Promise<R> => {
    // The body read inline (not through readJsonBody), and parsed at once where it can be.
    const body = jsonBodyOf(request, maxBody, length);
    // A parsed JSON value is never a promise: a promise here is a body still to be read.
    if (body instanceof Promise) return body.then((read) => withBody(request, guarded, read));
    return withBody(request, guarded, body);
  };
  return (request) => {
    try {
      const length = request.headers.get("content-length");
      const tooLarge = bodyTooLarge(request, maxBody, length);
      if (tooLarge) return tooLarge;
      const guarded = authenticateKeyed(deps, request);
      const out =
        guarded instanceof Promise
          ? guarded.then((g) => withKey(request, length, g))
          : withKey(request, length, guarded);
      return out instanceof Promise ? out.catch((error: unknown) => fail(request, error)) : out;
    } catch (error) {
      return fail(request, error);
    }
  };
}
