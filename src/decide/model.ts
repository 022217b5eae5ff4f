import { t } from "elysia";

/** POST /v1/decide body. Unknown members are accepted (v1 changes only additively). */
export const DecideBody = t.Object({
  features: t.Array(t.String({ minLength: 1, maxLength: 128 }), { maxItems: 100 }),
  content: t.Optional(
    t.Object({
      payload: t.String({ maxLength: 65_536 }),
      signature: t.String({ maxLength: 512 }),
    }),
  ),
  // Any object: accepts exactly what t.Record(t.String(), t.Unknown()) does for a JSON body, but
  // checks the type once instead of testing every key against a pattern on every request.
  context: t.Optional(t.Object({}, { additionalProperties: true })),
  userId: t.Optional(t.String({ minLength: 1, maxLength: 128 })),
  /** Anonymous device id (e.g. the tracker's domain user id): the subject when no userId. */
  deviceId: t.Optional(t.String({ minLength: 1, maxLength: 128 })),
  /** The page's `?_gt` token verbatim; any value is accepted (an unusable one reads as no gift). */
  giftLink: t.Optional(t.String()),
});

export type DecideInput = typeof DecideBody.static;
