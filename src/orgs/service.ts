import type { SessionRow } from "../identity/store";
import { AppError } from "../infra/errors";
import type { Outbox } from "../mail/outbox";
import { mailboxOf } from "../mail-budget/budgets";
import { type MailBudget, MailBudgetRefused } from "../mail-budget/mail-budget";
import type { UserRow } from "../users/store";
import { invitationMail } from "./invitation-mail";
import type { InvitationRow, MemberRow, MembershipRow, OrganizationRow, OrgStore } from "./store";

export interface OrgDeps {
  readonly store: OrgStore;
  readonly outbox: Outbox;
  readonly now: () => number;
  readonly invitationTtlMs: number;
  /** The `invitation` mail budgets: per recipient mailbox, inviter, organization and site. */
  readonly mailBudget: MailBudget;
}

/** The signed-in caller of an organization route. */
export interface Caller {
  readonly tenantId: string;
  readonly session: SessionRow;
  readonly user: UserRow;
}

export const organizationJson = (o: OrganizationRow) => ({ id: o.id, name: o.name, slug: o.slug, logo: o.logo });

export const membershipJson = (m: MemberRow) => ({
  id: m.id,
  organizationId: m.organizationId,
  userId: m.userId,
  role: m.role,
  createdAt: m.createdAt.toISOString(),
  user: { id: m.user.id, email: m.user.email, name: m.user.name },
});

const invitationJson = (i: InvitationRow) => ({
  id: i.id,
  organizationId: i.organizationId,
  email: i.email,
  role: i.role,
  status: i.status,
  expiresAt: i.expiresAt.toISOString(),
});

const unknownOrganization = () => new AppError("not_found", "Unknown organization.");
const unknownMember = () => new AppError("not_found", "Unknown member.");
const unknownInvitation = () => new AppError("not_found", "Unknown invitation.");
const managersOnly = () => new AppError("forbidden", "Only the organization's owners and admins can do this.");

const isManager = (role: string) => role === "owner" || role === "admin";

/**
 * The organization a request acts on: the one named, else the session's active one (400 when
 * neither). An organization of another tenant, or one the caller holds no seat in, is 404: its
 * existence is not revealed.
 */
async function seatOf(
  deps: OrgDeps,
  caller: Caller,
  organizationId: string | undefined,
): Promise<{ organization: OrganizationRow; seat: MembershipRow }> {
  const id = organizationId ?? caller.session.activeOrganizationId;
  if (!id) {
    throw new AppError("bad_request", "No organizationId was given and the session has no active organization.");
  }
  const organization = await deps.store.organization(caller.tenantId, id);
  if (!organization) throw unknownOrganization();
  const seat = await deps.store.membershipOf(caller.tenantId, id, caller.user.id);
  if (!seat) throw unknownOrganization();
  return { organization, seat };
}

async function managedBy(deps: OrgDeps, caller: Caller, organizationId: string | undefined) {
  const found = await seatOf(deps, caller, organizationId);
  if (!isManager(found.seat.role)) throw managersOnly();
  return found;
}

const lastOwner = () =>
  new AppError("forbidden", "An organization keeps at least one owner: make another owner first.");

/** POST /org/update-member-role: `admin` or `member` only; only owners change an owner. Safe to retry. */
export async function updateMemberRole(
  deps: OrgDeps,
  caller: Caller,
  input: { memberId: string; role: string; organizationId?: string },
) {
  const { organization, seat } = await managedBy(deps, caller, input.organizationId);
  const member = await deps.store.member(organization.id, { id: input.memberId });
  if (!member) throw unknownMember();
  if (member.role === "owner") {
    if (seat.role !== "owner") throw new AppError("forbidden", "Only an owner can change an owner's role.");
    if ((await deps.store.ownerCount(organization.id)) <= 1) throw lastOwner();
  }
  if (member.role !== input.role) await deps.store.setRole(member.id, input.role);
  return membershipJson({ ...member, role: input.role });
}

/**
 * POST /org/invite-member: a pending invitation; a pending one for the address is superseded
 * (canceled, new id). Mail goes out for a new invitation, or for a re-invite when the earlier
 * one had expired or `resend` is true, from the `invitation` mail budgets (429 with Retry-After
 * when spent, and then nothing is written). `linkBase` is the trusted origin plus the mount.
 */
export async function inviteMember(
  deps: OrgDeps,
  caller: Caller,
  input: { email: string; role: string; organizationId?: string; resend?: boolean },
  mail: { siteId: string; linkBase: () => string },
) {
  const { organization } = await managedBy(deps, caller, input.organizationId);
  const email = input.email.trim().toLowerCase();
  if (await deps.store.member(organization.id, { email })) {
    throw new AppError("bad_request", "That address already holds a seat in the organization.");
  }
  // Built before anything is written: an untrusted origin is refused (400) with nothing changed.
  const linkBase = mail.linkBase();
  const now = deps.now();
  const days = Math.round(deps.invitationTtlMs / 86_400_000);
  let mailed = false;
  let rateLimit: Record<string, string> = {};
  let invitation: InvitationRow;
  try {
    ({ invitation } = await deps.store.invite(
      {
        tenantId: caller.tenantId,
        organizationId: organization.id,
        email,
        role: input.role,
        inviterId: caller.user.id,
        expiresAt: new Date(now + deps.invitationTtlMs),
      },
      // In the invitation's transaction: whether it mails is known only once the earlier one is
      // read, and a refused budget rolls the invitation back.
      async (tx, { invitation: row, superseded }) => {
        const earlierLive = superseded !== null && superseded.expiresAt.getTime() > now;
        if (earlierLive && input.resend !== true) return;
        rateLimit = await deps.mailBudget.takeIn(tx, "invitation", caller.tenantId, [
          ["mailbox", mailboxOf(email), 1],
          ["inviter", caller.user.id, 1],
          ["organization", organization.id, 1],
          ["site", mail.siteId, 1],
        ]);
        const query = new URLSearchParams({ id: row.id, site: mail.siteId });
        await deps.outbox.enqueueIn(
          tx,
          invitationMail({
            tenantId: caller.tenantId,
            to: email,
            role: input.role,
            days,
            link: `${linkBase}/org/invitation?${query}`,
            organizationName: organization.name,
            inviterName: caller.user.name,
            inviterEmail: caller.user.email,
          }),
        );
        mailed = true;
      },
    ));
  } catch (error) {
    if (error instanceof MailBudgetRefused) throw tooManyInvitations(error.retryAfterSeconds, error.rateLimit);
    throw error;
  }
  if (mailed) deps.outbox.kick();
  // The inviter's own budget in the draft's RateLimit fields, when this call mailed.
  return { body: invitationJson(invitation), rateLimit };
}

const tooManyInvitations = (retryAfterSeconds: number, rateLimit: Record<string, string>) =>
  new AppError(
    "rate_limited",
    "Too many invitations were mailed; try again later.",
    { retryAfterSeconds },
    {
      "retry-after": String(retryAfterSeconds),
      ...rateLimit,
    },
  );

/** POST /org/set-active: a seat the caller holds, or null to act as themselves. */
export async function setActive(deps: OrgDeps, caller: Caller, organizationId: string | null) {
  if (organizationId === null) {
    await deps.store.setActive(caller.session.id, null);
    return { session: { ...caller.session, activeOrganizationId: null }, body: { organization: null } };
  }
  const { organization } = await seatOf(deps, caller, organizationId);
  await deps.store.setActive(caller.session.id, organization.id);
  return {
    session: { ...caller.session, activeOrganizationId: organization.id },
    body: { organization: organizationJson(organization) },
  };
}

/** POST /org/update: name and logo (null clears it); the slug never changes. */
export async function updateOrganization(
  deps: OrgDeps,
  caller: Caller,
  input: { organizationId?: string; name: string; logo?: string | null },
) {
  const { organization } = await managedBy(deps, caller, input.organizationId);
  const updated = await deps.store.updateOrganization(organization.id, {
    name: input.name,
    ...(input.logo !== undefined ? { logo: input.logo } : {}),
  });
  return organizationJson(updated);
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * POST /org/remove-member: by membership id or address. Managers remove members (only owners
 * remove an owner); anyone removes themselves (leaves). The last owner stays. A retry after
 * success finds no member: 404.
 */
export async function removeMember(
  deps: OrgDeps,
  caller: Caller,
  input: { memberIdOrEmail: string; organizationId?: string },
) {
  const { organization, seat } = await seatOf(deps, caller, input.organizationId);
  const key = input.memberIdOrEmail.trim();
  const by = UUID.test(key) ? { id: key.toLowerCase() } : key.includes("@") ? { email: key } : null;
  const member = by === null ? undefined : await deps.store.member(organization.id, by);
  if (!member) throw unknownMember();
  const self = member.userId === caller.user.id;
  if (!self && !isManager(seat.role)) throw managersOnly();
  if (member.role === "owner") {
    if (!self && seat.role !== "owner") throw new AppError("forbidden", "Only an owner can remove an owner.");
    if ((await deps.store.ownerCount(organization.id)) <= 1) throw lastOwner();
  }
  if (!(await deps.store.removeMember(member))) throw unknownMember();
  return { success: true };
}

/** GET /org/list-members: any member may see who holds a seat. */
export async function listMembers(deps: OrgDeps, caller: Caller, organizationId: string | undefined) {
  const { organization } = await seatOf(deps, caller, organizationId);
  return { members: (await deps.store.listMembers(organization.id)).map(membershipJson) };
}

/** GET /org/list-invitations: managers only; expired and closed invitations stay listed. */
export async function listInvitations(deps: OrgDeps, caller: Caller, organizationId: string | undefined) {
  const { organization } = await managedBy(deps, caller, organizationId);
  return { invitations: (await deps.store.listInvitations(organization.id)).map(invitationJson) };
}

/** POST /org/cancel-invitation: a manager of the invitation's organization; pending only. */
export async function cancelInvitation(deps: OrgDeps, caller: Caller, invitationId: string) {
  const found = await deps.store.invitation(caller.tenantId, invitationId);
  if (!found) throw unknownInvitation();
  await managedBy(deps, caller, found.organizationId);
  const closed = await deps.store.close(caller.tenantId, invitationId, "canceled");
  if (!closed) throw unknownInvitation();
  return invitationJson(closed);
}

/** The invitation as its invitee sees it: addressed to the caller's verified address, else refused. */
async function addressedToCaller(deps: OrgDeps, caller: Caller, invitationId: string): Promise<InvitationRow> {
  const found = await deps.store.invitation(caller.tenantId, invitationId);
  if (!found) throw unknownInvitation();
  if (found.email !== caller.user.email.toLowerCase()) {
    throw new AppError("forbidden", "This invitation is for another address: sign in with the invited address.");
  }
  if (!caller.user.emailVerified) {
    throw new AppError("forbidden", "Your address is not verified: sign in by email link first.");
  }
  return found;
}

/**
 * POST /org/accept-invitation: by the invitee's own verified session. Exactly once: of
 * concurrent accepts one wins, the rest (and any retry) find no pending invitation (404).
 */
export async function acceptInvitation(deps: OrgDeps, caller: Caller, invitationId: string) {
  const found = await addressedToCaller(deps, caller, invitationId);
  const now = deps.now();
  if (found.status === "pending" && found.expiresAt.getTime() <= now) {
    throw new AppError("forbidden", "This invitation has expired: ask for a new one.");
  }
  const accepted = await deps.store.accept(caller.tenantId, invitationId, found.email, caller.user.id, new Date(now));
  if (!accepted) throw unknownInvitation();
  const member = await deps.store.member(accepted.invitation.organizationId, { id: accepted.membership.id });
  if (!member) throw unknownMember();
  return { invitation: invitationJson(accepted.invitation), member: membershipJson(member) };
}

/** POST /org/reject-invitation: by the invitee; pending only. */
export async function rejectInvitation(deps: OrgDeps, caller: Caller, invitationId: string) {
  const found = await addressedToCaller(deps, caller, invitationId);
  const closed = await deps.store.close(caller.tenantId, invitationId, "rejected", found.email);
  if (!closed) throw unknownInvitation();
  return invitationJson(closed);
}
