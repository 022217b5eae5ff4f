import { TypeCompiler } from "@sinclair/typebox/compiler";
import type { Config } from "../config";
import type { CompiledSite } from "../core/compile";
import type { KeyedRate } from "../counters/quota-leases";
import { takeKeyedRate } from "../counters/take-rate";
import { bodyReadError, bodyTooLarge, pendingJsonBody } from "../http/body-limit";
import { errorResponseOf, validationError } from "../http/error-envelope";
import type { HotRequest } from "../infra/hot-request";
import { authenticateKeyed, type KeyGuardDeps } from "../keys/guard";
import type { Logger } from "../logger";
import { PREVIEW_HEADER } from "../preview/tokens";
import { chooseDocument, type DecisionEngine, type DecisionEngineDeps, type DecisionSampler } from "./engine";
import { explainJson } from "./explain";
import { checkSubjects, DecideBody, type DecideInput } from "./model";
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
  return keyedDecide(deps, (json) => new Response(json, { headers: JSON_HEADERS }));
}

/**
 * The same route for the h1 transport's hot path (`NativeRoute.hot`): it reads the transport's
 * light request and answers a decision as its JSON text, which the transport writes as a 200 of
 * `application/json` (an error is still a `Response`).
 */
export function keyedDecideText(deps: KeyedDecideDeps): (request: HotRequest) => Promise<string | Response> {
  return keyedDecide(deps, (json) => json);
}

function keyedDecide<R>(
  deps: KeyedDecideDeps,
  answer: (json: string) => R,
): (request: HotRequest) => Promise<R | Response> {
  const decideDeps = decideDepsOf(deps);
  const schema = TypeCompiler.Compile(DecideBody);
  const maxBody = deps.config.maxBodyBytes;
  const impact = deps.impact;
  const decisions = deps.decisions;
  return async (request) => {
    try {
      const length = request.headers.get("content-length");
      const tooLarge = bodyTooLarge(request, maxBody, length);
      if (tooLarge) return tooLarge;
      const guarded = authenticateKeyed(deps, request);
      const { apiKey, site } = guarded instanceof Promise ? await guarded : guarded;
      // The body read inline (not through readJsonBody), so a request awaits once.
      const pending = pendingJsonBody(request, maxBody, length);
      let body: unknown;
      if (pending !== undefined) {
        try {
          body = await pending;
        } catch (error) {
          throw bodyReadError(error);
        }
      }
      if (!schema.Check(body)) throw validationError(schema.Errors(body), DecideBody);
      const input = body as DecideInput;
      checkSubjects(input);
      const now = deps.now();
      const rated = takeKeyedRate(deps.keyedDecideRate, apiKey.id, now);
      if (rated !== undefined) await rated;
      let document = site.live as CompiledSite;
      let preview = false;
      // The preview header is only read while the site has a staged document.
      const token = site.preview === null ? null : request.headers.get(PREVIEW_HEADER);
      if (token !== null) ({ document, preview } = await chooseDocument(deps.previewTokens, site, token, now));
      const req = { site, document, preview, input, userId: input.userId ?? null, now };
      // The one check explain adds to the path: an absent member.
      const decided = input.explain === true ? explainJson(decideDeps, req) : decideJson(decideDeps, req);
      const json = decided instanceof Promise ? await decided : decided;
      // Answered: impact replay may keep it (a countdown here; a pick is captured later).
      impact.offer(decisions, req, json);
      return answer(json);
    } catch (error) {
      return errorResponseOf(deps.logger, request, error);
    }
  };
}
