import { SignedTokens } from "../infra/signed-token";

/** What the signed access cookie carries: enough for browser routes to need no database read. */
export interface AccessClaims {
  readonly userId: string;
  readonly sessionId: string;
  readonly tenantId: string;
  readonly grants: readonly string[];
  /** organization id -> role */
  readonly orgs: Readonly<Record<string, string>>;
  /** The session's active organization (one the user holds a seat in), or null/absent for none. */
  readonly activeOrg?: { readonly id: string; readonly slug: string } | null;
}

/** How long an access cookie lives: the bound on revocation staleness. */
export const ACCESS_TTL_SECONDS = 15 * 60;

/** Signs and verifies the `svc.access` cookie (an HS256 JWT under the service secret). */
export class AccessTokens {
  private readonly tokens: SignedTokens;

  constructor(secret: string) {
    this.tokens = new SignedTokens(secret, "access");
  }

  /** Mints a token expiring in 15 minutes, or earlier when `notAfterMs` (session end, grant expiry) comes first. */
  async mint(
    claims: AccessClaims,
    nowMs: number,
    notAfterMs: number,
  ): Promise<{ token: string; maxAgeSeconds: number }> {
    const iat = Math.floor(nowMs / 1000);
    const exp = Math.min(iat + ACCESS_TTL_SECONDS, Math.floor(notAfterMs / 1000));
    const token = await this.tokens.sign(
      {
        sid: claims.sessionId,
        tid: claims.tenantId,
        grants: [...claims.grants],
        orgs: claims.orgs,
        ...(claims.activeOrg ? { ao: { id: claims.activeOrg.id, slug: claims.activeOrg.slug } } : {}),
      },
      claims.userId,
      iat,
      exp,
    );
    return { token, maxAgeSeconds: Math.max(0, exp - iat) };
  }

  /** The claims of a valid token for this tenant; null for anything else. */
  async verify(token: string | null, tenantId: string, nowMs: number): Promise<AccessClaims | null> {
    const payload = await this.tokens.verify(token, nowMs);
    if (!payload || payload.tid !== tenantId || typeof payload.sub !== "string" || typeof payload.sid !== "string") {
      return null;
    }
    const grants = Array.isArray(payload.grants)
      ? payload.grants.filter((g): g is string => typeof g === "string")
      : [];
    const orgs = payload.orgs && typeof payload.orgs === "object" ? (payload.orgs as Record<string, string>) : {};
    const ao = payload.ao as { id?: unknown; slug?: unknown } | undefined;
    const activeOrg =
      ao && typeof ao === "object" && typeof ao.id === "string" && typeof ao.slug === "string"
        ? { id: ao.id, slug: ao.slug }
        : null;
    return { userId: payload.sub, sessionId: payload.sid, tenantId, grants, orgs, activeOrg };
  }
}
