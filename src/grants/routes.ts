import { Elysia } from "elysia";
import { type JsonApiDeps, jsonApi } from "../http/error-plugins";
import type { Mount } from "../http/mounts";
import { type CredentialDeps, credentials } from "../identity/credentials";
import { GrantsReply } from "./model";
import { heldGrants } from "./service";

/** The grants route reads the user's grants and the clock through the credentials' deps. */
export type GrantRouteDeps = CredentialDeps;

/**
 * GET /v1/grants (both mounts): the signed-in user's own grants with their expiry. Session
 * cookie or a native client's bearer; an API key is refused (401), no session is 401. Grants
 * exist in every identity mode, so the route answers in every mode; at an `external_only` site
 * a caller has no service session, so it answers 401 there.
 */
export function grantRoutes(deps: GrantRouteDeps & JsonApiDeps, prefix: Mount) {
  const id = deps.identityDeps;
  return new Elysia({ prefix })
    .use(jsonApi(deps))
    .use(credentials(deps))
    .guard({ session: "any-mode" })
    .get(
      "/grants",
      async ({ site, user, set }) => {
        const rows = await id.users.listGrants(site.tenantId, user.id);
        // One user's answer: no shared cache may keep it.
        set.headers["cache-control"] = "private, no-store";
        return { grants: heldGrants(rows, deps.now()) };
      },
      { response: { 200: GrantsReply } },
    );
}
