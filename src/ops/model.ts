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
