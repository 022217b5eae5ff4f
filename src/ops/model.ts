import { t } from "elysia";

/** GET /health. */
export const HealthAnswer = t.Object({ ok: t.Boolean() });

const Check = t.String({ description: "ok or failed (open set)." });

/** GET /ready, 200 and 503 alike (ready.ts `Readiness`). */
export const ReadinessAnswer = t.Object(
  {
    ready: t.Boolean(),
    checks: t.Object({ store: Check, loaded: Check, flush: Check }, { additionalProperties: true }),
  },
  { additionalProperties: true },
);

/** GET /admin/db/stats (`npm run svc -- db stats`). */
export const StoreStatsAnswer = t.Object({
  databaseBytes: t.Integer(),
  tables: t.Array(
    t.Object({
      table: t.String(),
      rows: t.Union([t.Number(), t.Null()], { description: "An estimate; null until first analysed." }),
      bytes: t.Integer(),
    }),
  ),
  readAt: t.String({ format: "date-time" }),
});
