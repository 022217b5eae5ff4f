import { t } from "elysia";

/** Organization ids are uuids; the spec allows 1 to 128 characters for invite-member's. */
const organizationId = t.String({ format: "uuid", minLength: 1, maxLength: 128 });
const email = t.String({ format: "email", maxLength: 254 });
/** The roles these routes assign: `owner` is never assignable through the API (422). */
const assignableRole = t.Union([t.Literal("admin"), t.Literal("member")]);
const strict = { additionalProperties: false } as const;

export const UpdateMemberRoleBody = t.Object(
  { memberId: t.String({ format: "uuid" }), role: assignableRole, organizationId: t.Optional(organizationId) },
  strict,
);

export const InviteMemberBody = t.Object(
  { email, role: assignableRole, organizationId: t.Optional(organizationId), resend: t.Optional(t.Boolean()) },
  strict,
);

export const SetActiveBody = t.Object({ organizationId: t.Union([organizationId, t.Null()]) }, strict);

export const UpdateOrganizationBody = t.Object(
  {
    organizationId: t.Optional(organizationId),
    name: t.String({ minLength: 1, maxLength: 200 }),
    logo: t.Optional(t.Union([t.String({ minLength: 1, maxLength: 2048 }), t.Null()])),
  },
  strict,
);

export const RemoveMemberBody = t.Object(
  {
    /** A membership id (uuid) or the member's address. */
    memberIdOrEmail: t.String({ minLength: 1, maxLength: 254 }),
    organizationId: t.Optional(organizationId),
  },
  strict,
);

export const InvitationIdBody = t.Object({ invitationId: t.String({ format: "uuid" }) }, strict);

export const OrganizationQuery = t.Object({ organizationId: t.Optional(organizationId) });

export const InvitationPageQuery = t.Object({
  id: t.String({ format: "uuid" }),
  site: t.String({ minLength: 1, maxLength: 128 }),
});

/** Operator creation (admin API and `svc org create`). */
export const CreateOrganizationBody = t.Object(
  {
    name: t.String({ minLength: 1, maxLength: 200 }),
    slug: t.String({ pattern: "^[a-z0-9][a-z0-9-]{0,62}$" }),
    ownerEmail: email,
    logo: t.Optional(t.String({ minLength: 1, maxLength: 2048 })),
  },
  strict,
);
