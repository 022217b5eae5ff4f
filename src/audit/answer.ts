/**
 * Reading the parts of an admin answer that are never secret, for its summary (summary.ts) and
 * its words (words.ts).
 */

/** The value at `path` in an answer, or undefined where the path does not lead. */
export const member = (value: unknown, ...path: string[]): unknown => {
  let at = value;
  for (const name of path) {
    if (at === null || typeof at !== "object") return undefined;
    at = (at as Record<string, unknown>)[name];
  }
  return at;
};

/** A string or number as text; anything else as the empty string. */
export const text = (value: unknown): string =>
  typeof value === "string" || typeof value === "number" ? String(value) : "";
