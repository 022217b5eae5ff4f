/**
 * Content descriptor verification: `signature` is the base64url HMAC-SHA256 of the exact UTF-8
 * bytes of `payload` under one of the site's content keys. Synchronous on purpose: an awaited
 * WebCrypto call costs ~20x a `Bun.CryptoHasher` on the decide path.
 */
import { createHmac, timingSafeEqual } from "node:crypto";
import type { ContentDescriptor } from "./types";

export interface ContentKey {
  readonly id: string;
  readonly secret: string;
}

/** A verified descriptor: its parsed payload (the `content.*` facts) and its article id. */
export interface VerifiedContent {
  readonly facts: Readonly<Record<string, unknown>>;
  readonly articleId: string | null;
}

export type ContentVerifier = (
  descriptor: ContentDescriptor | undefined | null,
  nowMs: number,
) => VerifiedContent | null;

/** 32 bytes in base64url: 43 characters, optionally one "=" of padding. Nothing else. */
const SIGNATURE_SHAPE = /^[A-Za-z0-9_-]{43}=?$/;

/**
 * Builds the verifier of a site's content keys. Each key becomes a keyed HMAC state once; a
 * verification copies it (cheaper than re-keying). Returns null, never throws, for anything that
 * is not a valid, unexpired descriptor: absent, non-string members, malformed signature, payload
 * that is not a JSON object, unknown or non-string `kid`, wrong signature, `exp` not a number or
 * in the past (`exp` is epoch seconds; a descriptor is expired from that second on).
 */
export function createContentVerifier(keys: readonly ContentKey[]): ContentVerifier {
  const hashers = new Map<string, Bun.CryptoHasher>();
  for (const k of keys) {
    if (!hashers.has(k.id)) hashers.set(k.id, new Bun.CryptoHasher("sha256", k.secret));
  }
  const defaultHasher = keys.length > 0 ? hashers.get((keys[0] as ContentKey).id) : undefined;

  return (descriptor, nowMs) => {
    if (descriptor == null) return null;
    const { payload, signature } = descriptor;
    if (typeof payload !== "string" || typeof signature !== "string") return null;
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
    if (exp !== undefined) {
      if (typeof exp !== "number" || !Number.isFinite(exp)) return null;
      if (exp * 1000 <= nowMs) return null;
    }

    const id = record.id;
    let articleId: string | null = null;
    if (typeof id === "string" && id.length > 0) articleId = id;
    else if (typeof id === "number" && Number.isFinite(id)) articleId = String(id);

    return { facts: record, articleId };
  };
}

/**
 * Signs a payload the way publishers must (unpadded base64url HMAC-SHA256 of its UTF-8 bytes).
 * For tools, tests and the docs; the decide path only verifies.
 */
export function signContentPayload(payload: string, secret: string): string {
  return createHmac("sha256", secret).update(payload, "utf8").digest("base64url");
}
