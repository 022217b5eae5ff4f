import type { AccessClaims, AccessTokens } from "./access-token";
import { ACCESS_COOKIE, readCookie, SESSION_COOKIE } from "./cookies";

export interface BrowserIdentity {
  /** The verified access cookie, or null (signed out, expired, forged). */
  readonly claims: AccessClaims | null;
  /** A session cookie is present but no usable access cookie: refresh via get-session. */
  readonly accessMissing: boolean;
}

/**
 * The browser credential: the signed `svc.access` cookie, verified without a database read.
 * The session cookie is only checked for presence (never verified here).
 */
export async function browserIdentity(
  tokens: AccessTokens,
  tenantId: string,
  headers: Headers,
  nowMs: number,
): Promise<BrowserIdentity> {
  const cookie = headers.get("cookie");
  const claims = await tokens.verify(readCookie(cookie, ACCESS_COOKIE), tenantId, nowMs);
  return { claims, accessMissing: claims === null && readCookie(cookie, SESSION_COOKIE) !== null };
}
