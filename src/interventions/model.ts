import { t } from "elysia";

/** GET /v1/decide/interventions query: the subjects to hear about; absent: the whole site. */
export const InterventionsQuery = t.Object({
  subjects: t.Optional(
    t.String({
      minLength: 1,
      maxLength: 13_000,
      pattern: "^[^,]{1,128}(,[^,]{1,128}){0,99}$",
      description: "Up to 100 user or device ids, comma-separated. Absent: every subject of the site.",
      examples: ["0190c2a4-5b7e-7c3d-9a2b-3f4e5d6c7b8a,device-42"],
    }),
  ),
});

/** An event's `data` (the SSE `event` field repeats `type`). */
export const InterventionEventData = t.Union([
  t.Object({
    type: t.Literal("deploy"),
    site: t.String(),
    document: t.Union([t.Literal("live"), t.Literal("preview")]),
    version: t.Union([t.Integer(), t.Null()]),
  }),
  t.Object({ type: t.Literal("grants"), userId: t.String() }),
  t.Object({ type: t.Literal("gift"), giftId: t.String() }),
  t.Object({ type: t.Literal("streaming"), userIds: t.Array(t.String()) }),
  t.Object({ type: t.Literal("meter_period"), meter: t.String(), period: t.String() }),
  t.Object({ type: t.Literal("reset"), reason: t.Literal("resume_window_passed") }),
]);
