import { randomUUID } from "node:crypto";
import type { MemoryIdentityStore } from "../identity/memory-store";
import type { OrgClaims } from "../identity/service";
import { copyRow } from "../infra/memory-rows";
import type { Tx } from "../mail-budget/store";
import { UnknownUser } from "../users/memory-store";
import {
  type Accepted,
  type CreatedOrganization,
  claimsOf,
  type InvitationRow,
  type Invited,
  type MemberRow,
  type MembershipRow,
  type NewInvitation,
  type NewOrganization,
  type OrganizationChange,
  type OrganizationRow,
  type OrgStore,
} from "./store";

/** Stands for a transaction the twin does not have: any use of it throws, saying so. */
const noTransaction = new Proxy({} as Tx, {
  get() {
    throw new Error("the in-memory organization store has no transaction: construct it with one");
  },
});

/**
 * Organizations, memberships and invitations in memory, over the identity twin's users and
 * sessions (the drizzle store joins the same tables); held to the drizzle store by one contract
 * suite. Rows made in the same millisecond keep their insertion order, as Postgres's microsecond
 * `now()` does. `invite`'s `then` receives `tx` (by default one that throws on use).
 */
export class MemoryOrgStore implements OrgStore {
  private readonly organizations = new Map<string, OrganizationRow>();
  private readonly memberships = new Map<string, MembershipRow>();
  private readonly invitations = new Map<string, InvitationRow>();
  private readonly order = new Map<string, number>();

  constructor(
    private readonly identity: MemoryIdentityStore,
    private readonly tx: Tx = noTransaction,
  ) {}

  private stamp(id: string): Date {
    this.order.set(id, this.order.size);
    return new Date(this.identity.users.now());
  }

  private oldestFirst = (a: { id: string; createdAt: Date }, b: { id: string; createdAt: Date }): number =>
    a.createdAt.getTime() - b.createdAt.getTime() || (this.order.get(a.id) ?? 0) - (this.order.get(b.id) ?? 0);

  private withUser(membership: MembershipRow): MemberRow | undefined {
    const user = this.identity.users.rows.get(membership.userId);
    if (user === undefined) return undefined;
    return { ...copyRow(membership), user: { id: user.id, email: user.email, name: user.name } };
  }

  private seat(tenantId: string, organizationId: string, userId: string, role: string): MembershipRow {
    if (!this.identity.users.rows.has(userId)) throw new UnknownUser(userId);
    for (const m of this.memberships.values()) if (m.organizationId === organizationId && m.userId === userId) return m;
    const id = randomUUID();
    const row: MembershipRow = { id, tenantId, organizationId, userId, role, createdAt: this.stamp(id) };
    this.memberships.set(id, row);
    return row;
  }

  async createOrganization(
    tenantId: string,
    values: NewOrganization,
    ownerEmail: string,
  ): Promise<CreatedOrganization | null> {
    for (const o of this.organizations.values()) if (o.tenantId === tenantId && o.slug === values.slug) return null;
    const email = ownerEmail.trim().toLowerCase();
    const user = this.identity.users.byEmail(tenantId, email) ?? this.identity.users.insertUser(tenantId, email);
    const id = randomUUID();
    const organization: OrganizationRow = { id, tenantId, ...values, createdAt: this.stamp(id) };
    this.organizations.set(id, organization);
    const owner = this.withUser(this.seat(tenantId, id, user.id, "owner")) as MemberRow;
    return { organization: copyRow(organization), owner };
  }

  async listOrganizations(tenantId: string): Promise<OrganizationRow[]> {
    return [...this.organizations.values()]
      .filter((o) => o.tenantId === tenantId)
      .sort((a, b) => (a.slug < b.slug ? -1 : a.slug > b.slug ? 1 : 0))
      .map(copyRow);
  }

  async organization(tenantId: string, id: string): Promise<OrganizationRow | undefined> {
    const row = this.organizations.get(id);
    return row?.tenantId === tenantId ? copyRow(row) : undefined;
  }

  async updateOrganization(id: string, values: OrganizationChange): Promise<OrganizationRow> {
    const row = this.organizations.get(id);
    if (row === undefined) throw new Error("organization vanished");
    row.name = values.name;
    if (values.logo !== undefined) row.logo = values.logo;
    return copyRow(row);
  }

  async membershipOf(tenantId: string, organizationId: string, userId: string): Promise<MembershipRow | undefined> {
    for (const m of this.memberships.values())
      if (m.tenantId === tenantId && m.organizationId === organizationId && m.userId === userId) return copyRow(m);
    return undefined;
  }

  async member(organizationId: string, by: { id: string } | { email: string }): Promise<MemberRow | undefined> {
    const email = "email" in by ? by.email.trim().toLowerCase() : undefined;
    for (const m of this.memberships.values()) {
      if (m.organizationId !== organizationId) continue;
      const member = this.withUser(m);
      if (member === undefined) continue;
      if ("id" in by ? m.id === by.id : member.user.email === email) return member;
    }
    return undefined;
  }

  async listMembers(organizationId: string): Promise<MemberRow[]> {
    return [...this.memberships.values()]
      .filter((m) => m.organizationId === organizationId)
      .sort(this.oldestFirst)
      .flatMap((m) => this.withUser(m) ?? []);
  }

  async ownerCount(organizationId: string): Promise<number> {
    let n = 0;
    for (const m of this.memberships.values()) if (m.organizationId === organizationId && m.role === "owner") n++;
    return n;
  }

  async setRole(memberId: string, role: string): Promise<void> {
    const m = this.memberships.get(memberId);
    if (m !== undefined) m.role = role;
  }

  async removeMember(member: MembershipRow): Promise<boolean> {
    if (!this.memberships.delete(member.id)) return false;
    for (const s of this.identity.sessions.values())
      if (s.userId === member.userId && s.activeOrganizationId === member.organizationId) s.activeOrganizationId = null;
    return true;
  }

  async setActive(sessionId: string, organizationId: string | null): Promise<void> {
    const session = this.identity.sessions.get(sessionId);
    if (session !== undefined) session.activeOrganizationId = organizationId;
  }

  async claims(tenantId: string, userId: string, activeOrganizationId: string | null): Promise<OrgClaims> {
    const rows = [...this.memberships.values()]
      .filter((m) => m.tenantId === tenantId && m.userId === userId)
      .sort(this.oldestFirst)
      .flatMap((m) => {
        const o = this.organizations.get(m.organizationId);
        return o === undefined ? [] : [{ id: o.id, slug: o.slug, role: m.role }];
      });
    return claimsOf(rows, activeOrganizationId);
  }

  async invite(
    values: NewInvitation,
    then: (tx: Tx, done: Invited) => Promise<void> = async () => {},
  ): Promise<Invited> {
    if (!this.organizations.has(values.organizationId)) throw new Error("organization does not exist");
    let superseded: InvitationRow | undefined;
    for (const i of this.invitations.values())
      if (i.organizationId === values.organizationId && i.email === values.email && i.status === "pending") {
        i.status = "canceled";
        superseded = i;
      }
    const id = randomUUID();
    const invitation: InvitationRow = {
      id,
      ...values,
      expiresAt: new Date(values.expiresAt.getTime()),
      status: "pending",
      createdAt: this.stamp(id),
    };
    this.invitations.set(id, invitation);
    const done = { invitation: copyRow(invitation), superseded: superseded === undefined ? null : copyRow(superseded) };
    try {
      await then(this.tx, done);
    } catch (error) {
      // As the drizzle store's transaction rolls back: the new row goes, the superseded one is pending again.
      this.invitations.delete(id);
      if (superseded !== undefined) superseded.status = "pending";
      throw error;
    }
    return done;
  }

  async invitation(tenantId: string, id: string): Promise<InvitationRow | undefined> {
    const row = this.invitations.get(id);
    return row?.tenantId === tenantId ? copyRow(row) : undefined;
  }

  async listInvitations(organizationId: string): Promise<InvitationRow[]> {
    return [...this.invitations.values()]
      .filter((i) => i.organizationId === organizationId)
      .sort(this.oldestFirst)
      .map(copyRow);
  }

  async accept(tenantId: string, id: string, email: string, userId: string, now: Date): Promise<Accepted | null> {
    const invitation = this.invitations.get(id);
    if (
      invitation === undefined ||
      invitation.tenantId !== tenantId ||
      invitation.email !== email ||
      invitation.status !== "pending" ||
      !(invitation.expiresAt > now)
    )
      return null;
    const membership = this.seat(tenantId, invitation.organizationId, userId, invitation.role);
    invitation.status = "accepted";
    return { invitation: copyRow(invitation), membership: copyRow(membership) };
  }

  async close(
    tenantId: string,
    id: string,
    status: "rejected" | "canceled",
    email?: string,
  ): Promise<InvitationRow | null> {
    const row = this.invitations.get(id);
    if (row === undefined || row.tenantId !== tenantId || row.status !== "pending") return null;
    if (email !== undefined && row.email !== email) return null;
    row.status = status;
    return copyRow(row);
  }
}
