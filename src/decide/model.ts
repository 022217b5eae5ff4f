import { t } from "elysia";
import { isStorableText } from "../core/text";
import { unstorableText } from "../http/json-shape";

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
  /** The page's `?_gt` token verbatim; any value is accepted (an unusable one reads as no gift: docs/gift-links.md). */
  giftLink: t.Optional(t.String()),
});

export type DecideInput = typeof DecideBody.static;

/**
 * Refuses (422) a subject Postgres could not store: the only members of a decide body that reach
 * storage (as meter subjects). The keyed route checks just these rather than walking the whole
 * body on the hot path; Elysia routes check every string of every body (`jsonBody`).
 */
export function checkSubjects(input: DecideInput): void {
  if (input.userId !== undefined && !isStorableText(input.userId)) throw unstorableText("/userId");
  if (input.deviceId !== undefined && !isStorableText(input.deviceId)) throw unstorableText("/deviceId");
}
