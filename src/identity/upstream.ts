import { createRemoteJWKSet, customFetch, errors, type JWTPayload, jwtVerify } from "jose";
import { type Fetch, UNTRACED } from "../infra/tracing";

export interface IdentityProvider {
  readonly issuer: string;
  readonly jwksUrl: string;
}

export type UpstreamFailure = "missing" | "expired" | "invalid" | "unreachable" | "rate_limited";

export type UpstreamResult =
  | { readonly ok: true; readonly claims: JWTPayload & { sub: string } }
  | { readonly ok: false; readonly reason: UpstreamFailure; readonly retryAfterSeconds?: number };

class RateLimited extends Error {
  constructor(readonly retryAfterSeconds: number) {
    super("identity provider rate limited the JWKS request");
  }
}

/**
 * Verifies upstream credentials (JWTs) against a tenant's identity provider: its JWKS (fetched
 * and cached by jose, refetched on an unknown key id), its issuer and the site's audience.
 * Reports why a credential failed without ever saying it to the caller beyond the code.
 */
export class UpstreamVerifier {
  private readonly sets = new Map<string, ReturnType<typeof createRemoteJWKSet>>();

  constructor(
    private readonly timeoutMs: number,
    private readonly now: () => number,
    /** The JWKS fetch: traced when tracing is on (a client span, the trace context sent). */
    private readonly fetch: Fetch = UNTRACED.fetch("idp"),
  ) {}

  async verify(
    idp: IdentityProvider,
    token: string | null | undefined,
    audience: string | undefined,
  ): Promise<UpstreamResult> {
    if (!token) return { ok: false, reason: "missing" };
    try {
      const { payload } = await jwtVerify(token, this.keySet(idp.jwksUrl), {
        issuer: idp.issuer,
        audience,
        currentDate: new Date(this.now()),
        algorithms: ["RS256", "ES256", "PS256", "EdDSA", "RS384", "RS512", "ES384"],
      });
      if (typeof payload.sub !== "string" || payload.sub.length === 0 || payload.sub.length > 512) {
        return { ok: false, reason: "invalid" };
      }
      return { ok: true, claims: payload as JWTPayload & { sub: string } };
    } catch (error) {
      if (error instanceof RateLimited)
        return { ok: false, reason: "rate_limited", retryAfterSeconds: error.retryAfterSeconds };
      if (error instanceof errors.JWTExpired) return { ok: false, reason: "expired" };
      if (error instanceof errors.JWKSTimeout) return { ok: false, reason: "unreachable", retryAfterSeconds: 5 };
      if (error instanceof errors.JOSEError && error.code === "ERR_JOSE_GENERIC") {
        // jose's "Expected 200 OK from the JSON Web Key Set HTTP response" and similar.
        return { ok: false, reason: "unreachable", retryAfterSeconds: 5 };
      }
      if (error instanceof errors.JOSEError) return { ok: false, reason: "invalid" };
      // Anything else came from fetching the JWKS: connection refused, reset, DNS.
      return { ok: false, reason: "unreachable", retryAfterSeconds: 5 };
    }
  }

  private keySet(url: string): ReturnType<typeof createRemoteJWKSet> {
    let set = this.sets.get(url);
    if (!set) {
      set = createRemoteJWKSet(new URL(url), {
        timeoutDuration: this.timeoutMs,
        cooldownDuration: 30_000,
        cacheMaxAge: 10 * 60_000,
        [customFetch]: async (input, init) => {
          const response = await this.fetch(input, init);
          if (response.status === 429) {
            const header = Number(response.headers.get("retry-after"));
            throw new RateLimited(Number.isFinite(header) && header > 0 ? Math.ceil(header) : 30);
          }
          return response;
        },
      });
      this.sets.set(url, set);
    }
    return set;
  }
}
