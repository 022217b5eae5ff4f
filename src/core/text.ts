/**
 * Text Postgres can store: no NUL (text columns refuse U+0000) and no unpaired UTF-16
 * surrogate (it has no UTF-8 encoding, so the driver cannot send it). Every string that can
 * reach storage is checked with this at the edge; the counter flush isolates whatever slips by.
 */
export function isStorableText(value: string): boolean {
  return value.indexOf("\u0000") === -1 && value.isWellFormed();
}

/** Why `isStorableText` refused a string, for error details (never the string itself). */
export const UNSTORABLE_TEXT = "must not contain NUL characters or unpaired surrogates";
