import { randomUUID } from "node:crypto";
import { and, asc, eq, gt, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { invitations, memberships, organizations, sessions, users } from "../../db/schema";
import type { OrgClaims } from "../identity/service";
import { DEFAULT_READ_DEADLINE_MS, withinDeadline } from "../infra/deadline";
import type { Tx } from "../mail-budget/store";

export type OrganizationRow = typeof organizations.$inferSelect;
export type MembershipRow = typeof memberships.$inferSelect;
export type InvitationRow = typeof invitations.$inferSelect;
export interface MemberUser {
  readonly id: string;
  readonly email: string;
  readonly name: string | null;
}
export type MemberRow = MembershipRow & { readonly user: MemberUser };

/** Most organizations the access cookie names (a cookie has a size limit; docs/organizations.md). */
export const MAX_ORGS_IN_COOKIE = 50;

/**
 * The access cookie's organizations from a user's seats, oldest first: the active organization
 * (when a seat in it is held) first, then the others up to MAX_ORGS_IN_COOKIE. Both stores build
 * claims with it.
 */
export function claimsOf(
  seats: readonly { id: string; slug: string; role: string }[],
  activeOrganizationId: string | null,
): OrgClaims {
  const orgs: Record<string, string> = {};
  let activeOrg: OrgClaims["activeOrg"] = null;
  const active = seats.find((seat) => seat.id === activeOrganizationId);
  if (active !== undefined) {
    activeOrg = { id: active.id, slug: active.slug };
    orgs[active.id] = active.role;
  }
  let named = active === undefined ? 0 : 1;
  for (const seat of seats) {
    if (named >= MAX_ORGS_IN_COOKIE) break;
    if (seat === active) continue;
    orgs[seat.id] = seat.role;
    named++;
  }
  return { orgs, activeOrg };
}

/** A new organization's own values (its first owner is named apart). */
export interface NewOrganization {
  name: string;
  slug: string;
  logo: string | null;
}

/** What may change of an organization: its name, and its logo when given. */
export interface OrganizationChange {
  name: string;
  logo?: string | null;
}

/** A new organization with its first owner. */
export interface CreatedOrganization {
  organization: OrganizationRow;
  owner: MemberRow;
}

/** A new invitation's values: who invites which address into which organization, as what, until when. */
export interface NewInvitation {
  tenantId: string;
  organizationId: string;
  email: string;
  role: string;
  inviterId: string;
  expiresAt: Date;
}

/** A new invitation and the pending one it superseded, if any. */
export interface Invited {
  invitation: InvitationRow;
  superseded: InvitationRow | null;
}

/** An accepted invitation and the seat it gave. */
export interface Accepted {
  invitation: InvitationRow;
  membership: MembershipRow;
}

/**
 * Organizations, memberships and invitations (tenant-wide): Postgres behind this interface, or
 * the in-memory twin. Every lookup names the tenant, so an id of another tenant reads as unknown.
 */
export interface OrgStore {
  /** A new organization with its first owner (the user created when new); null when the slug is taken in the tenant. */
  createOrganization(
    tenantId: string,
    values: NewOrganization,
    ownerEmail: string,
  ): Promise<CreatedOrganization | null>;
  /** By slug. */
  listOrganizations(tenantId: string): Promise<OrganizationRow[]>;
  organization(tenantId: string, id: string): Promise<OrganizationRow | undefined>;
  updateOrganization(id: string, values: OrganizationChange): Promise<OrganizationRow>;
  membershipOf(tenantId: string, organizationId: string, userId: string): Promise<MembershipRow | undefined>;
  member(organizationId: string, by: { id: string } | { email: string }): Promise<MemberRow | undefined>;
  /** Oldest seat first. */
  listMembers(organizationId: string): Promise<MemberRow[]>;
  ownerCount(organizationId: string): Promise<number>;
  setRole(memberId: string, role: string): Promise<void>;
  /** Frees a seat exactly once and clears it as the active organization of the user's sessions. */
  removeMember(member: MembershipRow): Promise<boolean>;
  setActive(sessionId: string, organizationId: string | null): Promise<void>;
  /** What the access cookie carries: the user's roles (at most MAX_ORGS_IN_COOKIE, the active one first) and the active organization. */
  claims(tenantId: string, userId: string, activeOrganizationId: string | null): Promise<OrgClaims>;
  /**
   * A new pending invitation, superseding (canceling) a pending one for the same address; `then`
   * runs once the row is in, and what it throws undoes the invitation.
   */
  invite(values: NewInvitation, then?: (tx: Tx, done: Invited) => Promise<void>): Promise<Invited>;
  invitation(tenantId: string, id: string): Promise<InvitationRow | undefined>;
  /** Oldest first. */
  listInvitations(organizationId: string): Promise<InvitationRow[]>;
  /** Accepts a pending, unexpired invitation for `email` with the seat (a seated user keeps their role); null when not pending or expired. */
  accept(tenantId: string, id: string, email: string, userId: string, now: Date): Promise<Accepted | null>;
  /** Moves a pending invitation to `rejected` or `canceled` (compare-and-set); null if it was not pending. */
  close(tenantId: string, id: string, status: "rejected" | "canceled", email?: string): Promise<InvitationRow | null>;
}

const memberColumns = {
  id: memberships.id,
  tenantId: memberships.tenantId,
  organizationId: memberships.organizationId,
  userId: memberships.userId,
  role: memberships.role,
  createdAt: memberships.createdAt,
  user: { id: users.id, email: users.email, name: users.name },
};

/**
 * Postgres-backed organizations, memberships and invitations (tenant-wide). Every lookup names
 * the tenant, so an id of another tenant reads as unknown. State moves of invitations are
 * compare-and-set from `pending` (UPDATE ... WHERE status = 'pending' RETURNING): of concurrent
 * callers exactly one moves a row.
 */
export class DrizzleOrgStore implements OrgStore {
  constructor(
    private readonly db: Db,
    private readonly readDeadlineMs = DEFAULT_READ_DEADLINE_MS,
  ) {}

  private read<T>(query: Promise<T>): Promise<T> {
    return withinDeadline(query, this.readDeadlineMs);
  }

  /**
   * A new organization with its first owner, the user with `ownerEmail` (created when new), in
   * one transaction; null when the slug is taken in the tenant, and then nothing is written.
   */
  async createOrganization(
    tenantId: string,
    values: NewOrganization,
    ownerEmail: string,
  ): Promise<CreatedOrganization | null> {
    const email = ownerEmail.trim().toLowerCase();
    return this.db.transaction(async (tx) => {
      const [organization] = await tx
        .insert(organizations)
        .values({ id: randomUUID(), tenantId, ...values })
        .onConflictDoNothing()
        .returning();
      if (!organization) return null;
      await tx.insert(users).values({ id: randomUUID(), tenantId, email }).onConflictDoNothing();
      const [user] = await tx
        .select({ id: users.id, email: users.email, name: users.name })
        .from(users)
        .where(and(eq(users.tenantId, tenantId), eq(users.email, email)));
      if (!user) throw new Error("owner neither inserted nor found");
      const [owner] = await tx
        .insert(memberships)
        .values({ id: randomUUID(), tenantId, organizationId: organization.id, userId: user.id, role: "owner" })
        .returning();
      if (!owner) throw new Error("membership insert returned no row");
      return { organization, owner: { ...owner, user } };
    });
  }

  async listOrganizations(tenantId: string): Promise<OrganizationRow[]> {
    return this.read(
      this.db
        .select()
        .from(organizations)
        .where(eq(organizations.tenantId, tenantId))
        .orderBy(asc(organizations.slug))
        .execute(),
    );
  }

  async organization(tenantId: string, id: string): Promise<OrganizationRow | undefined> {
    const [row] = await this.read(
      this.db
        .select()
        .from(organizations)
        .where(and(eq(organizations.tenantId, tenantId), eq(organizations.id, id)))
        .execute(),
    );
    return row;
  }

  async updateOrganization(id: string, values: OrganizationChange): Promise<OrganizationRow> {
    const [row] = await this.db.update(organizations).set(values).where(eq(organizations.id, id)).returning();
    if (!row) throw new Error("organization vanished");
    return row;
  }

  /** The caller's seat in an organization of the tenant, or undefined. */
  async membershipOf(tenantId: string, organizationId: string, userId: string): Promise<MembershipRow | undefined> {
    const [row] = await this.read(
      this.db
        .select()
        .from(memberships)
        .where(
          and(
            eq(memberships.tenantId, tenantId),
            eq(memberships.organizationId, organizationId),
            eq(memberships.userId, userId),
          ),
        )
        .execute(),
    );
    return row;
  }

  /** A member of the organization by membership id, or by the user's address. */
  async member(organizationId: string, by: { id: string } | { email: string }): Promise<MemberRow | undefined> {
    const match = "id" in by ? eq(memberships.id, by.id) : eq(users.email, by.email.trim().toLowerCase());
    const [row] = await this.read(
      this.db
        .select(memberColumns)
        .from(memberships)
        .innerJoin(users, eq(users.id, memberships.userId))
        .where(and(eq(memberships.organizationId, organizationId), match))
        .execute(),
    );
    return row;
  }

  async listMembers(organizationId: string): Promise<MemberRow[]> {
    return this.read(
      this.db
        .select(memberColumns)
        .from(memberships)
        .innerJoin(users, eq(users.id, memberships.userId))
        .where(eq(memberships.organizationId, organizationId))
        .orderBy(asc(memberships.createdAt), asc(memberships.id))
        .execute(),
    );
  }

  async ownerCount(organizationId: string): Promise<number> {
    const [row] = await this.db
      .select({ n: sql<number>`count(*)::int` })
      .from(memberships)
      .where(and(eq(memberships.organizationId, organizationId), eq(memberships.role, "owner")));
    return Number(row?.n ?? 0);
  }

  async setRole(memberId: string, role: string): Promise<void> {
    await this.db.update(memberships).set({ role }).where(eq(memberships.id, memberId));
  }

  /**
   * Frees a seat: deletes the membership (exactly once: a retry finds nothing) and clears the
   * organization as the active one of the user's sessions. The user, their record and their own
   * grants stay.
   */
  async removeMember(member: MembershipRow): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const gone = await tx.delete(memberships).where(eq(memberships.id, member.id)).returning({ id: memberships.id });
      if (gone.length === 0) return false;
      await tx
        .update(sessions)
        .set({ activeOrganizationId: null })
        .where(and(eq(sessions.userId, member.userId), eq(sessions.activeOrganizationId, member.organizationId)));
      return true;
    });
  }

  async setActive(sessionId: string, organizationId: string | null): Promise<void> {
    await this.db.update(sessions).set({ activeOrganizationId: organizationId }).where(eq(sessions.id, sessionId));
  }

  /** What the access cookie carries: the user's roles and the active organization, if a seat is held. */
  async claims(tenantId: string, userId: string, activeOrganizationId: string | null): Promise<OrgClaims> {
    const rows = await this.read(
      this.db
        .select({ id: organizations.id, slug: organizations.slug, role: memberships.role })
        .from(memberships)
        .innerJoin(organizations, eq(organizations.id, memberships.organizationId))
        .where(and(eq(memberships.tenantId, tenantId), eq(memberships.userId, userId)))
        .orderBy(asc(memberships.createdAt), asc(memberships.id))
        .execute(),
    );
    return claimsOf(rows, activeOrganizationId);
  }

  /**
   * A new pending invitation; a pending one for the same address is superseded (canceled) in the
   * same transaction. Returns the new row and the one it superseded, if any. Invites for one
   * address are serialised by an advisory lock; the unique index on pending (organization,
   * address) is the backstop: an insert that loses anyway tries again. `then` runs in the same
   * transaction once the row is in (the invitation's mail budget and outbox row); what it throws
   * rolls the invitation back.
   */
  async invite(
    values: NewInvitation,
    then: (tx: Tx, done: Invited) => Promise<void> = async () => {},
  ): Promise<Invited> {
    for (let attempt = 0; attempt < 5; attempt++) {
      const done = await this.db.transaction(async (tx) => {
        // Invites for one address take turns (released at commit), so a burst supersedes in order.
        await tx.execute(
          sql`select pg_advisory_xact_lock(hashtext(${`${values.organizationId}\u0001${values.email}`}))`,
        );
        const [superseded] = await tx
          .update(invitations)
          .set({ status: "canceled" })
          .where(
            and(
              eq(invitations.organizationId, values.organizationId),
              eq(invitations.email, values.email),
              eq(invitations.status, "pending"),
            ),
          )
          .returning();
        const [invitation] = await tx
          .insert(invitations)
          .values({ id: randomUUID(), ...values })
          .onConflictDoNothing()
          .returning();
        if (!invitation) return null;
        const done = { invitation, superseded: superseded ?? null };
        await then(tx, done);
        return done;
      });
      if (done) return done;
    }
    throw new Error("invitation insert kept losing to concurrent invites");
  }

  async invitation(tenantId: string, id: string): Promise<InvitationRow | undefined> {
    const [row] = await this.read(
      this.db
        .select()
        .from(invitations)
        .where(and(eq(invitations.tenantId, tenantId), eq(invitations.id, id)))
        .execute(),
    );
    return row;
  }

  async listInvitations(organizationId: string): Promise<InvitationRow[]> {
    return this.read(
      this.db
        .select()
        .from(invitations)
        .where(eq(invitations.organizationId, organizationId))
        .orderBy(asc(invitations.createdAt), asc(invitations.id))
        .execute(),
    );
  }

  /**
   * Accepts a pending, unexpired invitation for `email`: compare-and-set from `pending`, and the
   * seat in the same transaction (a user already seated keeps their role). Null when another
   * caller moved it first, or it expired.
   */
  async accept(tenantId: string, id: string, email: string, userId: string, now: Date): Promise<Accepted | null> {
    return this.db.transaction(async (tx) => {
      const [invitation] = await tx
        .update(invitations)
        .set({ status: "accepted" })
        .where(
          and(
            eq(invitations.tenantId, tenantId),
            eq(invitations.id, id),
            eq(invitations.email, email),
            eq(invitations.status, "pending"),
            gt(invitations.expiresAt, now),
          ),
        )
        .returning();
      if (!invitation) return null;
      await tx
        .insert(memberships)
        .values({
          id: randomUUID(),
          tenantId,
          organizationId: invitation.organizationId,
          userId,
          role: invitation.role,
        })
        .onConflictDoNothing();
      const [membership] = await tx
        .select()
        .from(memberships)
        .where(and(eq(memberships.organizationId, invitation.organizationId), eq(memberships.userId, userId)));
      if (!membership) throw new Error("membership neither inserted nor found");
      return { invitation, membership };
    });
  }

  /** Moves a pending invitation to `rejected` or `canceled` (compare-and-set); null if it was not pending. */
  async close(
    tenantId: string,
    id: string,
    status: "rejected" | "canceled",
    email?: string,
  ): Promise<InvitationRow | null> {
    const [row] = await this.db
      .update(invitations)
      .set({ status })
      .where(
        and(
          eq(invitations.tenantId, tenantId),
          eq(invitations.id, id),
          eq(invitations.status, "pending"),
          ...(email === undefined ? [] : [eq(invitations.email, email)]),
        ),
      )
      .returning();
    return row ?? null;
  }
}
