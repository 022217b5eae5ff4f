/**
 * Gift-link tokens: `<payload>.<signature>`, both base64url. The payload is the JSON array
 * `[giftId, gifterId, contentHash, expiresAtMs]` and the signature its HMAC-SHA256 under a key
 * derived from the service secret for one site, so a token minted for one site never reads on
 * another and a forged or altered token is refused with no database read. The article is carried
 * as a hash (16 bytes of SHA-256) so a token stays under 200 characters whatever the content id.
 * Synchronous (node:crypto), like the content verifier: no await on the decide path.
 */
import { createHash, createHmac, timingSafeEqual } from "node:crypto";

/** Longest token decide reads; a longer `giftLink` is no gift without hashing anything. */
export const MAX_GIFT_TOKEN_LENGTH = 512;

export interface GiftClaims {
  readonly giftId: string;
  readonly gifterId: string;
  /** `contentHashOf(contentId)`. */
  readonly contentHash: string;
  readonly expiresAtMs: number;
}

/** The article as a token carries it: base64url of the first 16 bytes of SHA-256. */
export function contentHashOf(contentId: string): string {
  return createHash("sha256").update(contentId).digest().subarray(0, 16).toString("base64url");
}

const SIGNATURE_SHAPE = /^[A-Za-z0-9_-]{43}$/;

export class GiftTokens {
  private readonly keys = new Map<string, Buffer>();

  constructor(private readonly secret: string) {}

  private keyOf(tenantId: string, siteId: string): Buffer {
    const id = `${tenantId}\u0000${siteId}`;
    let key = this.keys.get(id);
    if (key === undefined) {
      key = createHmac("sha256", this.secret).update(`gift-link\u0000${id}`).digest();
      this.keys.set(id, key);
    }
    return key;
  }

  mint(tenantId: string, siteId: string, claims: GiftClaims): string {
    const payload = Buffer.from(
      JSON.stringify([claims.giftId, claims.gifterId, claims.contentHash, claims.expiresAtMs]),
    ).toString("base64url");
    const signature = createHmac("sha256", this.keyOf(tenantId, siteId)).update(payload).digest("base64url");
    return `${payload}.${signature}`;
  }

  /**
   * The claims of a token signed for this site, or null when it is overlong, malformed or forged.
   * Expiry, revocation and the article are the caller's to check.
   */
  read(tenantId: string, siteId: string, token: string): GiftClaims | null {
    if (token.length > MAX_GIFT_TOKEN_LENGTH) return null;
    const dot = token.indexOf(".");
    if (dot <= 0) return null;
    const signature = token.slice(dot + 1);
    if (!SIGNATURE_SHAPE.test(signature)) return null;
    const payload = token.slice(0, dot);
    const expected = createHmac("sha256", this.keyOf(tenantId, siteId)).update(payload).digest();
    if (!timingSafeEqual(expected, Buffer.from(signature, "base64url"))) return null;
    let parsed: unknown;
    try {
      parsed = JSON.parse(Buffer.from(payload, "base64url").toString("utf8"));
    } catch {
      return null;
    }
    if (!Array.isArray(parsed) || parsed.length !== 4) return null;
    const [giftId, gifterId, contentHash, expiresAtMs] = parsed;
    if (typeof giftId !== "string" || typeof gifterId !== "string" || typeof contentHash !== "string") return null;
    if (typeof expiresAtMs !== "number" || !Number.isFinite(expiresAtMs)) return null;
    return { giftId, gifterId, contentHash, expiresAtMs };
  }
}
