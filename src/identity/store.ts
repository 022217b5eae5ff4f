import { randomUUID } from "node:crypto";
import { and, eq, gt, isNull, ne, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { identityConflicts, magicLinks, sessions, streamingValues, upstreamSubjects, users } from "../../db/schema";
import { DEFAULT_READ_DEADLINE_MS, withinDeadline } from "../infra/deadline";
import type { UserRow } from "../users/store";

export type SessionRow = typeof sessions.$inferSelect;
export type MagicLinkRow = typeof magicLinks.$inferSelect;
export type ConflictRow = typeof identityConflicts.$inferSelect;

/** A live session and its user. */
export interface SessionWithUser {
  session: SessionRow;
  user: UserRow;
}

/** A new magic link's values (its id is drawn by the store). */
export interface NewMagicLink {
  tenantId: string;
  siteId: string;
  email: string;
  tokenHash: string;
  expiresAt: Date;
}

/** A new identity conflict: the user, the other user already holding `value`, and which kind of value it is. */
export interface NewConflict {
  tenantId: string;
  kind: "email" | "subject";
  userId: string;
  collidingUserId: string;
  value: string;
}

/** What a profile update may set: the given fields only. */
export interface ProfileChange {
  name?: string;
  firstName?: string | null;
  lastName?: string | null;
  traits?: Record<string, unknown>;
}

/**
 * Sessions, magic links, upstream subject bindings and identity conflicts (and the writes to
 * users that sign-in makes): Postgres behind this interface, or the in-memory twin. A `db`
 * parameter is a caller's transaction on the drizzle store; the twin writes at once.
 */
export interface IdentityStore {
  createSession(tenantId: string, userId: string, tokenHash: string, expiresAt: Date): Promise<SessionRow>;
  /** A live session (expiring after `now`) and its user, by token hash. */
  sessionByToken(tenantId: string, tokenHash: string, now: Date): Promise<SessionWithUser | null>;
  extendSession(id: string, expiresAt: Date): Promise<void>;
  deleteSession(id: string): Promise<void>;
  /** How many sessions were ended. */
  deleteSessionsOfUser(tenantId: string, userId: string): Promise<number>;
  createMagicLink(row: NewMagicLink, db?: Db): Promise<void>;
  /** Consumes a live magic link atomically: of concurrent consumers exactly one gets the row. */
  consumeMagicLink(tenantId: string, tokenHash: string, now: Date): Promise<MagicLinkRow | null>;
  userByEmail(tenantId: string, email: string): Promise<UserRow | undefined>;
  /** The existing user with this address, or a new one; `verified` marks the address verified. */
  findOrCreateByEmail(tenantId: string, email: string, verified: boolean, db?: Db): Promise<UserRow>;
  userBySubject(tenantId: string, subject: string): Promise<UserRow | undefined>;
  /** Binds an upstream subject to a user; a subject already bound keeps its user. */
  bindSubject(tenantId: string, subject: string, userId: string): Promise<void>;
  /** Moves a binding to a new subject, in one transaction. */
  rebindSubject(tenantId: string, subject: string, newSubject: string, userId: string): Promise<void>;
  /** Another live (not erased) user holding the address, if any. */
  otherUserWithEmail(tenantId: string, email: string, userId: string): Promise<UserRow | undefined>;
  /** Refused (throws) when another user of the tenant holds the address. */
  changeEmail(userId: string, email: string, verified: boolean, changedAt: Date): Promise<UserRow>;
  recordConflict(row: NewConflict): Promise<void>;
  conflicts(tenantId: string): Promise<ConflictRow[]>;
  /** Anonymises a user in place (id and record kept), ends every session, drops streaming values. */
  erase(userId: string, now: Date): Promise<void>;
  updateProfile(userId: string, values: ProfileChange): Promise<UserRow>;
}

/**
 * Postgres-backed sessions, magic links, upstream subject bindings and identity conflicts. The
 * lookups requests await have a deadline (503 past it); writes have none, since a write past a
 * deadline may still commit.
 */
export class DrizzleIdentityStore implements IdentityStore {
  constructor(
    private readonly db: Db,
    private readonly readDeadlineMs = DEFAULT_READ_DEADLINE_MS,
  ) {}

  async createSession(tenantId: string, userId: string, tokenHash: string, expiresAt: Date): Promise<SessionRow> {
    const [row] = await this.db
      .insert(sessions)
      .values({ id: randomUUID(), tenantId, userId, tokenHash, expiresAt })
      .returning();
    if (!row) throw new Error("session insert returned no row");
    return row;
  }

  /** A live session and its user, by token hash. */
  async sessionByToken(tenantId: string, tokenHash: string, now: Date): Promise<SessionWithUser | null> {
    const [row] = await withinDeadline(
      this.db
        .select({ session: sessions, user: users })
        .from(sessions)
        .innerJoin(users, eq(users.id, sessions.userId))
        .where(and(eq(sessions.tokenHash, tokenHash), eq(sessions.tenantId, tenantId), gt(sessions.expiresAt, now)))
        .execute(),
      this.readDeadlineMs,
    );
    return row ?? null;
  }

  async extendSession(id: string, expiresAt: Date): Promise<void> {
    await this.db.update(sessions).set({ expiresAt }).where(eq(sessions.id, id));
  }

  async deleteSession(id: string): Promise<void> {
    await this.db.delete(sessions).where(eq(sessions.id, id));
  }

  async deleteSessionsOfUser(tenantId: string, userId: string): Promise<number> {
    const rows = await this.db
      .delete(sessions)
      .where(and(eq(sessions.tenantId, tenantId), eq(sessions.userId, userId)))
      .returning({ id: sessions.id });
    return rows.length;
  }

  async createMagicLink(row: NewMagicLink, db: Db = this.db): Promise<void> {
    await db.insert(magicLinks).values({ id: randomUUID(), ...row });
  }

  /** Consumes a magic link atomically: of concurrent consumers exactly one gets the row. */
  async consumeMagicLink(tenantId: string, tokenHash: string, now: Date): Promise<MagicLinkRow | null> {
    const [row] = await this.db
      .update(magicLinks)
      .set({ consumedAt: now })
      .where(
        and(
          eq(magicLinks.tokenHash, tokenHash),
          eq(magicLinks.tenantId, tenantId),
          isNull(magicLinks.consumedAt),
          gt(magicLinks.expiresAt, now),
        ),
      )
      .returning();
    return row ?? null;
  }

  async userByEmail(tenantId: string, email: string): Promise<UserRow | undefined> {
    const [row] = await withinDeadline(
      this.db
        .select()
        .from(users)
        .where(and(eq(users.tenantId, tenantId), eq(users.email, email.trim().toLowerCase())))
        .execute(),
      this.readDeadlineMs,
    );
    return row;
  }

  /**
   * The existing user with this address, or a new one; `verified` marks the address verified.
   * `db`: a caller's transaction (the newsletters' mail budget), else the store's own.
   */
  async findOrCreateByEmail(tenantId: string, email: string, verified: boolean, db: Db = this.db): Promise<UserRow> {
    const normalized = email.trim().toLowerCase();
    await db
      .insert(users)
      .values({ id: randomUUID(), tenantId, email: normalized, emailVerified: verified })
      .onConflictDoNothing();
    const [row] = await db
      .update(users)
      .set(verified ? { emailVerified: true } : { email: normalized })
      .where(and(eq(users.tenantId, tenantId), eq(users.email, normalized)))
      .returning();
    if (!row) throw new Error("user neither created nor found");
    return row;
  }

  async userBySubject(tenantId: string, subject: string): Promise<UserRow | undefined> {
    const [row] = await withinDeadline(
      this.db
        .select({ user: users })
        .from(upstreamSubjects)
        .innerJoin(users, eq(users.id, upstreamSubjects.userId))
        .where(and(eq(upstreamSubjects.tenantId, tenantId), eq(upstreamSubjects.subject, subject)))
        .execute(),
      this.readDeadlineMs,
    );
    return row?.user;
  }

  async bindSubject(tenantId: string, subject: string, userId: string): Promise<void> {
    await this.db.insert(upstreamSubjects).values({ tenantId, subject, userId }).onConflictDoNothing();
  }

  /** Moves a binding to a new subject, in one transaction. */
  async rebindSubject(tenantId: string, subject: string, newSubject: string, userId: string): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx
        .delete(upstreamSubjects)
        .where(and(eq(upstreamSubjects.tenantId, tenantId), eq(upstreamSubjects.subject, subject)));
      await tx.insert(upstreamSubjects).values({ tenantId, subject: newSubject, userId }).onConflictDoNothing();
    });
  }

  /** Another live (not erased) user holding the address, if any. */
  async otherUserWithEmail(tenantId: string, email: string, userId: string): Promise<UserRow | undefined> {
    const [row] = await withinDeadline(
      this.db
        .select()
        .from(users)
        .where(
          and(
            eq(users.tenantId, tenantId),
            eq(users.email, email.trim().toLowerCase()),
            ne(users.id, userId),
            isNull(users.erasedAt),
          ),
        )
        .execute(),
      this.readDeadlineMs,
    );
    return row;
  }

  async changeEmail(userId: string, email: string, verified: boolean, changedAt: Date): Promise<UserRow> {
    const [row] = await this.db
      .update(users)
      .set({ email: email.trim().toLowerCase(), emailVerified: verified, emailChangedAt: changedAt })
      .where(eq(users.id, userId))
      .returning();
    if (!row) throw new Error("user vanished");
    return row;
  }

  async recordConflict(row: NewConflict): Promise<void> {
    await this.db.insert(identityConflicts).values({ id: randomUUID(), ...row });
  }

  async conflicts(tenantId: string): Promise<ConflictRow[]> {
    return this.db.select().from(identityConflicts).where(eq(identityConflicts.tenantId, tenantId));
  }

  /** Anonymises a user in place (id and record kept), ends every session, drops streaming values. */
  async erase(userId: string, now: Date): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx
        .update(users)
        .set({
          email: sql`'erased-' || ${users.id}::text || '@erased.invalid'`,
          emailVerified: false,
          name: null,
          firstName: null,
          lastName: null,
          image: null,
          traits: {},
          erasedAt: now,
        })
        .where(eq(users.id, userId));
      await tx.delete(sessions).where(eq(sessions.userId, userId));
      await tx.delete(streamingValues).where(eq(streamingValues.userId, userId));
    });
  }

  async updateProfile(userId: string, values: ProfileChange): Promise<UserRow> {
    const [row] = await this.db.update(users).set(values).where(eq(users.id, userId)).returning();
    if (!row) throw new Error("user vanished");
    return row;
  }
}
