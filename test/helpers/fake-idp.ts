import { exportJWK, generateKeyPair, type JWTPayload, SignJWT } from "jose";

export type IdpMode = "ok" | "slow" | "rate_limited" | "error";

/**
 * A real identity provider on 127.0.0.1: serves a JWKS over HTTP and signs tokens with its
 * private key. It can be made slow, rate-limiting (429), broken (500) or stopped (down).
 */
export async function startFakeIdp(options: { slowMs?: number } = {}) {
  const { publicKey, privateKey } = await generateKeyPair("RS256");
  const jwk = { ...(await exportJWK(publicKey)), kid: "idp-key-1", alg: "RS256", use: "sig" };
  const state = { mode: "ok" as IdpMode, jwksHits: 0, traceparents: [] as (string | null)[] };
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      if (new URL(request.url).pathname !== "/.well-known/jwks.json") return new Response("not found", { status: 404 });
      state.jwksHits++;
      state.traceparents.push(request.headers.get("traceparent"));
      if (state.mode === "slow") await Bun.sleep(options.slowMs ?? 2_000);
      if (state.mode === "rate_limited")
        return new Response("slow down", { status: 429, headers: { "retry-after": "17" } });
      if (state.mode === "error") return new Response("boom", { status: 500 });
      return Response.json({ keys: [jwk] });
    },
  });
  const issuer = `http://127.0.0.1:${server.port}`;
  return {
    issuer,
    jwksUrl: `${issuer}/.well-known/jwks.json`,
    state,
    /** A credential as the upstream login would issue it. */
    async token(
      claims: JWTPayload & { sub: string },
      opts: { audience?: string; expiresAtSeconds?: number; issuer?: string; nowMs?: number } = {},
    ) {
      const iat = Math.floor((opts.nowMs ?? Date.now()) / 1000);
      return new SignJWT(claims)
        .setProtectedHeader({ alg: "RS256", kid: "idp-key-1" })
        .setIssuer(opts.issuer ?? issuer)
        .setAudience(opts.audience ?? "news-web")
        .setIssuedAt(iat)
        .setExpirationTime(opts.expiresAtSeconds ?? iat + 3600)
        .sign(privateKey);
    },
    /** A token signed by a key the provider never published. */
    async forged(claims: JWTPayload & { sub: string }) {
      const other = await generateKeyPair("RS256");
      return new SignJWT(claims)
        .setProtectedHeader({ alg: "RS256", kid: "idp-key-1" })
        .setIssuer(issuer)
        .setAudience("news-web")
        .setIssuedAt()
        .setExpirationTime("1h")
        .sign(other.privateKey);
    },
    stop: () => server.stop(true),
  };
}

export type FakeIdp = Awaited<ReturnType<typeof startFakeIdp>>;
