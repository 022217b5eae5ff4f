import { t } from "elysia";

/** One grant the signed-in user holds: its name and when it ends (null: never). */
const HeldGrant = t.Object({
  grant: t.String(),
  expiresAt: t.Union([t.String({ format: "date-time" }), t.Null()]),
});

/** `GET /v1/grants`: the user's own live grants, by name; expired ones are left out. */
export const GrantsReply = t.Object({ grants: t.Array(HeldGrant) });
