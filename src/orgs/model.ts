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

/** Answer models (spec, Resources: Organization, Membership, Invitation); documentation only. */
export const OrganizationAnswer = t.Object(
  {
    id: t.String({ format: "uuid" }),
    name: t.String(),
    slug: t.String({ description: "Cannot be changed through the API." }),
    logo: t.Union([t.String(), t.Null()]),
  },
  { additionalProperties: true },
);

export const MembershipAnswer = t.Object(
  {
    id: t.String({ format: "uuid" }),
    organizationId: t.String({ format: "uuid" }),
    userId: t.String({ format: "uuid" }),
    role: t.Union([t.String({ description: "owner, admin, member (open set)." }), t.Null()]),
    createdAt: t.Union([t.String(), t.Null()]),
    user: t.Object(
      { id: t.String({ format: "uuid" }), email: t.String(), name: t.Union([t.String(), t.Null()]) },
      { additionalProperties: true },
    ),
  },
  { additionalProperties: true },
);

export const InvitationAnswer = t.Object(
  {
    id: t.String({ format: "uuid" }),
    organizationId: t.String({ format: "uuid" }),
    email: t.String(),
    role: t.Union([t.String({ description: "owner, admin, member (open set)." }), t.Null()]),
    status: t.Union([t.String({ description: "pending, accepted, rejected, canceled (open set)." }), t.Null()]),
    expiresAt: t.Union([t.String(), t.Null()]),
  },
  { additionalProperties: true },
);

export const ActiveOrganizationAnswer = t.Object(
  { organization: t.Union([OrganizationAnswer, t.Null()]) },
  { additionalProperties: true },
);
export const MembersAnswer = t.Object({ members: t.Array(MembershipAnswer) }, { additionalProperties: true });
export const InvitationsAnswer = t.Object({ invitations: t.Array(InvitationAnswer) }, { additionalProperties: true });
export const AcceptedInvitationAnswer = t.Object(
  { invitation: InvitationAnswer, member: MembershipAnswer },
  { additionalProperties: true },
);
export const SuccessAnswer = t.Object({ success: t.Boolean() }, { additionalProperties: true });
export const OrganizationsAnswer = t.Object(
  { organizations: t.Array(OrganizationAnswer) },
  { additionalProperties: true },
);
export const CreatedOrganizationAnswer = t.Object(
  { organization: OrganizationAnswer, owner: MembershipAnswer },
  { additionalProperties: true },
);
