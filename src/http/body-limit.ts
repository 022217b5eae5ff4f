import { Elysia } from "elysia";
import { AppError, errorResponse } from "./errors";

const tooLarge = () => new AppError("payload_too_large", "The request body is too large.");

/**
 * Refuses a body over the limit with 413 before it is read, from its declared length.
 * Bodies without a length (chunked) are counted while `jsonBody` reads them.
 */
export function bodyTooLarge(request: Request, maxBytes: number): Response | undefined {
  const length = request.headers.get("content-length");
  if (length !== null && Number(length) > maxBytes) {
    return errorResponse(413, "payload_too_large", "The request body is too large.");
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

/**
 * Strict JSON bodies for every route: a malformed body is a 400 (never silently read as a
 * string), and a chunked body over the limit is a 413 in the envelope.
 */
export function jsonBody(maxBytes: number) {
  return new Elysia({ name: "json-body" }).onParse({ as: "global" }, async ({ request, contentType }) => {
    if (!contentType?.startsWith("application/json")) return;
    const length = request.headers.get("content-length");
    if (length === "0") return undefined;
    try {
      if (length !== null || request.body === null) return await request.json();
      const text = await readCapped(request.body, maxBytes);
      return text === "" ? undefined : JSON.parse(text);
    } catch (error) {
      if (error instanceof AppError) throw error;
      throw new AppError("bad_request", "The request body is not valid JSON.");
    }
  });
}
