import { randomUUID } from "node:crypto";
import { and, eq, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { grants, users } from "../../db/schema";
import { DEFAULT_READ_DEADLINE_MS, withinDeadline } from "../infra/deadline";

export type UserRow = typeof users.$inferSelect;
export type GrantRow = typeof grants.$inferSelect;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Whether a string can be a user id (users are keyed by uuid). */
export function isUserId(value: string): boolean {
  return UUID.test(value);
}

/** Users and their grants (tenant-wide): Postgres behind this interface, or the in-memory twin. */
export interface UserStore {
  /** Creates a user (the address trimmed and lower-cased), or returns the existing one with that address (created: false). */
  createUser(tenantId: string, email: string): Promise<{ user: UserRow; created: boolean }>;
  /** Undefined for an id that is not a uuid. */
  userById(tenantId: string, id: string): Promise<UserRow | undefined>;
  /** Users and grants for many ids at once (the decide path batches its misses); ids that are not uuids are skipped. */
  usersWithGrants(tenantId: string, ids: string[]): Promise<{ users: UserRow[]; grants: GrantRow[] }>;
  /** A user's grants, by grant name. */
  listGrants(tenantId: string, userId: string): Promise<GrantRow[]>;
  /** Adds a grant, or replaces its expiry when the user already holds it. */
  addGrant(tenantId: string, userId: string, grant: string, expiresAt: Date | null): Promise<GrantRow>;
  revokeGrant(tenantId: string, userId: string, grant: string): Promise<boolean>;
}

/**
 * Postgres-backed users and their grants (tenant-wide: one user across all sites). The reads
 * requests await one by one have a deadline (503 past it); `usersWithGrants` has none of its
 * own, since decide puts its deadline on each request's wait, not on the batch it shares.
 */
export class DrizzleUserStore implements UserStore {
  constructor(
    private readonly db: Db,
    private readonly readDeadlineMs = DEFAULT_READ_DEADLINE_MS,
  ) {}

  /** Creates a user, or returns the existing one with that address (created: false). */
  async createUser(tenantId: string, email: string): Promise<{ user: UserRow; created: boolean }> {
    const normalized = email.trim().toLowerCase();
    const [inserted] = await this.db
      .insert(users)
      .values({ id: randomUUID(), tenantId, email: normalized })
      .onConflictDoNothing()
      .returning();
    if (inserted) return { user: inserted, created: true };
    const [existing] = await this.db
      .select()
      .from(users)
      .where(and(eq(users.tenantId, tenantId), eq(users.email, normalized)));
    if (!existing) throw new Error("user neither inserted nor found");
    return { user: existing, created: false };
  }

  async userById(tenantId: string, id: string): Promise<UserRow | undefined> {
    if (!isUserId(id)) return undefined;
    const [row] = await withinDeadline(
      this.db
        .select()
        .from(users)
        .where(and(eq(users.tenantId, tenantId), eq(users.id, id)))
        .execute(),
      this.readDeadlineMs,
    );
    return row;
  }

  /** Users and grants for many ids at once (the decide path batches its misses). */
  async usersWithGrants(tenantId: string, ids: string[]): Promise<{ users: UserRow[]; grants: GrantRow[] }> {
    const valid = ids.filter(isUserId);
    if (valid.length === 0) return { users: [], grants: [] };
    // One array parameter, however many ids (the decide path batches thousands of misses).
    const anyOf = (values: string[]) => sql`any(${sql.param(values)}::text[]::uuid[])`;
    const found = await this.db
      .select()
      .from(users)
      .where(and(eq(users.tenantId, tenantId), sql`${users.id} = ${anyOf(valid)}`));
    if (found.length === 0) return { users: [], grants: [] };
    const held = await this.db
      .select()
      .from(grants)
      .where(and(eq(grants.tenantId, tenantId), sql`${grants.userId} = ${anyOf(found.map((u) => u.id))}`));
    return { users: found, grants: held };
  }

  async listGrants(tenantId: string, userId: string): Promise<GrantRow[]> {
    return withinDeadline(
      this.db
        .select()
        .from(grants)
        .where(and(eq(grants.tenantId, tenantId), eq(grants.userId, userId)))
        .orderBy(grants.grant)
        .execute(),
      this.readDeadlineMs,
    );
  }

  /** Adds a grant, or replaces its expiry when the user already holds it. */
  async addGrant(tenantId: string, userId: string, grant: string, expiresAt: Date | null): Promise<GrantRow> {
    const [row] = await this.db
      .insert(grants)
      .values({ tenantId, userId, grant, expiresAt })
      .onConflictDoUpdate({ target: [grants.userId, grants.grant], set: { expiresAt } })
      .returning();
    if (!row) throw new Error("grant upsert returned no row");
    return row;
  }

  async revokeGrant(tenantId: string, userId: string, grant: string): Promise<boolean> {
    const rows = await this.db
      .delete(grants)
      .where(and(eq(grants.tenantId, tenantId), eq(grants.userId, userId), eq(grants.grant, grant)))
      .returning();
    return rows.length > 0;
  }
}
