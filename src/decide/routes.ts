import { TypeCompiler } from "@sinclair/typebox/compiler";
import type { CompiledSite } from "../core/compile";
import type { Deps } from "../deps";
import { bodyReadError, bodyTooLarge, pendingJsonBody } from "../http/body-limit";
import { errorResponseOf, validationError } from "../http/error-envelope";
import { authenticateKeyed } from "../keys/guard";
import { PREVIEW_HEADER } from "../preview/tokens";
import type { SiteState } from "../sites/registry";
import { explainJson } from "./explain";
import { checkSubjects, DecideBody, type DecideInput } from "./model";
import { decideDepsOf, decideJson, takeKeyedRate } from "./service";

/**
 * The staged document under a valid preview token for this site; otherwise, silently, live.
 * The token is only verified when one is sent, so ordinary calls pay nothing for it.
 */
export async function chooseDocument(
  deps: Pick<Deps, "previewTokens">,
  site: SiteState,
  token: string | null,
  now: number,
): Promise<{ document: CompiledSite; preview: boolean }> {
  const live = site.live as CompiledSite;
  if (token === null || site.preview === null) return { document: live, preview: false };
  const valid = await deps.previewTokens.verify(token, site.tenantId, site.id, now);
  return valid ? { document: site.preview, preview: true } : { document: live, preview: false };
}

export const KEYED_DECIDE_PATH = "/v1/decide";

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
export function keyedDecideHandler(deps: Deps): (request: Request) => Promise<Response> {
  const decideDeps = decideDepsOf(deps);
  const schema = TypeCompiler.Compile(DecideBody);
  const maxBody = deps.config.maxBodyBytes;
  const impact = deps.impact;
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
      if (!schema.Check(body)) throw validationError(schema.Errors(body));
      const input = body as DecideInput;
      checkSubjects(input);
      const now = deps.now();
      const rated = takeKeyedRate(deps.keyedDecideRate, apiKey.id, now);
      if (rated !== undefined) await rated;
      let document = site.live as CompiledSite;
      let preview = false;
      // The preview header is only read while the site has a staged document.
      const token = site.preview === null ? null : request.headers.get(PREVIEW_HEADER);
      if (token !== null) ({ document, preview } = await chooseDocument(deps, site, token, now));
      const req = { site, document, preview, input, userId: input.userId ?? null, now };
      // The one check explain adds to the path: an absent member.
      const decided = input.explain === true ? explainJson(decideDeps, req) : decideJson(decideDeps, req);
      const json = decided instanceof Promise ? await decided : decided;
      // Answered: impact replay may keep it (a countdown here; a pick is captured later).
      impact.offer(decideDeps, req, json);
      return new Response(json, { headers: JSON_HEADERS });
    } catch (error) {
      return errorResponseOf(deps.logger, request, error);
    }
  };
}
