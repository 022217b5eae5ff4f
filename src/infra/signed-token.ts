import { type JWTPayload, jwtVerify, SignJWT } from "jose";

/**
 * Short-lived HS256 JWTs under the service secret, one key per purpose (the purpose is mixed
 * into the key and is the audience), so a token minted for one use never verifies for another.
 */
export class SignedTokens {
  private readonly key: Uint8Array;
  private readonly audience: string;

  constructor(secret: string, purpose: string) {
    this.key = new TextEncoder().encode(`${purpose}:${secret}`);
    this.audience = `svc:${purpose}`;
  }

  sign(claims: JWTPayload, subject: string, issuedAtSeconds: number, expiresAtSeconds: number): Promise<string> {
    return new SignJWT(claims)
      .setProtectedHeader({ alg: "HS256", typ: "JWT" })
      .setSubject(subject)
      .setAudience(this.audience)
      .setIssuedAt(issuedAtSeconds)
      .setExpirationTime(expiresAtSeconds)
      .sign(this.key);
  }

  /** The payload of a valid, unexpired token (for `subject` when given); null otherwise. */
  async verify(token: string | null, nowMs: number, subject?: string): Promise<JWTPayload | null> {
    if (!token || token.length > 8192) return null;
    try {
      const { payload } = await jwtVerify(token, this.key, {
        audience: this.audience,
        subject,
        algorithms: ["HS256"],
        currentDate: new Date(nowMs),
      });
      return payload;
    } catch {
      return null;
    }
  }
}
