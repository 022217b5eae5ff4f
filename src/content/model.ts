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

/** GET /admin/tenants/:tenant/sites/:site/content: item counts and the re-read queue. */
export const ContentStatsAnswer = t.Object({
  tenant: t.String(),
  site: t.String(),
  items: t.Integer(),
  deleted: t.Integer(),
  queue: t.Object({
    queued: t.Integer(),
    running: t.Integer(),
    dead: t.Integer(),
    depth: t.Integer({ description: "queued plus running: work still owed" }),
    oldest: t.Union([t.String({ format: "date-time" }), t.Null()]),
  }),
});

const text = t.Union([t.String(), t.Null()]);

/** GET /admin/tenants/:tenant/sites/:site/content/:id: one item as stored (docs/content.md). */
export const ContentItemAnswer = t.Object({
  item: t.Object({
    id: t.String(),
    type: t.String(),
    headline: text,
    description: text,
    image: text,
    url: text,
    publishedAt: text,
    sections: t.Array(t.String()),
    tags: t.Array(t.String()),
    authors: t.Array(t.Object({ id: t.String(), name: text })),
    contentType: text,
    language: text,
    deleted: t.Boolean(),
    cmsVersion: t.Number(),
    readAt: t.String({ format: "date-time" }),
  }),
});
