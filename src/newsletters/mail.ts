import { UUID_PATTERN } from "../core/document-schema";
import { SignedTokens } from "../infra/signed-token";
import type { Mail } from "../mail/outbox";

/** One-click unsubscribe links stay usable this long (mail is read late; RFC 8058 wants them to work). */
const UNSUBSCRIBE_TTL_SECONDS = 2 * 366 * 86_400;
const UUID = new RegExp(UUID_PATTERN);

export interface UnsubscribeClaims {
  readonly tenantId: string;
  readonly siteId: string;
  readonly userId: string;
  readonly listId: string;
}

/**
 * The one-click unsubscribe link's token: an HS256 JWT under SVC_SECRET (purpose
 * `newsletter-unsubscribe`) naming the tenant, site, list and user. Nothing is stored, so a link
 * in any mail, ours or the vendor's, keeps working; it can only ever unsubscribe.
 */
export class UnsubscribeTokens {
  private readonly tokens: SignedTokens;

  constructor(secret: string) {
    this.tokens = new SignedTokens(secret, "newsletter-unsubscribe");
  }

  async url(linkBase: string, claims: UnsubscribeClaims & { now: number }): Promise<string> {
    const issued = Math.floor(claims.now / 1000);
    const token = await this.tokens.sign(
      { t: claims.tenantId, s: claims.siteId, l: claims.listId },
      claims.userId,
      issued,
      issued + UNSUBSCRIBE_TTL_SECONDS,
    );
    return `${linkBase}/newsletters/unsubscribe?token=${token}`;
  }

  async verify(token: string, nowMs: number): Promise<UnsubscribeClaims | null> {
    const payload = await this.tokens.verify(token, nowMs);
    if (payload === null) return null;
    const { t, s, l, sub } = payload as { t?: unknown; s?: unknown; l?: unknown; sub?: unknown };
    if (typeof t !== "string" || typeof s !== "string" || typeof l !== "string" || typeof sub !== "string") return null;
    if (!UUID.test(l) || !UUID.test(sub)) return null;
    return { tenantId: t, siteId: s, listId: l, userId: sub };
  }
}

/** RFC 8058 headers: every newsletter mail the service sends carries them. */
function oneClickHeaders(unsubscribeUrl: string): Record<string, string> {
  return {
    "List-Unsubscribe": `<${unsubscribeUrl}>`,
    "List-Unsubscribe-Post": "List-Unsubscribe=One-Click",
  };
}

/** The double opt-in mail: one per pending list and per send, with a fresh link. */
export function confirmationMail(input: {
  tenantId: string;
  to: string;
  label: string;
  confirmUrl: string;
  unsubscribeUrl: string;
}): Mail {
  return {
    tenantId: input.tenantId,
    to: input.to,
    subject: `Confirm your subscription to ${input.label}`,
    text:
      `Please confirm that you want to receive ${input.label}:\n\n${input.confirmUrl}\n\n` +
      "The link works for 7 days. If you did not ask for this, ignore this message: nothing will be sent.\n\n" +
      `To stop these messages: ${input.unsubscribeUrl}\n`,
    headers: oneClickHeaders(input.unsubscribeUrl),
  };
}
