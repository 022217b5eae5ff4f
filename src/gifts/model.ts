import { t } from "elysia";
import { SiteParams } from "../admin/model";

const UUID = { format: "uuid", minLength: 36, maxLength: 36 } as const;

/** POST /v1/gift-links: a signed-in reader (the gifter) shares one article. */
export const MintGiftBody = t.Object({
  /** The gifter: a user of the tenant (the service's user id). */
  userId: t.String(UUID),
  /** The article's content id, as its signed descriptor names it (`id`). */
  contentId: t.String({ minLength: 1, maxLength: 512 }),
  /** Optional: the article's signed descriptor; it must verify and name `contentId`. */
  content: t.Optional(
    t.Object({
      payload: t.String({ maxLength: 65_536 }),
      signature: t.String({ maxLength: 512 }),
    }),
  ),
});

export const MintGiftReply = t.Object({
  /** The page's `?_gt=` value (at most 512 characters; URL-safe as is). */
  token: t.String(),
  giftId: t.String(),
  contentId: t.String(),
  expiresAt: t.String({ format: "date-time" }),
  /** Gifts the gifter may still mint this month. */
  remaining: t.Integer(),
});

/** POST /v1/gift-links/revoke: the gifter takes back one of their links. */
export const RevokeGiftBody = t.Object({
  userId: t.String(UUID),
  giftId: t.String(UUID),
});

export const RevokeGiftReply = t.Object({ giftId: t.String(), revoked: t.Literal(true) });

export const AdminGiftParams = t.Object({ ...SiteParams.properties, gift: t.String(UUID) });

export const AttributionReply = t.Object({
  gifters: t.Array(t.Object({ gifter: t.String(), mints: t.Integer(), redemptions: t.Integer() })),
  articles: t.Array(t.Object({ contentId: t.String(), mints: t.Integer(), redemptions: t.Integer() })),
});
