import { isStorableText, UNSTORABLE_TEXT } from "../core/text";
import { AppError } from "../infra/errors";

/**
 * Deepest nesting a request body may have. Real bodies nest a handful of levels; schema checks
 * and cleaners recurse, so a 10,000-deep body must be refused before any of them runs.
 */
export const MAX_JSON_DEPTH = 64;

const tooDeep = () => new AppError("bad_request", `The request body nests more than ${MAX_JSON_DEPTH} levels deep.`);

/** The 422 of a string (or member name) Postgres could not store, with its JSON pointer. */
export const unstorableText = (path: string) =>
  new AppError("validation_failed", "The request failed validation.", [{ path, message: UNSTORABLE_TEXT }]);

const pointer = (path: string, key: string | number) =>
  `${path}/${String(key).replaceAll("~", "~0").replaceAll("/", "~1")}`;

/**
 * Throws when a parsed JSON body nests deeper than MAX_JSON_DEPTH (400) or holds a string or
 * member name with text Postgres cannot store (422, the first such path). Recursion is bounded
 * by the depth cap, so the check itself cannot overflow the stack.
 */
export function checkJsonShape(value: unknown, path = "", depth = 0): void {
  if (typeof value === "string") {
    if (!isStorableText(value)) throw unstorableText(path || "/");
    return;
  }
  if (typeof value !== "object" || value === null) return;
  if (depth >= MAX_JSON_DEPTH) throw tooDeep();
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) checkJsonShape(value[i], pointer(path, i), depth + 1);
    return;
  }
  for (const key in value) {
    if (!isStorableText(key)) throw unstorableText(pointer(path, "?"));
    checkJsonShape((value as Record<string, unknown>)[key], pointer(path, key), depth + 1);
  }
}

/**
 * Refuses a request whose URL (path or query, percent-decoded) holds text Postgres cannot store
 * or is not valid percent-encoding (400); also a request whose URL cannot be parsed (a missing or
 * malformed Host makes Bun's `request.url` a bare path), so no route ever meets an invalid URL.
 */
export function checkRequestUrl(url: string): void {
  if (!URL.canParse(url)) throw new AppError("bad_request", "The Host header is missing or invalid.");
  if (url.indexOf("%") === -1) return;
  let decoded: string;
  try {
    decoded = decodeURIComponent(url);
  } catch {
    throw new AppError("bad_request", "The request URL is not valid percent-encoding.");
  }
  if (!isStorableText(decoded)) {
    throw new AppError("bad_request", `The request URL ${UNSTORABLE_TEXT}.`);
  }
}
