import { Elysia } from "elysia";
import { StoreUnavailable, storeUnavailableOf } from "../infra/deadline";
import { errorText, stackFrames } from "../infra/error-text";
import { AppError, errorBody, statusOf } from "../infra/errors";
import type { Logger } from "../logger";
import { safePointer } from "./safe-pointer";

export interface ValueIssue {
  path: string;
  message: string;
}

/** A schema no member is declared in: every path under it stops at the root. */
const NO_SCHEMA = {};

/** One issue with its path cut to the schema's own member names (`safePointer`), and the rule. */
function safeIssue(schema: unknown, path: string, message: string): ValueIssue {
  const safe = safePointer(schema, path);
  if (!safe.cut) return { path: safe.path, message };
  // TypeBox says "Unexpected property" of a member an object does not declare.
  return {
    path: safe.path,
    message:
      message === "Unexpected property" ? "has a member it does not accept" : `has a member that fails: ${message}`,
  };
}

/**
 * Failing paths and messages of a schema check (TypeBox errors), each once. With the `schema`
 * checked, a path stops before the first member name the caller chose (`safePointer`), so no
 * member name is echoed; without one the paths are the caller's own (fixed names and indices).
 */
export function validationDetails(
  errors: Iterable<{ path?: string; message?: string }>,
  schema?: unknown,
): ValueIssue[] {
  const seen = new Set<string>();
  const issues: ValueIssue[] = [];
  for (const e of errors) {
    const path = e.path || "/";
    const message = e.message ?? "is invalid";
    const issue = schema === undefined ? { path, message } : safeIssue(schema, path, message);
    const id = `${issue.path}\u0000${issue.message}`;
    if (seen.has(id)) continue;
    seen.add(id);
    issues.push(issue);
  }
  return issues;
}

/**
 * The 422 of a body that failed its schema, with the failing paths in details: give the schema
 * whenever the paths come from checking a caller's value against it (TypeBox's errors).
 */
export const validationError = (errors: Iterable<{ path?: string; message?: string }>, schema?: unknown) =>
  new AppError("validation_failed", "The request failed validation.", validationDetails(errors, schema));

/** The schema an Elysia validation error checked (its compiled check keeps it as `schema`). */
function checkedSchema(error: unknown): unknown {
  const validator = (error as { validator?: unknown }).validator;
  if (typeof validator !== "object" || validator === null) return NO_SCHEMA;
  return "schema" in validator ? ((validator as { schema?: unknown }).schema ?? NO_SCHEMA) : validator;
}

/** An error of the body's parse stage (text Postgres cannot store) with its paths cut to `schema`. */
function withSafePaths(error: AppError, schema: unknown): AppError {
  if (!Array.isArray(error.details)) return error;
  const details = (error.details as ValueIssue[]).map((d) =>
    typeof d?.path === "string" ? safeIssue(schema, d.path, d.message) : d,
  );
  return new AppError(error.code, error.message, details, error.headers);
}

/** A route as Elysia lists it (`app.routes`): its body schema, when it declares one. */
export interface ListedRoute {
  readonly method: string;
  readonly path: string;
  readonly hooks?: { readonly body?: unknown };
}

const json = (status: number, body: unknown, headers?: Readonly<Record<string, string>>) =>
  new Response(JSON.stringify(body), { status, headers: { "content-type": "application/json", ...headers } });

/** An AppError as its envelope response. */
export function appErrorResponse(error: AppError): Response {
  return json(statusOf(error), errorBody(error.code, error.message, error.details), error.headers);
}

/** When each logger last warned of the store, and how many warnings it left out since. */
const storeWarnings = new WeakMap<Logger, { at: number; unlogged: number }>();

/**
 * A store outage: 503 with Retry-After, and a warning (at most one a second per logger, so an
 * outage under load does not flood the log) naming the reason, never the query or the URL.
 */
export function storeUnavailableResponse(logger: Logger, request: Request, error: StoreUnavailable): Response {
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
  return appErrorResponse(error);
}

/**
 * An unexpected failure: logged with a request id, answered 500 without internals; a
 * connection-class store error is an outage instead (503 with Retry-After).
 */
export function unexpectedErrorResponse(logger: Logger, request: Request, error: unknown): Response {
  const unavailable = storeUnavailableOf(error);
  if (unavailable !== null) return storeUnavailableResponse(logger, request, unavailable);
  const requestId = crypto.randomUUID();
  logger.error("unexpected error", {
    requestId,
    method: request.method,
    path: new URL(request.url).pathname,
    // Never a failed query's parameters: they are readers' ids, article ids and addresses.
    error: errorText(error),
    stack: stackFrames(error),
  });
  return json(500, errorBody("internal_error", "Something went wrong.", { requestId }));
}

/** Any failure of a route handled outside Elysia (the native decide route) as the envelope. */
export function errorResponseOf(logger: Logger, request: Request, error: unknown): Response {
  if (error instanceof StoreUnavailable) return storeUnavailableResponse(logger, request, error);
  return error instanceof AppError ? appErrorResponse(error) : unexpectedErrorResponse(logger, request, error);
}

/**
 * The one place a failure becomes the envelope `{ error: { code, message, details? } }`.
 * Unexpected errors are logged with a request id and answered without internals.
 */
export function errorEnvelope(logger: Logger, routes: () => readonly ListedRoute[] = () => []) {
  let bodySchemas: Map<string, unknown> | null = null;
  const bodySchemaOf = (method: string, route: string): unknown => {
    bodySchemas ??= new Map(routes().map((r) => [`${r.method} ${r.path}`, r.hooks?.body]));
    return bodySchemas.get(`${method} ${route}`) ?? NO_SCHEMA;
  };
  return new Elysia({ name: "error-envelope" }).onError({ as: "global" }, ({ code, error, request, route }) => {
    // Elysia wraps what a body parser throws in its PARSE error: unwrap ours, its paths cut to
    // the route's body schema (the parse stage runs before the schema is checked).
    const cause = (error as { cause?: unknown }).cause;
    if (code === "PARSE" && cause instanceof AppError) {
      return appErrorResponse(withSafePaths(cause, bodySchemaOf(request.method, route)));
    }
    if (error instanceof StoreUnavailable) return storeUnavailableResponse(logger, request, error);
    if (error instanceof AppError) return appErrorResponse(error);
    switch (code) {
      case "VALIDATION":
        return appErrorResponse(
          validationError((error as { all?: { path?: string; message?: string }[] }).all ?? [], checkedSchema(error)),
        );
      case "PARSE":
        return json(400, errorBody("bad_request", "The request body is not valid JSON."));
      case "NOT_FOUND":
        return json(404, errorBody("not_found", "No such route."));
      case "INVALID_COOKIE_SIGNATURE":
        return json(400, errorBody("bad_request", "Invalid cookie."));
      default: {
        const status = (error as { status?: unknown }).status;
        if (status === 413) return json(413, errorBody("payload_too_large", "The request body is too large."));
        return unexpectedErrorResponse(logger, request, error);
      }
    }
  });
}
