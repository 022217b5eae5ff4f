import { SignedTokens } from "../infra/signed-token";

export const PREVIEW_HEADER = "x-svc-preview";

/**
 * Short-lived, per-site preview tokens. A valid token makes decide evaluate the site's staged
 * document.
 */
export class PreviewTokens {
  private readonly tokens: SignedTokens;

  constructor(secret: string) {
    this.tokens = new SignedTokens(secret, "preview");
  }

  async mint(
    tenantId: string,
    siteId: string,
    ttlSeconds: number,
    nowMs: number,
  ): Promise<{ token: string; expiresAt: string }> {
    const iat = Math.floor(nowMs / 1000);
    const exp = iat + ttlSeconds;
    const token = await this.tokens.sign({ tid: tenantId }, siteId, iat, exp);
    return { token, expiresAt: new Date(exp * 1000).toISOString() };
  }

  /** True only for an unexpired token of this tenant's site; anything else is false, silently. */
  async verify(token: string | null, tenantId: string, siteId: string, nowMs: number): Promise<boolean> {
    const payload = await this.tokens.verify(token, nowMs, siteId);
    return payload?.tid === tenantId;
  }
}
