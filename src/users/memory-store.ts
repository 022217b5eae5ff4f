import { randomUUID } from "node:crypto";
import { copyRow } from "../infra/memory-rows";
import { type GrantRow, isUserId, type UserRow, type UserStore } from "./store";

/** What a twin throws where Postgres refuses a row whose user does not exist (SQLSTATE 23503). */
export class UnknownUser extends Error {
  readonly code = "23503";
  constructor(userId: string) {
    super(`user ${userId} does not exist`);
  }
}

/**
 * Users and grants in memory, for tests that need no Postgres; held to the drizzle store by one
 * contract suite. The identity and organization twins read and write the same users through it
 * (`rows`), as their drizzle stores share the `users` table.
 */
export class MemoryUserStore implements UserStore {
  /** Every user by id, in creation order. */
  readonly rows = new Map<string, UserRow>();
  /** Grants by user id, then grant name. */
  readonly grants = new Map<string, Map<string, GrantRow>>();

  constructor(readonly now: () => number = Date.now) {}

  /** The user with this address in the tenant (addresses are stored trimmed and lower-cased). */
  byEmail(tenantId: string, email: string): UserRow | undefined {
    for (const row of this.rows.values()) if (row.tenantId === tenantId && row.email === email) return row;
    return undefined;
  }

  /** Stores a new user row with the table's defaults; the caller has checked the address is free. */
  insertUser(tenantId: string, email: string, emailVerified = false): UserRow {
    const row: UserRow = {
      id: randomUUID(),
      tenantId,
      email,
      emailVerified,
      name: null,
      firstName: null,
      lastName: null,
      image: null,
      traits: {},
      emailChangedAt: null,
      erasedAt: null,
      createdAt: new Date(this.now()),
    };
    this.rows.set(row.id, row);
    return row;
  }

  /** Puts back rows saved with `structuredClone` (a twin's transaction that failed). */
  restore(rows: Map<string, UserRow>, grants: Map<string, Map<string, GrantRow>>): void {
    this.rows.clear();
    for (const [id, row] of rows) this.rows.set(id, row);
    this.grants.clear();
    for (const [id, held] of grants) this.grants.set(id, held);
  }

  /** Removes a user and, as the foreign keys cascade, its grants. */
  deleteUser(userId: string): void {
    this.rows.delete(userId);
    this.grants.delete(userId);
  }

  async createUser(tenantId: string, email: string): Promise<{ user: UserRow; created: boolean }> {
    const normalized = email.trim().toLowerCase();
    const existing = this.byEmail(tenantId, normalized);
    if (existing !== undefined) return { user: copyRow(existing), created: false };
    return { user: copyRow(this.insertUser(tenantId, normalized)), created: true };
  }

  async userById(tenantId: string, id: string): Promise<UserRow | undefined> {
    if (!isUserId(id)) return undefined;
    const row = this.rows.get(id.toLowerCase());
    return row?.tenantId === tenantId ? copyRow(row) : undefined;
  }

  async usersWithGrants(tenantId: string, ids: string[]): Promise<{ users: UserRow[]; grants: GrantRow[] }> {
    const wanted = new Set(ids.filter(isUserId).map((id) => id.toLowerCase()));
    const users: UserRow[] = [];
    const grants: GrantRow[] = [];
    for (const id of wanted) {
      const row = this.rows.get(id);
      if (row?.tenantId !== tenantId) continue;
      users.push(copyRow(row));
      for (const grant of this.grants.get(id)?.values() ?? [])
        if (grant.tenantId === tenantId) grants.push(copyRow(grant));
    }
    return { users, grants };
  }

  async listGrants(tenantId: string, userId: string): Promise<GrantRow[]> {
    return [...(this.grants.get(userId)?.values() ?? [])]
      .filter((g) => g.tenantId === tenantId)
      .sort((a, b) => (a.grant < b.grant ? -1 : a.grant > b.grant ? 1 : 0))
      .map(copyRow);
  }

  async addGrant(tenantId: string, userId: string, grant: string, expiresAt: Date | null): Promise<GrantRow> {
    if (!this.rows.has(userId)) throw new UnknownUser(userId);
    let held = this.grants.get(userId);
    if (held === undefined) {
      held = new Map();
      this.grants.set(userId, held);
    }
    const existing = held.get(grant);
    if (existing !== undefined) {
      existing.expiresAt = expiresAt === null ? null : new Date(expiresAt.getTime());
      return copyRow(existing);
    }
    const row: GrantRow = {
      tenantId,
      userId,
      grant,
      expiresAt: expiresAt === null ? null : new Date(expiresAt.getTime()),
      createdAt: new Date(this.now()),
    };
    held.set(grant, row);
    return copyRow(row);
  }

  async revokeGrant(tenantId: string, userId: string, grant: string): Promise<boolean> {
    const held = this.grants.get(userId);
    const row = held?.get(grant);
    if (row === undefined || row.tenantId !== tenantId) return false;
    held?.delete(grant);
    return true;
  }
}
