import { t } from "elysia";

const count = t.Integer({ minimum: 0 });
const version = t.Union([t.Integer(), t.Null()]);

/** GET /admin/tenants/:tenant/sites/:site/impact (replay.ts `ImpactReport`): counts and labels only. */
export const ImpactAnswer = t.Object({
  samples: count,
  liveVersion: version,
  stagedVersion: version,
  features: t.Array(
    t.Object({
      name: t.String(),
      answered: count,
      changed: count,
      transitions: t.Array(t.Object({ from: t.String(), to: t.String(), count })),
    }),
  ),
});
