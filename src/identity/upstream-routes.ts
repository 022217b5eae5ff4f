import { Elysia } from "elysia";
import { type JsonApiDeps, jsonApi } from "../http/error-plugins";
import { type CredentialDeps, credentials } from "./credentials";
import { ChangeIdentifierBody, ChangeSubjectBody, EraseBody, RevokeSessionsBody } from "./model";
import { changeIdentifier, changeSubject, eraseUser, revokeSessions } from "./upstream-pushes";

/** The pushes read identity's stores through the credentials' deps. */
export type UpstreamPushRouteDeps = CredentialDeps;

/** POST /v1/id/upstream/*: the upstream system's pushes about its people (`/v1` only; a key of any of the tenant's sites). */
export function upstreamPushRoutes(deps: UpstreamPushRouteDeps & JsonApiDeps) {
  const id = deps.identityDeps;
  return new Elysia({ prefix: "/v1" })
    .use(jsonApi(deps))
    .use(credentials(deps))
    .guard({ apiKey: { anySiteOfTenant: true } })
    .post("/id/upstream/revoke-sessions", ({ site, body }) => revokeSessions(id, site.tenantId, body), {
      body: RevokeSessionsBody,
    })
    .post("/id/upstream/change-identifier", ({ site, body }) => changeIdentifier(id, site.tenantId, body), {
      body: ChangeIdentifierBody,
    })
    .post("/id/upstream/change-subject", ({ site, body }) => changeSubject(id, site.tenantId, body), {
      body: ChangeSubjectBody,
    })
    .post("/id/upstream/erase", ({ site, body }) => eraseUser(id, site.tenantId, body), { body: EraseBody });
}
