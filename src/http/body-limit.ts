import { errorResponse } from "./errors";

/**
 * Refuses a body over the limit with 413 before it is read, from its declared length.
 * Bodies without a length (chunked) are capped by Bun's `maxRequestBodySize` at the socket.
 */
export function bodyTooLarge(request: Request, maxBytes: number): Response | undefined {
  const length = request.headers.get("content-length");
  if (length !== null && Number(length) > maxBytes) {
    return errorResponse(413, "payload_too_large", "The request body is too large.");
  }
  return undefined;
}
