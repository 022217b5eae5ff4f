import { jwtVerify, SignJWT } from "jose";

export const PREVIEW_HEADER = "x-svc-preview";
const AUDIENCE = "svc:preview";

/**
 * Short-lived, per-site preview tokens (HS256 JWTs signed with the service secret). A valid
 * token makes decide evaluate the site's staged document.
 */
export class PreviewTokens {
  private readonly key: Uint8Array;

  constructor(secret: string) {
    this.key = new TextEncoder().encode(`preview:${secret}`);
  }

  async mint(
    tenantId: string,
    siteId: string,
    ttlSeconds: number,
    nowMs: number,
  ): Promise<{ token: string; expiresAt: string }> {
    const iat = Math.floor(nowMs / 1000);
    const exp = iat + ttlSeconds;
    const token = await new SignJWT({ tid: tenantId })
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(siteId)
      .setAudience(AUDIENCE)
      .setIssuedAt(iat)
      .setExpirationTime(exp)
      .sign(this.key);
    return { token, expiresAt: new Date(exp * 1000).toISOString() };
  }

  /** True only for an unexpired token of this tenant's site; anything else is false, silently. */
  async verify(token: string | null, tenantId: string, siteId: string, nowMs: number): Promise<boolean> {
    if (!token || token.length > 2048) return false;
    try {
      const { payload } = await jwtVerify(token, this.key, {
        audience: AUDIENCE,
        subject: siteId,
        algorithms: ["HS256"],
        currentDate: new Date(nowMs),
      });
      return payload.tid === tenantId;
    } catch {
      return false;
    }
  }
}
