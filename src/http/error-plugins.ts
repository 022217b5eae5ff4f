import { Elysia } from "elysia";
import type { Logger } from "../logger";
import { jsonBody } from "./body-limit";
import { errorResponseOf, type RouteTable } from "./error-envelope";

// The envelope's Elysia plugins, apart from its classification and rendering (error-envelope.ts),
// which keyed decide's own transport uses without loading Elysia.

export interface JsonApiDeps {
  readonly config: { readonly maxBodyBytes: number };
  readonly logger: Logger;
  /** Where a parse-stage error finds its route's body schema (none: its paths stop at the root). */
  readonly routeTable?: RouteTable;
}

/**
 * A JSON route group's own parser and error rendering: strict JSON bodies (`jsonBody`) and every
 * failure as the envelope. Scoped to the group that uses it, so a group behaves the same wherever
 * the app registers it; unnamed, so Elysia never skips it as a duplicate in a second group.
 */
export function jsonApi(deps: JsonApiDeps) {
  const table = deps.routeTable;
  return new Elysia()
    .onParse({ as: "scoped" }, jsonBody(deps.config.maxBodyBytes))
    .onError({ as: "scoped" }, ({ code, error, request, route }) =>
      errorResponseOf(deps.logger, request, error, code, table?.bodySchemaOf(request.method, route)),
    );
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
