import { t } from "elysia";

/** One change notice: the CMS id of a story or author; `type` absent means story. */
const SyncEvent = t.Object(
  {
    id: t.String({ minLength: 1, maxLength: 255 }),
    type: t.Optional(t.String({ minLength: 1, maxLength: 64 })),
  },
  { additionalProperties: false },
);

/** `POST /v1/content/sync`: ids only, never content; at most 1,000 events (422 past it). */
export const SyncBody = t.Object({ events: t.Array(SyncEvent, { maxItems: 1000 }) }, { additionalProperties: false });

export const SyncReply = t.Object({ success: t.Boolean() });

export const ContentItemParams = t.Object({
  tenant: t.String({ minLength: 1, maxLength: 64 }),
  site: t.String({ minLength: 1, maxLength: 128 }),
  id: t.String({ minLength: 1, maxLength: 255 }),
});
