import { Elysia } from "elysia";
import { StoreUnavailable, storeUnavailableOf } from "../infra/deadline";
import { AppError, errorBody, statusOf } from "../infra/errors";
import type { Logger } from "../logger";
import { jsonBody } from "./body-limit";
import { requestIdFor } from "./request-id";

export interface ValueIssue {
  path: string;
  message: string;
}

/** Failing paths and messages of a schema check (TypeBox errors), each once. */
function validationDetails(errors: Iterable<{ path?: string; message?: string }>): ValueIssue[] {
  const seen = new Set<string>();
  const issues: ValueIssue[] = [];
  for (const e of errors) {
    const issue = { path: e.path || "/", message: e.message ?? "is invalid" };
    const id = `${issue.path}\u0000${issue.message}`;
    if (seen.has(id)) continue;
    seen.add(id);
    issues.push(issue);
  }
  return issues;
}

/** The 422 of a body that failed its schema, with the failing paths in details. */
export const validationError = (errors: Iterable<{ path?: string; message?: string }>) =>
  new AppError("validation_failed", "The request failed validation.", validationDetails(errors));

const json = (status: number, body: unknown, headers?: Readonly<Record<string, string>>) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });

/** An AppError as its envelope response, naming the request's id. */
export function appErrorResponse(error: AppError, requestId: string): Response {
  return json(statusOf(error), errorBody(error.code, error.message, requestId, error.details), error.headers);
}

/** When each logger last warned of the store, and how many warnings it left out since. */
const storeWarnings = new WeakMap<Logger, { at: number; unlogged: number }>();

/**
 * A store outage: 503 with Retry-After, and a warning (at most one a second per logger, so an
 * outage under load does not flood the log) naming the reason, never the query or the URL.
 */
function storeUnavailableResponse(logger: Logger, request: Request, error: StoreUnavailable): Response {
  const now = Date.now();
  const last = storeWarnings.get(logger);
  if (last !== undefined && now - last.at < 1000) last.unlogged += 1;
  else {
    logger.warn("store unavailable", {
      reason: error.reason,
      method: request.method,
      path: new URL(request.url).pathname,
      unlogged: last?.unlogged ?? 0,
    });
    storeWarnings.set(logger, { at: now, unlogged: 0 });
  }
  return appErrorResponse(error, requestIdFor(request));
}

/**
 * An unexpected failure: logged with the request id, answered 500 without internals; a
 * connection-class store error is an outage instead (503 with Retry-After).
 */
function unexpectedErrorResponse(logger: Logger, request: Request, error: unknown): Response {
  const unavailable = storeUnavailableOf(error);
  if (unavailable !== null) return storeUnavailableResponse(logger, request, unavailable);
  const requestId = requestIdFor(request);
  logger.error("unexpected error", {
    requestId,
    method: request.method,
    path: new URL(request.url).pathname,
    error: error instanceof Error ? `${error.name}: ${error.message}` : String(error),
    stack: error instanceof Error ? error.stack : undefined,
  });
  return json(500, errorBody("internal_error", "Something went wrong.", requestId));
}

/**
 * The one classification of failures: what Elysia raises (by its code) and what our code throws,
 * as the AppError of the closed table (src/infra/errors.ts), a store outage, or null for an
 * unexpected failure. The renderers (JSON here, HTML in the console, OFREP's evaluation
 * failures in its routes) start from it.
 */
export function classify(error: unknown, code?: string | number): AppError | StoreUnavailable | null {
  // Elysia wraps what a body parser throws in its PARSE error: unwrap ours.
  const cause = (error as { cause?: unknown } | null)?.cause;
  if (code === "PARSE" && cause instanceof AppError) return cause;
  if (error instanceof StoreUnavailable || error instanceof AppError) return error;
  switch (code) {
    case "VALIDATION":
      return validationError((error as { all?: { path?: string; message?: string }[] }).all ?? []);
    case "PARSE":
      return new AppError("bad_request", "The request body is not valid JSON.");
    case "NOT_FOUND":
      return new AppError("not_found", "No such route.");
    case "INVALID_COOKIE_SIGNATURE":
      return new AppError("bad_request", "Invalid cookie.");
  }
  if ((error as { status?: unknown } | null)?.status === 413)
    return new AppError("payload_too_large", "The request body is too large.");
  return null;
}

/** Any failure as the JSON envelope, with its status and headers and the request's id. */
export function errorResponseOf(logger: Logger, request: Request, error: unknown, code?: string | number): Response {
  const classified = classify(error, code);
  if (classified instanceof StoreUnavailable) return storeUnavailableResponse(logger, request, classified);
  if (classified === null) return unexpectedErrorResponse(logger, request, error);
  return appErrorResponse(classified, requestIdFor(request));
}

export interface JsonApiDeps {
  readonly config: { readonly maxBodyBytes: number };
  readonly logger: Logger;
}

/**
 * A JSON route group's own parser and error rendering: strict JSON bodies (`jsonBody`) and every
 * failure as the envelope. Scoped to the group that uses it, so a group behaves the same wherever
 * the app registers it; unnamed, so Elysia never skips it as a duplicate in a second group.
 */
export function jsonApi(deps: JsonApiDeps) {
  return new Elysia()
    .onParse({ as: "scoped" }, jsonBody(deps.config.maxBodyBytes))
    .onError({ as: "scoped" }, ({ code, error, request }) => errorResponseOf(deps.logger, request, error, code));
}

/**
 * The app's own failures, for requests no group answers: no route (404), or a refusal at the edge
 * before routing, all in the envelope.
 */
export function unmatchedErrors(logger: Logger) {
  return new Elysia().onError({ as: "scoped" }, ({ code, error, request }) =>
    errorResponseOf(logger, request, error, code),
  );
}
