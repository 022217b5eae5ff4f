import { type AnyElysia, Elysia } from "elysia";
import type { Config } from "../config";
import type { ClientAddresses } from "../http/client-address";
import { type JsonApiDeps, jsonApi } from "../http/error-plugins";
import type { Mount } from "../http/mounts";
import { ACCESS_COOKIE, setCookie } from "../identity/cookies";
import { type CredentialDeps, credentials, type SessionCredential } from "../identity/credentials";
import { trustedLinkOrigin } from "../identity/link-origin";
import { accessGrant, assertNotExternalOnly } from "../identity/service";
import type { Outbox } from "../mail/outbox";
import type { MailBudget } from "../mail-budget/mail-budget";
import { selectedSite } from "../sites/selection";
import { invitationPage } from "./invitation-page";
import {
  InvitationIdBody,
  InvitationPageQuery,
  InviteMemberBody,
  OrganizationQuery,
  RemoveMemberBody,
  SetActiveBody,
  UpdateMemberRoleBody,
  UpdateOrganizationBody,
} from "./model";
import {
  acceptInvitation,
  type Caller,
  cancelInvitation,
  inviteMember,
  listInvitations,
  listMembers,
  type OrgDeps,
  rejectInvitation,
  removeMember,
  setActive,
  updateMemberRole,
  updateOrganization,
} from "./service";
import type { OrgStore } from "./store";

/** What orgDepsOf reads of the process' dependencies. */
export interface OrgDepsSource {
  readonly orgs: OrgStore;
  readonly outbox: Outbox;
  readonly mailBudget: MailBudget;
  readonly now: () => number;
  readonly config: Pick<Config, "invitationTtlDays">;
}

/** The organization routes' deps: the credentials', the service's, and the service-wide origin for links. */
export interface OrgRouteDeps extends CredentialDeps, OrgDepsSource {
  readonly config: Pick<Config, "publicUrl" | "invitationTtlDays">;
  /** The origin a request reached (an invitation link's), behind the trusted proxies or not. */
  readonly clients: ClientAddresses;
}

/** What the organization service needs of the process' dependencies. */
function orgDepsOf(deps: OrgDepsSource): OrgDeps {
  return {
    store: deps.orgs,
    outbox: deps.outbox,
    mailBudget: deps.mailBudget,
    now: deps.now,
    invitationTtlMs: deps.config.invitationTtlDays * 86_400_000,
  };
}

/**
 * The organization routes of one mount (`/v1` or `/svc/v1`): the spec's five, plus listing,
 * invitation answers and the invitation page (docs/organizations.md). Session cookie or a native
 * client's bearer; an API key is refused (401). 404 at an `external_only` site. Typed as
 * `AnyElysia`: the mounts' builder erases route types anyway, and the full chain's type made
 * app.ts's union too complex for the compiler (TS2590).
 */
export function orgRoutes(deps: OrgRouteDeps & JsonApiDeps, prefix: Mount): AnyElysia {
  const org = orgDepsOf(deps);
  /** The caller the `session` credential resolved (site 400/404, mode 404 at external_only, session 401). */
  const callerOf = ({ site, session, user }: SessionCredential): Caller => ({
    tenantId: site.tenantId,
    session,
    user,
  });
  return (
    new Elysia({ prefix })
      .use(jsonApi(deps))
      .use(credentials(deps))
      .get(
        "/org/invitation",
        ({ request, query }) => {
          // A navigation from an email: the site comes from the link (no header possible).
          assertNotExternalOnly(selectedSite(deps.registry, request, query.site));
          return new Response(invitationPage({ prefix, site: query.site, id: query.id }), {
            headers: {
              "content-type": "text/html; charset=utf-8",
              "cache-control": "no-store",
              "referrer-policy": "no-referrer",
              "x-frame-options": "DENY",
            },
          });
        },
        { query: InvitationPageQuery },
      )
      // Every route below takes a session (a navigation to the page above needs none).
      .guard({ session: "identity" })
      .post("/org/update-member-role", (ctx) => updateMemberRole(org, callerOf(ctx), ctx.body), {
        body: UpdateMemberRoleBody,
      })
      .post(
        "/org/invite-member",
        async (ctx) => {
          const caller = callerOf(ctx);
          const { body, rateLimit } = await inviteMember(org, caller, ctx.body, {
            siteId: ctx.site.id,
            // The link keeps the mount the request used; its origin is one the tenant trusts.
            linkBase: () =>
              trustedLinkOrigin(
                deps.registry,
                deps.config.publicUrl,
                caller.tenantId,
                deps.clients.urlOf(ctx.server, ctx.request),
              ) + prefix,
          });
          Object.assign(ctx.set.headers, rateLimit);
          return body;
        },
        { body: InviteMemberBody },
      )
      .post(
        "/org/set-active",
        async (ctx) => {
          const caller = callerOf(ctx);
          const { session, body: answer } = await setActive(org, caller, ctx.body.organizationId);
          // A fresh access cookie, so decisions read the new active organization at once.
          const access = await accessGrant(deps.identityDeps, caller.tenantId, session);
          setCookie(ctx.cookie, ACCESS_COOKIE, access.token, access.maxAgeSeconds);
          // As this route always answered (Elysia's own default adds `;charset=utf-8`).
          ctx.set.headers["content-type"] = "application/json";
          return answer;
        },
        { body: SetActiveBody },
      )
      .post("/org/update", (ctx) => updateOrganization(org, callerOf(ctx), ctx.body), {
        body: UpdateOrganizationBody,
      })
      .post("/org/remove-member", (ctx) => removeMember(org, callerOf(ctx), ctx.body), {
        body: RemoveMemberBody,
      })
      .get("/org/list-members", (ctx) => listMembers(org, callerOf(ctx), ctx.query.organizationId), {
        query: OrganizationQuery,
      })
      .get("/org/list-invitations", (ctx) => listInvitations(org, callerOf(ctx), ctx.query.organizationId), {
        query: OrganizationQuery,
      })
      .post("/org/cancel-invitation", (ctx) => cancelInvitation(org, callerOf(ctx), ctx.body.invitationId), {
        body: InvitationIdBody,
      })
      .post("/org/accept-invitation", (ctx) => acceptInvitation(org, callerOf(ctx), ctx.body.invitationId), {
        body: InvitationIdBody,
      })
      .post("/org/reject-invitation", (ctx) => rejectInvitation(org, callerOf(ctx), ctx.body.invitationId), {
        body: InvitationIdBody,
      })
  );
}
