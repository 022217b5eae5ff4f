import { StoreUnavailable, storeUnavailableOf } from "../infra/deadline";
import { errorText, stackFrames } from "../infra/error-text";
import { AppError, errorBody, statusOf } from "../infra/errors";
import type { HotRequest } from "../infra/hot-request";
import type { Logger } from "../logger";
import { requestIdFor } from "./request-id";
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

/** An AppError as its envelope response, naming the request's id. */
export function appErrorResponse(error: AppError, requestId: string): Response {
  return json(statusOf(error), errorBody(error.code, error.message, requestId, error.details), error.headers);
}

/**
 * A store outage: 503 with Retry-After, and a warning (at most one a second per logger, so an
 * outage under load does not flood the log) naming the reason, never the query or the URL.
 */
function storeUnavailableResponse(logger: Logger, request: HotRequest, error: StoreUnavailable): Response {
  logger.warnAtMostEvery(1000, "store unavailable", {
    reason: error.reason,
    method: request.method,
    path: new URL(request.url).pathname,
  });
  return appErrorResponse(error, requestIdFor(request));
}

/**
 * An unexpected failure: logged with the request id, answered 500 without internals; a
 * connection-class store error is an outage instead (503 with Retry-After).
 */
function unexpectedErrorResponse(logger: Logger, request: HotRequest, error: unknown): Response {
  const unavailable = storeUnavailableOf(error);
  if (unavailable !== null) return storeUnavailableResponse(logger, request, unavailable);
  const requestId = requestIdFor(request);
  logger.error("unexpected error", {
    requestId,
    method: request.method,
    path: new URL(request.url).pathname,
    // Never a failed query's parameters: they are readers' ids, article ids and addresses.
    error: errorText(error),
    stack: stackFrames(error),
  });
  return json(500, errorBody("internal_error", "Something went wrong.", requestId));
}

/**
 * The one classification of failures: what Elysia raises (by its code) and what our code throws,
 * as the AppError of the closed table (src/infra/errors.ts), a store outage, or null for an
 * unexpected failure. The renderers (JSON here, HTML in the console, OFREP's evaluation
 * failures in its routes) start from it. `bodySchema` is the route's declared body, when known:
 * the paths of a parse-stage error are cut to its own member names (`safePointer`); unknown, they
 * stop at the root, so no member name a caller chose is echoed either way.
 */
export function classify(
  error: unknown,
  code?: string | number,
  bodySchema: unknown = NO_SCHEMA,
): AppError | StoreUnavailable | null {
  // Elysia wraps what a body parser throws in its PARSE error: unwrap ours.
  const cause = (error as { cause?: unknown } | null)?.cause;
  if (code === "PARSE" && cause instanceof AppError) return withSafePaths(cause, bodySchema);
  if (error instanceof StoreUnavailable || error instanceof AppError) return error;
  switch (code) {
    case "VALIDATION":
      return validationError(
        (error as { all?: { path?: string; message?: string }[] }).all ?? [],
        checkedSchema(error),
      );
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
export function errorResponseOf(
  logger: Logger,
  request: HotRequest,
  error: unknown,
  code?: string | number,
  bodySchema?: unknown,
): Response {
  const classified = classify(error, code, bodySchema);
  if (classified instanceof StoreUnavailable) return storeUnavailableResponse(logger, request, classified);
  if (classified === null) return unexpectedErrorResponse(logger, request, error);
  return appErrorResponse(classified, requestIdFor(request));
}

/** The app's routes as Elysia lists them (`app.routes`), set once the app is built. */
export class RouteTable {
  private routes: () => readonly ListedRoute[] = () => [];
  private bodies: Map<string, unknown> | null = null;

  set(routes: () => readonly ListedRoute[]): void {
    this.routes = routes;
    this.bodies = null;
  }

  /** The body schema a route (its template) declares, or none. */
  bodySchemaOf(method: string, route: string): unknown {
    this.bodies ??= new Map(this.routes().map((r) => [`${r.method} ${r.path}`, r.hooks?.body]));
    return this.bodies.get(`${method} ${route}`) ?? NO_SCHEMA;
  }
}
