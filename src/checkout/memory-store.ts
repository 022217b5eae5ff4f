import { copyRow, UniqueViolation } from "../infra/memory-rows";
import { type MemoryUserStore, UnknownUser } from "../users/memory-store";
import {
  type CheckoutSessionRow,
  type CheckoutStore,
  type CheckoutTx,
  type Completion,
  type EventOutcome,
  expiryOf,
  type NewCheckoutSession,
  type RevokeBy,
} from "./store";

/**
 * Checkout sessions and applied events in memory, granting through the user twin (the drizzle
 * store writes the same `users` and `grants` tables); held to the drizzle store by one contract
 * suite. Events apply one at a time, and an effect that throws restores every row it changed,
 * as the drizzle store's transaction does.
 */
export class MemoryCheckoutStore implements CheckoutStore {
  private sessions = new Map<string, CheckoutSessionRow>();
  /** Applied events by tenant and event id: the subject each ended. */
  private events = new Map<string, { tenantId: string; subject: string | null }>();
  private turn: Promise<unknown> = Promise.resolve();

  constructor(private readonly users: MemoryUserStore) {}

  async recordSession(row: NewCheckoutSession): Promise<void> {
    if (this.sessions.has(row.id)) throw new UniqueViolation("checkout_sessions_pkey");
    this.sessions.set(row.id, {
      ...copyRow(row),
      status: "open",
      grantedUserId: null,
      subscriptionId: null,
      paymentIntentId: null,
      customerId: null,
      createdAt: new Date(this.users.now()),
      completedAt: null,
    });
  }

  async session(tenantId: string, id: string): Promise<CheckoutSessionRow | undefined> {
    const row = this.sessions.get(id);
    return row?.tenantId === tenantId ? copyRow(row) : undefined;
  }

  applyOnce(
    tenantId: string,
    event: { readonly id: string; readonly type: string; readonly subject: string | null },
    effect: (tx: CheckoutTx) => Promise<string[]>,
  ): Promise<EventOutcome> {
    const run = this.turn.then(async (): Promise<EventOutcome> => {
      const key = JSON.stringify([tenantId, event.id]);
      if (this.events.has(key)) return { duplicate: true };
      const saved = {
        sessions: structuredClone(this.sessions),
        events: structuredClone(this.events),
        users: structuredClone(this.users.rows),
        grants: structuredClone(this.users.grants),
      };
      this.events.set(key, { tenantId, subject: event.subject });
      try {
        return { duplicate: false, changedUsers: await effect({}) };
      } catch (error) {
        this.sessions = saved.sessions;
        this.events = saved.events;
        this.users.restore(saved.users, saved.grants);
        throw error;
      }
    });
    this.turn = run.catch(() => {});
    return run;
  }

  async complete(
    _tx: CheckoutTx,
    tenantId: string,
    sessionId: string,
    completionOf: (row: CheckoutSessionRow) => Completion | null,
  ): Promise<string[]> {
    const row = this.sessions.get(sessionId);
    if (row === undefined || row.tenantId !== tenantId || row.status !== "open") return [];
    const completion = completionOf(copyRow(row));
    if (completion === null) return [];
    const settled = {
      subscriptionId: completion.subscriptionId,
      paymentIntentId: completion.paymentIntentId,
      customerId: completion.customerId,
      completedAt: new Date(completion.at.getTime()),
    };
    const endedFirst = [completion.subscriptionId, completion.paymentIntentId].filter((x): x is string => x !== null);
    for (const e of this.events.values())
      if (e.tenantId === tenantId && e.subject !== null && endedFirst.includes(e.subject)) {
        Object.assign(row, settled, { status: "revoked" });
        return [];
      }
    let userId: string;
    if ("userId" in completion.reader) userId = completion.reader.userId;
    else {
      const email = completion.reader.email.trim().toLowerCase();
      userId = (this.users.byEmail(tenantId, email) ?? this.users.insertUser(tenantId, email)).id;
    }
    if (!this.users.rows.has(userId)) throw new UnknownUser(userId);
    const held = this.users.grants.get(userId)?.get(row.grant);
    const expiresAt = completion.expiresAt;
    if (held === undefined) await this.users.addGrant(tenantId, userId, row.grant, expiresAt);
    // A longer grant already held (another purchase, an operator's) is never shortened.
    else
      held.expiresAt =
        held.expiresAt === null || expiresAt === null
          ? null
          : new Date(Math.max(held.expiresAt.getTime(), expiresAt.getTime()));
    Object.assign(row, settled, { status: "granted", grantedUserId: userId });
    return [userId];
  }

  async revoke(_tx: CheckoutTx, tenantId: string, by: RevokeBy): Promise<{ ended: number; changedUsers: string[] }> {
    const matches = (s: CheckoutSessionRow) =>
      "subscriptionId" in by
        ? s.subscriptionId === by.subscriptionId
        : "paymentIntentId" in by
          ? s.paymentIntentId === by.paymentIntentId
          : s.customerId === by.customerSubscriptions && s.mode === "subscription";
    const ended = [...this.sessions.values()].filter(
      (s) => s.tenantId === tenantId && s.status === "granted" && matches(s),
    );
    for (const row of ended) row.status = "revoked";
    const changed = new Set<string>();
    for (const row of ended) {
      const userId = row.grantedUserId;
      if (userId === null) continue;
      const still = [...this.sessions.values()].filter(
        (s) => s.tenantId === tenantId && s.grantedUserId === userId && s.grant === row.grant && s.status === "granted",
      );
      const held = this.users.grants.get(userId)?.get(row.grant);
      if (held !== undefined && held.tenantId === tenantId) {
        if (still.length === 0) this.users.grants.get(userId)?.delete(row.grant);
        else held.expiresAt = expiryOf(still);
      }
      changed.add(userId);
    }
    return { ended: ended.length, changedUsers: [...changed] };
  }
}
