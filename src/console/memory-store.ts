import { UniqueViolation } from "../infra/memory-rows";
import type { ConsoleRole, ConsoleUser } from "./model";
import type { ConsoleStore, TokenOwner } from "./store";

interface Token extends TokenOwner {
  readonly kind: "link" | "session";
  readonly expiresAt: Date;
  usedAt: Date | null;
}

/**
 * Console users, sign-in links and sessions in memory; held to the drizzle store by one contract
 * suite. A caller's transaction (`tx`) is ignored: the twin writes at once.
 */
export class MemoryConsoleStore implements ConsoleStore {
  private readonly users = new Map<string, ConsoleUser>();
  private readonly tokens = new Map<string, Token>();

  constructor(private readonly now: () => number = Date.now) {}

  private static key(tenantId: string, email: string): string {
    return JSON.stringify([tenantId, email]);
  }

  async putUser(tenantId: string, email: string, role: ConsoleRole): Promise<ConsoleUser> {
    const key = MemoryConsoleStore.key(tenantId, email);
    const held = this.users.get(key);
    const user = { tenantId, email, role, createdAt: held?.createdAt ?? new Date(this.now()).toISOString() };
    this.users.set(key, user);
    return { ...user };
  }

  async listUsers(tenantId: string): Promise<ConsoleUser[]> {
    return [...this.users.values()]
      .filter((u) => u.tenantId === tenantId)
      .sort((a, b) => (a.email < b.email ? -1 : a.email > b.email ? 1 : 0))
      .map((u) => ({ ...u }));
  }

  async user(tenantId: string, email: string): Promise<ConsoleUser | null> {
    const user = this.users.get(MemoryConsoleStore.key(tenantId, email));
    return user === undefined ? null : { ...user };
  }

  async removeUser(tenantId: string, email: string): Promise<boolean> {
    const removed = this.users.delete(MemoryConsoleStore.key(tenantId, email));
    for (const [hash, t] of this.tokens) if (t.tenantId === tenantId && t.email === email) this.tokens.delete(hash);
    return removed;
  }

  async createToken(kind: "link" | "session", tokenHash: string, owner: TokenOwner, expiresAt: Date): Promise<void> {
    if (this.tokens.has(tokenHash)) throw new UniqueViolation("console_tokens_pkey");
    this.tokens.set(tokenHash, {
      kind,
      tenantId: owner.tenantId,
      email: owner.email,
      expiresAt: new Date(expiresAt.getTime()),
      usedAt: null,
    });
  }

  async consumeLink(tokenHash: string, now: Date): Promise<TokenOwner | null> {
    const t = this.tokens.get(tokenHash);
    if (t === undefined || t.kind !== "link" || t.usedAt !== null || !(t.expiresAt > now)) return null;
    t.usedAt = new Date(now.getTime());
    return { tenantId: t.tenantId, email: t.email };
  }

  async session(tokenHash: string, now: Date): Promise<(TokenOwner & { role: ConsoleRole }) | null> {
    const t = this.tokens.get(tokenHash);
    if (t === undefined || t.kind !== "session" || !(t.expiresAt > now)) return null;
    const user = this.users.get(MemoryConsoleStore.key(t.tenantId, t.email));
    return user === undefined ? null : { tenantId: t.tenantId, email: t.email, role: user.role };
  }

  async endSession(tokenHash: string): Promise<void> {
    this.tokens.delete(tokenHash);
  }

  async sweep(now: Date): Promise<void> {
    for (const [hash, t] of this.tokens)
      if (t.expiresAt < now || (t.kind === "link" && t.usedAt !== null && t.usedAt < now)) this.tokens.delete(hash);
  }
}
