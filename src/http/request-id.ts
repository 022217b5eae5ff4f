import { randomUUID } from "node:crypto";
import type { HotRequest } from "../infra/hot-request";

/** What a client may send as `x-request-id`: printable ASCII, no spaces, 1 to 128 characters. */
const VALID_REQUEST_ID = /^[\x21-\x7e]{1,128}$/;

/** The request's id: the client's `x-request-id` when it is valid, otherwise a new UUID. */
export function requestIdOf(sent: string | string[] | null | undefined): string {
  return typeof sent === "string" && VALID_REQUEST_ID.test(sent) ? sent : randomUUID();
}

/** A site id or similar header as sent, when it is as bounded as a request id (for logs). */
export function boundedHeader(sent: string | string[] | null | undefined): string | undefined {
  return typeof sent === "string" && VALID_REQUEST_ID.test(sent) ? sent : undefined;
}

const REQUEST_ID = Symbol("svc.requestId");

/**
 * Gives a request the id its answer's `x-request-id` carries: the transports (src/http/h1, node,
 * bun) call it once per request, so an error body names the same id as its header.
 */
export function tagRequest(request: object, id: string): void {
  (request as unknown as Record<symbol, string>)[REQUEST_ID] = id;
}

/**
 * The id a request was given by its transport; a request handled without one (`app.handle` in
 * tests) gets the client's valid `x-request-id` or a new UUID, kept for the rest of the request.
 */
export function requestIdFor(request: HotRequest): string {
  const tagged = (request as unknown as Record<symbol, string | undefined>)[REQUEST_ID];
  if (tagged !== undefined) return tagged;
  const id = requestIdOf(request.headers.get("x-request-id"));
  tagRequest(request, id);
  return id;
}
