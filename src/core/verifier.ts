/**
 * Content descriptor verification: `signature` is the base64url HMAC-SHA256 of the exact UTF-8
 * bytes of `payload` under one of the site's content keys. Synchronous on purpose: an awaited
 * WebCrypto call costs ~20x a `Bun.CryptoHasher` on the decide path.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import { deepFreeze } from "./freeze";
import { isStorableText } from "./text";
import type { ContentDescriptor } from "./types";

export interface ContentKey {
  readonly id: string;
  readonly secret: string;
}

/**
 * Longest article id a descriptor may name (in UTF-16 code units): a seen meter stores it in a
 * primary key with the subject, and Postgres refuses an index row over about 2.7 kB. 512 units
 * are at most 1,536 bytes of UTF-8, as a gift link's `contentId` is.
 */
export const MAX_ARTICLE_ID_LENGTH = 512;

/** A verified descriptor: its parsed payload (the `content.*` facts) and its article id. */
export interface VerifiedContent {
  readonly facts: Readonly<Record<string, unknown>>;
  readonly articleId: string | null;
  /**
   * The signed `id` is longer than MAX_ARTICLE_ID_LENGTH: decide refuses the request (422)
   * rather than read it as no article, so a CMS with such ids learns of it at once.
   */
  readonly idTooLong: boolean;
}

export type ContentVerifier = (
  descriptor: ContentDescriptor | undefined | null,
  nowMs: number,
) => VerifiedContent | null;

/** 32 bytes in base64url: 43 characters, optionally one "=" of padding. Nothing else. */
const SIGNATURE_SHAPE = /^[A-Za-z0-9_-]{43}=?$/;

/** Verified descriptors a site's verifier remembers (see `createContentVerifier`). */
const VERIFIED_CACHE_SIZE = 8_192;

interface Remembered {
  readonly payload: string;
  /** `exp` in epoch milliseconds, or +Infinity without one. */
  readonly expiresAtMs: number;
  readonly verified: VerifiedContent;
}

/**
 * Builds the verifier of a site's content keys. Each key becomes a keyed HMAC state once; a
 * verification copies it (cheaper than re-keying). Returns null, never throws, for anything that
 * is not a valid, unexpired descriptor: absent, non-string members, malformed signature, payload
 * that is not a JSON object, unknown or non-string `kid`, wrong signature, `exp` not a number or
 * in the past (`exp` is epoch seconds; a descriptor is expired from that second on).
 *
 * Readers of one article send the same descriptor over and over, so the verifier remembers the
 * last `cacheSize` descriptors that verified, by signature: a later request with the same
 * signature AND the same payload string skips the parse and the HMAC (only `exp` is checked
 * again). Anything else, including a known signature over another payload, is verified in full.
 * Remembered facts are frozen, since every such request shares them.
 */
export function createContentVerifier(
  keys: readonly ContentKey[],
  cacheSize: number = VERIFIED_CACHE_SIZE,
): ContentVerifier {
  const hashers = new Map<string, Bun.CryptoHasher>();
  for (const k of keys) {
    if (!hashers.has(k.id)) hashers.set(k.id, new Bun.CryptoHasher("sha256", k.secret));
  }
  const defaultHasher = keys.length > 0 ? hashers.get((keys[0] as ContentKey).id) : undefined;
  // Insertion order is eviction order: the oldest entry leaves when the cache is full.
  const remembered = new Map<string, Remembered>();

  const verifyFully = (payload: string, signature: string, nowMs: number): Remembered | null => {
    if (!SIGNATURE_SHAPE.test(signature)) return null;

    let facts: unknown;
    try {
      facts = JSON.parse(payload);
    } catch {
      return null;
    }
    if (typeof facts !== "object" || facts === null || Array.isArray(facts)) return null;
    const record = facts as Record<string, unknown>;

    const kid = record.kid;
    let base: Bun.CryptoHasher | undefined;
    if (kid === undefined) base = defaultHasher;
    else if (typeof kid === "string") base = hashers.get(kid);
    if (base === undefined) return null;

    const hasher = base.copy();
    hasher.update(payload);
    const expected = hasher.digest("base64url");
    const given = signature.length === 44 ? signature.slice(0, 43) : signature;
    // Both are 43 ASCII characters here (shape checked above), so the buffers have equal length.
    if (!timingSafeEqual(Buffer.from(expected, "latin1"), Buffer.from(given, "latin1"))) return null;

    const exp = record.exp;
    let expiresAtMs = Number.POSITIVE_INFINITY;
    if (exp !== undefined) {
      if (typeof exp !== "number" || !Number.isFinite(exp)) return null;
      expiresAtMs = exp * 1000;
      if (expiresAtMs <= nowMs) return null;
    }

    const id = record.id;
    let articleId: string | null = null;
    const idTooLong = typeof id === "string" && id.length > MAX_ARTICLE_ID_LENGTH;
    // An id Postgres could not store (a seen meter's member) reads as no article id.
    if (typeof id === "string" && id.length > 0 && !idTooLong && isStorableText(id)) articleId = id;
    else if (typeof id === "number" && Number.isFinite(id)) articleId = String(id);

    return { payload, expiresAtMs, verified: Object.freeze({ facts: deepFreeze(record), articleId, idTooLong }) };
  };

  return (descriptor, nowMs) => {
    if (descriptor == null) return null;
    const { payload, signature } = descriptor;
    if (typeof payload !== "string" || typeof signature !== "string") return null;

    const known = remembered.get(signature);
    if (known !== undefined && known.payload === payload) {
      return known.expiresAtMs > nowMs ? known.verified : null;
    }
    const fresh = verifyFully(payload, signature, nowMs);
    if (fresh === null) return null;
    if (cacheSize > 0) {
      if (known === undefined && remembered.size >= cacheSize) {
        remembered.delete(remembered.keys().next().value as string);
      }
      remembered.set(signature, fresh);
    }
    return fresh.verified;
  };
}

/**
 * Signs a payload the way publishers must (unpadded base64url HMAC-SHA256 of its UTF-8 bytes).
 * For tools, tests and the docs; the decide path only verifies.
 */
export function signContentPayload(payload: string, secret: string): string {
  return createHmac("sha256", secret).update(payload, "utf8").digest("base64url");
}
