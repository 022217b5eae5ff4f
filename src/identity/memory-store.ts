import { randomUUID } from "node:crypto";
import { copyRow, UniqueViolation } from "../infra/memory-rows";
import { type MemoryUserStore, UnknownUser } from "../users/memory-store";
import type { UserRow } from "../users/store";
import type {
  ConflictRow,
  IdentityStore,
  MagicLinkRow,
  NewConflict,
  NewMagicLink,
  ProfileChange,
  SessionRow,
  SessionWithUser,
} from "./store";

/**
 * Sessions, magic links, subject bindings and conflicts in memory, over the users of a
 * `MemoryUserStore` (the drizzle stores share the `users` table); held to the drizzle store by
 * one contract suite. A caller's transaction (`db`) is ignored: the twin writes at once, so a
 * caller's rollback does not undo it. `onErase` stands for the streaming values an erase drops.
 */
export class MemoryIdentityStore implements IdentityStore {
  /** Sessions by id; the organization twin sets their active organization. */
  readonly sessions = new Map<string, SessionRow>();
  private readonly links = new Map<string, MagicLinkRow>();
  /** User id by tenant and subject. */
  private readonly subjects = new Map<string, { tenantId: string; subject: string; userId: string }>();
  private readonly conflictRows: ConflictRow[] = [];

  constructor(
    readonly users: MemoryUserStore,
    private readonly onErase: (userId: string) => void = () => {},
  ) {}

  private now(): Date {
    return new Date(this.users.now());
  }

  private user(userId: string): UserRow {
    const user = this.users.rows.get(userId);
    if (user === undefined) throw new UnknownUser(userId);
    return user;
  }

  async createSession(tenantId: string, userId: string, tokenHash: string, expiresAt: Date): Promise<SessionRow> {
    this.user(userId);
    for (const s of this.sessions.values())
      if (s.tokenHash === tokenHash) throw new UniqueViolation("sessions_token_idx");
    const row: SessionRow = {
      id: randomUUID(),
      tenantId,
      userId,
      tokenHash,
      expiresAt: new Date(expiresAt.getTime()),
      activeOrganizationId: null,
      createdAt: this.now(),
    };
    this.sessions.set(row.id, row);
    return copyRow(row);
  }

  async sessionByToken(tenantId: string, tokenHash: string, now: Date): Promise<SessionWithUser | null> {
    for (const session of this.sessions.values()) {
      if (session.tokenHash !== tokenHash || session.tenantId !== tenantId || !(session.expiresAt > now)) continue;
      const user = this.users.rows.get(session.userId);
      return user === undefined ? null : { session: copyRow(session), user: copyRow(user) };
    }
    return null;
  }

  async extendSession(id: string, expiresAt: Date): Promise<void> {
    const session = this.sessions.get(id);
    if (session !== undefined) session.expiresAt = new Date(expiresAt.getTime());
  }

  async deleteSession(id: string): Promise<void> {
    this.sessions.delete(id);
  }

  async deleteSessionsOfUser(tenantId: string, userId: string): Promise<number> {
    let ended = 0;
    for (const [id, s] of this.sessions)
      if (s.tenantId === tenantId && s.userId === userId) {
        this.sessions.delete(id);
        ended++;
      }
    return ended;
  }

  async createMagicLink(row: NewMagicLink): Promise<void> {
    if (this.links.has(row.tokenHash)) throw new UniqueViolation("magic_links_token_idx");
    this.links.set(row.tokenHash, {
      id: randomUUID(),
      ...row,
      expiresAt: new Date(row.expiresAt.getTime()),
      consumedAt: null,
      createdAt: this.now(),
    });
  }

  async consumeMagicLink(tenantId: string, tokenHash: string, now: Date): Promise<MagicLinkRow | null> {
    const link = this.links.get(tokenHash);
    if (link === undefined || link.tenantId !== tenantId || link.consumedAt !== null || !(link.expiresAt > now))
      return null;
    link.consumedAt = new Date(now.getTime());
    return copyRow(link);
  }

  async userByEmail(tenantId: string, email: string): Promise<UserRow | undefined> {
    const user = this.users.byEmail(tenantId, email.trim().toLowerCase());
    return user === undefined ? undefined : copyRow(user);
  }

  async findOrCreateByEmail(tenantId: string, email: string, verified: boolean): Promise<UserRow> {
    const normalized = email.trim().toLowerCase();
    const user = this.users.byEmail(tenantId, normalized) ?? this.users.insertUser(tenantId, normalized, verified);
    if (verified) user.emailVerified = true;
    return copyRow(user);
  }

  async userBySubject(tenantId: string, subject: string): Promise<UserRow | undefined> {
    const bound = this.subjects.get(JSON.stringify([tenantId, subject]));
    const user = bound === undefined ? undefined : this.users.rows.get(bound.userId);
    return user === undefined ? undefined : copyRow(user);
  }

  async bindSubject(tenantId: string, subject: string, userId: string): Promise<void> {
    this.user(userId);
    const key = JSON.stringify([tenantId, subject]);
    if (!this.subjects.has(key)) this.subjects.set(key, { tenantId, subject, userId });
  }

  async rebindSubject(tenantId: string, subject: string, newSubject: string, userId: string): Promise<void> {
    this.user(userId);
    this.subjects.delete(JSON.stringify([tenantId, subject]));
    await this.bindSubject(tenantId, newSubject, userId);
  }

  async otherUserWithEmail(tenantId: string, email: string, userId: string): Promise<UserRow | undefined> {
    const user = this.users.byEmail(tenantId, email.trim().toLowerCase());
    return user === undefined || user.id === userId || user.erasedAt !== null ? undefined : copyRow(user);
  }

  async changeEmail(userId: string, email: string, verified: boolean, changedAt: Date): Promise<UserRow> {
    const user = this.users.rows.get(userId);
    if (user === undefined) throw new Error("user vanished");
    const normalized = email.trim().toLowerCase();
    const holder = this.users.byEmail(user.tenantId, normalized);
    if (holder !== undefined && holder.id !== userId) throw new UniqueViolation("users_tenant_email_idx");
    user.email = normalized;
    user.emailVerified = verified;
    user.emailChangedAt = new Date(changedAt.getTime());
    return copyRow(user);
  }

  async recordConflict(row: NewConflict): Promise<void> {
    this.conflictRows.push({ id: randomUUID(), ...row, createdAt: this.now() });
  }

  async conflicts(tenantId: string): Promise<ConflictRow[]> {
    return this.conflictRows.filter((c) => c.tenantId === tenantId).map(copyRow);
  }

  async erase(userId: string, now: Date): Promise<void> {
    const user = this.users.rows.get(userId);
    if (user !== undefined) {
      user.email = `erased-${user.id}@erased.invalid`;
      user.emailVerified = false;
      user.name = null;
      user.firstName = null;
      user.lastName = null;
      user.image = null;
      user.traits = {};
      user.erasedAt = new Date(now.getTime());
    }
    for (const [id, s] of this.sessions) if (s.userId === userId) this.sessions.delete(id);
    this.onErase(userId);
  }

  async updateProfile(userId: string, values: ProfileChange): Promise<UserRow> {
    const user = this.users.rows.get(userId);
    if (user === undefined) throw new Error("user vanished");
    if (values.name !== undefined) user.name = values.name;
    if (values.firstName !== undefined) user.firstName = values.firstName;
    if (values.lastName !== undefined) user.lastName = values.lastName;
    if (values.traits !== undefined) user.traits = structuredClone(values.traits);
    return copyRow(user);
  }
}
