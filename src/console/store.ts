import { and, eq, gt, isNull, lt, or } from "drizzle-orm";
import type { Db } from "../../db/client";
import { consoleTokens, consoleUsers } from "../../db/schema";
import type { ConsoleRole, ConsoleUser } from "./model";

/** A console token as stored: only its hash. */
export interface TokenOwner {
  readonly tenantId: string;
  readonly email: string;
}

/** Console users, their sign-in links and sessions (Postgres on both stores). */
export interface ConsoleStore {
  /** Adds a user or changes an existing user's role; returns the user. */
  putUser(tenantId: string, email: string, role: ConsoleRole): Promise<ConsoleUser>;
  listUsers(tenantId: string): Promise<ConsoleUser[]>;
  user(tenantId: string, email: string): Promise<ConsoleUser | null>;
  /** Removes a user and ends their sessions; false when there was none. */
  removeUser(tenantId: string, email: string): Promise<boolean>;
  /** `tx`: the caller's transaction (a sign-in link is written with its mail budget), else the store's. */
  createToken(kind: "link" | "session", tokenHash: string, owner: TokenOwner, expiresAt: Date, tx?: Db): Promise<void>;
  /** Marks an unused, unexpired link used (once only) and returns whose it was. */
  consumeLink(tokenHash: string, now: Date): Promise<TokenOwner | null>;
  /** The live session of a cookie's hash, with the user's current role (null once removed). */
  session(tokenHash: string, now: Date): Promise<(TokenOwner & { role: ConsoleRole }) | null>;
  endSession(tokenHash: string): Promise<void>;
  /** Drops expired links and sessions. */
  sweep(now: Date): Promise<void>;
}

const userOf = (r: typeof consoleUsers.$inferSelect): ConsoleUser => ({
  tenantId: r.tenantId,
  email: r.email,
  role: r.role,
  createdAt: r.createdAt.toISOString(),
});

export class DrizzleConsoleStore implements ConsoleStore {
  constructor(private readonly db: Db) {}

  async putUser(tenantId: string, email: string, role: ConsoleRole): Promise<ConsoleUser> {
    const [row] = await this.db
      .insert(consoleUsers)
      .values({ tenantId, email, role })
      .onConflictDoUpdate({ target: [consoleUsers.tenantId, consoleUsers.email], set: { role } })
      .returning();
    return userOf(row as typeof consoleUsers.$inferSelect);
  }

  async listUsers(tenantId: string): Promise<ConsoleUser[]> {
    const rows = await this.db
      .select()
      .from(consoleUsers)
      .where(eq(consoleUsers.tenantId, tenantId))
      .orderBy(consoleUsers.email);
    return rows.map(userOf);
  }

  async user(tenantId: string, email: string): Promise<ConsoleUser | null> {
    const [row] = await this.db
      .select()
      .from(consoleUsers)
      .where(and(eq(consoleUsers.tenantId, tenantId), eq(consoleUsers.email, email)));
    return row ? userOf(row) : null;
  }

  async removeUser(tenantId: string, email: string): Promise<boolean> {
    return this.db.transaction(async (tx) => {
      const removed = await tx
        .delete(consoleUsers)
        .where(and(eq(consoleUsers.tenantId, tenantId), eq(consoleUsers.email, email)))
        .returning();
      await tx.delete(consoleTokens).where(and(eq(consoleTokens.tenantId, tenantId), eq(consoleTokens.email, email)));
      return removed.length > 0;
    });
  }

  async createToken(
    kind: "link" | "session",
    tokenHash: string,
    owner: TokenOwner,
    expiresAt: Date,
    tx: Db = this.db,
  ): Promise<void> {
    await tx.insert(consoleTokens).values({ tokenHash, kind, tenantId: owner.tenantId, email: owner.email, expiresAt });
  }

  async consumeLink(tokenHash: string, now: Date): Promise<TokenOwner | null> {
    const [row] = await this.db
      .update(consoleTokens)
      .set({ usedAt: now })
      .where(
        and(
          eq(consoleTokens.tokenHash, tokenHash),
          eq(consoleTokens.kind, "link"),
          isNull(consoleTokens.usedAt),
          gt(consoleTokens.expiresAt, now),
        ),
      )
      .returning();
    return row ? { tenantId: row.tenantId, email: row.email } : null;
  }

  async session(tokenHash: string, now: Date): Promise<(TokenOwner & { role: ConsoleRole }) | null> {
    const [row] = await this.db
      .select({ tenantId: consoleTokens.tenantId, email: consoleTokens.email, role: consoleUsers.role })
      .from(consoleTokens)
      .innerJoin(
        consoleUsers,
        and(eq(consoleUsers.tenantId, consoleTokens.tenantId), eq(consoleUsers.email, consoleTokens.email)),
      )
      .where(
        and(
          eq(consoleTokens.tokenHash, tokenHash),
          eq(consoleTokens.kind, "session"),
          gt(consoleTokens.expiresAt, now),
        ),
      );
    return row ?? null;
  }

  async endSession(tokenHash: string): Promise<void> {
    await this.db.delete(consoleTokens).where(eq(consoleTokens.tokenHash, tokenHash));
  }

  async sweep(now: Date): Promise<void> {
    await this.db
      .delete(consoleTokens)
      .where(or(lt(consoleTokens.expiresAt, now), and(eq(consoleTokens.kind, "link"), lt(consoleTokens.usedAt, now))));
  }
}
