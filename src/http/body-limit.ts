import { AppError, errorResponse } from "../infra/errors";
import type { HotRequest } from "../infra/hot-request";
import { checkJsonShape } from "./json-shape";
import { requestIdFor } from "./request-id";

const tooLarge = () => new AppError("payload_too_large", "The request body is too large.");

/**
 * Refuses a body over the limit with 413 before it is read, from its declared length.
 * Bodies without a length (chunked) are counted while `jsonBody` reads them.
 */
export function bodyTooLarge(
  request: HotRequest,
  maxBytes: number,
  length: string | null = request.headers.get("content-length"),
): Response | undefined {
  if (length !== null && Number(length) > maxBytes) {
    return errorResponse(413, "payload_too_large", "The request body is too large.", requestIdFor(request));
  }
  return undefined;
}

async function readCapped(body: ReadableStream<Uint8Array>, maxBytes: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > maxBytes) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString("utf8");
}

const notJson = () => new AppError("bad_request", "The request body is not valid JSON.");

/**
 * The body's JSON, pending: undefined when the request has no body (or declares length 0). A
 * declared length is read and parsed in one native step by `request.json()`, without the
 * intermediate string `text()` makes (measured on the bench's decide bodies, a bare server reading
 * them this way ran about a tenth faster); declared lengths are checked before, by `bodyTooLarge`.
 * A body without a declared length (chunked) is counted while it is read (413 past `maxBytes`),
 * then parsed; empty, it is no body. A rejection goes through `bodyReadError`.
 */
export function pendingJsonBody(
  request: HotRequest,
  maxBytes: number,
  length: string | null,
): Promise<unknown> | undefined {
  if (length === "0") return undefined;
  if (length !== null) return request.json();
  // Reading `request.body` makes a stream, so only a body without a declared length does.
  const body = request.body;
  return body === null ? undefined : readCapped(body, maxBytes).then(parseJsonText);
}

/**
 * The body's JSON as `pendingJsonBody` reads it, but parsed at once where the request already
 * holds its bytes (`HotRequest.jsonNow`, the h1 transport's light request), so keyed decide's
 * hot path makes no promise for it: the value (undefined: no body), or a promise of it where the
 * body is still to be read. A failure, thrown or rejected, is already `bodyReadError`'s.
 */
export function jsonBodyOf(request: HotRequest, maxBytes: number, length: string | null): unknown {
  if (length !== null && length !== "0" && request.jsonNow !== undefined) {
    try {
      return request.jsonNow();
    } catch (error) {
      throw bodyReadError(error);
    }
  }
  const pending = pendingJsonBody(request, maxBytes, length);
  return pending?.catch((error: unknown) => {
    throw bodyReadError(error);
  });
}

/** What a failed body read answers: the 413 of a chunked body over the limit, else 400. */
export function bodyReadError(error: unknown): AppError {
  return error instanceof AppError ? error : notJson();
}

/** A body's JSON: undefined when empty, 400 when malformed. */
function parseJsonText(text: string): unknown {
  if (text === "") return undefined;
  try {
    return JSON.parse(text);
  } catch {
    throw notJson();
  }
}

/**
 * A JSON request body: undefined when empty, 400 when malformed, 413 when a body without a
 * declared length (chunked) grows over the limit. Declared lengths are checked by `bodyTooLarge`.
 */
export async function readJsonBody(request: Request, maxBytes: number): Promise<unknown> {
  const pending = pendingJsonBody(request, maxBytes, request.headers.get("content-length"));
  if (pending === undefined) return undefined;
  try {
    return await pending;
  } catch (error) {
    throw bodyReadError(error);
  }
}

/**
 * Strict JSON bodies, the parse hook of every JSON route group (`jsonApi`): a malformed body is a 400 (never silently read as a
 * string), a body of another media type is a 400 (never parsed as a form or text, which no
 * route's schema expects), a chunked body over the limit is a 413, a body nested deeper than
 * MAX_JSON_DEPTH is a 400 and one holding text Postgres cannot store is a 422, all in the
 * envelope and before any schema check runs.
 */
export function jsonBody(maxBytes: number) {
  return async ({ request, contentType }: { request: Request; contentType: string }): Promise<unknown> => {
    if (!contentType?.startsWith("application/json")) {
      // No body at all (a preflight, a DELETE): nothing to refuse.
      const length = request.headers.get("content-length");
      if (length === null ? !request.headers.has("transfer-encoding") : length === "0") return;
      throw new AppError("bad_request", "Request bodies must be JSON (content-type: application/json).");
    }
    const body = await readJsonBody(request, maxBytes);
    checkJsonShape(body);
    return body;
  };
}
