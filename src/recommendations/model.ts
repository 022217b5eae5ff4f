import { t } from "elysia";

/** Engine ids (users, devices, items): Recombee's id alphabet, so a path never carries anything else. */
const engineId = t.String({ minLength: 1, maxLength: 128, pattern: "^[A-Za-z0-9_:@.\\-]+$" });
/** Printable text: no control characters reach a filter. */
const printable = (maxLength: number) => t.String({ minLength: 1, maxLength, pattern: "^[^\\u0000-\\u001f\\u007f]*$" });
/** A comma-separated list (each value 1 to 200 characters, at most 50). */
const list = t.Optional(printable(4000));
const instant = t.Optional(
  t.String({ pattern: "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d{1,9})?)?(Z|[+-]\\d{2}:\\d{2})$" }),
);

/**
 * Query of both recommendation mounts. `userId` is the keyed mount's only (the browser mount
 * answers 400 for it). The feed filters: docs/recommendations.md.
 */
export const RecommendationsQuery = t.Object({
  scenario: t.Optional(printable(200)),
  count: t.Optional(t.Integer({ minimum: 1, maximum: 50 })),
  userId: t.Optional(engineId),
  domainUserId: t.Optional(engineId),
  edition: t.Optional(t.String({ maxLength: 200 })),
  itemId: t.Optional(engineId),
  sections: list,
  tags: list,
  authors: list,
  types: list,
  excludeSections: list,
  excludeTags: list,
  excludeTypes: list,
  languages: list,
  publishedAfter: instant,
  publishedBefore: instant,
  excludeViewed: t.Optional(t.Union([t.Literal("true"), t.Literal("false")])),
});

const RecommendedItem = t.Object({
  id: t.String(),
  headline: t.String(),
  description: t.String(),
  image: t.String(),
  url: t.String(),
  publishedAt: t.Union([t.String(), t.Null()]),
});

export const RecommendationsReply = t.Object({
  recommId: t.Union([t.String(), t.Null()]),
  items: t.Array(RecommendedItem),
});

/** GET /admin/tenants/:tenant/recommendations/usage: engine calls per UTC month. */
export const RecommendationUsageAnswer = t.Object({
  tenant: t.String(),
  usage: t.Array(t.Object({ period: t.String({ description: "A UTC month, YYYY-MM." }), calls: t.Integer() })),
});
