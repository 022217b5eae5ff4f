import { randomUUID } from "node:crypto";
import { and, eq, inArray, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { checkoutEvents, checkoutSessions, grants, users } from "../../db/schema";

export type CheckoutSessionRow = typeof checkoutSessions.$inferSelect;
type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];

/** What a completed checkout grants, and to whom: a user id, or an address to find or create. */
export interface Completion {
  readonly reader: { readonly userId: string } | { readonly email: string };
  readonly expiresAt: Date | null;
  readonly subscriptionId: string | null;
  readonly paymentIntentId: string | null;
  readonly customerId: string | null;
  readonly at: Date;
}

/** Which purchases a revocation ends: by subscription, by payment, or a customer's subscriptions. */
export type RevokeBy =
  | { readonly subscriptionId: string }
  | { readonly paymentIntentId: string }
  | { readonly customerSubscriptions: string };

/** An event's outcome: applied (with the users whose grants changed), or already processed. */
export type EventOutcome =
  | { readonly duplicate: true }
  | { readonly duplicate: false; readonly changedUsers: string[] };

/** A checkout session as started: what `recordSession` takes (the rest is filled as it completes). */
export type NewCheckoutSession = Omit<
  CheckoutSessionRow,
  "status" | "grantedUserId" | "subscriptionId" | "paymentIntentId" | "customerId" | "createdAt" | "completedAt"
>;

/** The store's own transaction, handed by `applyOnce` to the effect's `complete` and `revoke`; opaque to callers. */
export type CheckoutTx = object;

/**
 * Checkout sessions and the provider events applied: Postgres behind this interface, or the
 * in-memory twin. An event applies once however often it is delivered, and a failing effect
 * applies nothing.
 */
export interface CheckoutStore {
  /** Refused (throws) for a session id already stored. */
  recordSession(row: NewCheckoutSession): Promise<void>;
  session(tenantId: string, id: string): Promise<CheckoutSessionRow | undefined>;
  /** Records the event's id (a second delivery changes nothing) and runs `effect` with it, atomically. */
  applyOnce(
    tenantId: string,
    event: { readonly id: string; readonly type: string; readonly subject: string | null },
    effect: (tx: CheckoutTx) => Promise<string[]>,
  ): Promise<EventOutcome>;
  /** Grants an open session's offer to the reader `completionOf` names (never shortening a held grant); answers whose grants changed. */
  complete(
    tx: CheckoutTx,
    tenantId: string,
    sessionId: string,
    completionOf: (row: CheckoutSessionRow) => Completion | null,
  ): Promise<string[]>;
  /** Ends granted purchases and removes (or re-dates) their grants. */
  revoke(tx: CheckoutTx, tenantId: string, by: RevokeBy): Promise<{ ended: number; changedUsers: string[] }>;
}

/**
 * Postgres-backed checkout: the sessions we started, and the provider events applied. Each event
 * is applied in one transaction with its row in `checkout_events`, so an event id is applied
 * once however often it is delivered, and a failure applies nothing (the provider redelivers).
 */
export class DrizzleCheckoutStore implements CheckoutStore {
  constructor(private readonly db: Db) {}

  async recordSession(row: NewCheckoutSession): Promise<void> {
    await this.db.insert(checkoutSessions).values(row);
  }

  async session(tenantId: string, id: string): Promise<CheckoutSessionRow | undefined> {
    const [row] = await this.db
      .select()
      .from(checkoutSessions)
      .where(and(eq(checkoutSessions.tenantId, tenantId), eq(checkoutSessions.id, id)));
    return row;
  }

  /**
   * Applies one event once: records its id (a second delivery finds it and changes nothing) and,
   * for a revoking event, what it ended (`subject`), then runs `effect` in the same transaction.
   * Answers the users whose grants changed.
   */
  async applyOnce(
    tenantId: string,
    event: { readonly id: string; readonly type: string; readonly subject: string | null },
    effect: (tx: Tx) => Promise<string[]>,
  ): Promise<EventOutcome> {
    return this.db.transaction(async (tx) => {
      const inserted = await tx
        .insert(checkoutEvents)
        .values({ tenantId, eventId: event.id, type: event.type, subject: event.subject })
        .onConflictDoNothing()
        .returning({ eventId: checkoutEvents.eventId });
      if (inserted.length === 0) return { duplicate: true as const };
      return { duplicate: false as const, changedUsers: await effect(tx) };
    });
  }

  /**
   * Grants the session's offer (once: a session already granted or revoked is left alone), to
   * the reader `completionOf` names for the stored row.
   */
  async complete(
    tx: Tx,
    tenantId: string,
    sessionId: string,
    completionOf: (row: CheckoutSessionRow) => Completion | null,
  ): Promise<string[]> {
    const [row] = await tx
      .select()
      .from(checkoutSessions)
      .where(and(eq(checkoutSessions.tenantId, tenantId), eq(checkoutSessions.id, sessionId)))
      .for("update");
    // A session we did not start (another integration on the account), or one already settled.
    if (row === undefined || row.status !== "open") return [];
    const completion = completionOf(row);
    if (completion === null) return [];
    const endedFirst = [completion.subscriptionId, completion.paymentIntentId].filter((x): x is string => x !== null);
    if (endedFirst.length > 0) {
      // Stripe does not promise order: a cancellation or refund already applied ends this purchase.
      const [ended] = await tx
        .select({ eventId: checkoutEvents.eventId })
        .from(checkoutEvents)
        .where(and(eq(checkoutEvents.tenantId, tenantId), inArray(checkoutEvents.subject, endedFirst)))
        .limit(1);
      if (ended !== undefined) {
        await tx
          .update(checkoutSessions)
          .set({
            status: "revoked",
            subscriptionId: completion.subscriptionId,
            paymentIntentId: completion.paymentIntentId,
            customerId: completion.customerId,
            completedAt: completion.at,
          })
          .where(eq(checkoutSessions.id, row.id));
        return [];
      }
    }
    const userId =
      "userId" in completion.reader
        ? completion.reader.userId
        : await userByEmail(tx, tenantId, completion.reader.email);
    await tx
      .insert(grants)
      .values({ tenantId, userId, grant: row.grant, expiresAt: completion.expiresAt })
      .onConflictDoUpdate({
        target: [grants.userId, grants.grant],
        // A longer grant already held (another purchase, an operator's) is never shortened.
        set: {
          expiresAt: sql`case when ${grants.expiresAt} is null or excluded.expires_at is null then null
            else greatest(${grants.expiresAt}, excluded.expires_at) end`,
        },
      });
    await tx
      .update(checkoutSessions)
      .set({
        status: "granted",
        grantedUserId: userId,
        subscriptionId: completion.subscriptionId,
        paymentIntentId: completion.paymentIntentId,
        customerId: completion.customerId,
        completedAt: completion.at,
      })
      .where(eq(checkoutSessions.id, row.id));
    return [userId];
  }

  /**
   * Ends granted purchases and removes their grants; when another live purchase of the user
   * confers the same grant, the grant stays with the expiry those purchases give it. Answers how
   * many purchases ended and whose grants changed.
   */
  async revoke(tx: Tx, tenantId: string, by: RevokeBy): Promise<{ ended: number; changedUsers: string[] }> {
    const match =
      "subscriptionId" in by
        ? eq(checkoutSessions.subscriptionId, by.subscriptionId)
        : "paymentIntentId" in by
          ? eq(checkoutSessions.paymentIntentId, by.paymentIntentId)
          : and(eq(checkoutSessions.customerId, by.customerSubscriptions), eq(checkoutSessions.mode, "subscription"));
    const ended = await tx
      .update(checkoutSessions)
      .set({ status: "revoked" })
      .where(and(eq(checkoutSessions.tenantId, tenantId), eq(checkoutSessions.status, "granted"), match))
      .returning();
    const changed = new Set<string>();
    for (const row of ended) {
      if (row.grantedUserId === null) continue;
      const still = await tx
        .select({
          mode: checkoutSessions.mode,
          completedAt: checkoutSessions.completedAt,
          durationMs: checkoutSessions.durationMs,
        })
        .from(checkoutSessions)
        .where(
          and(
            eq(checkoutSessions.tenantId, tenantId),
            eq(checkoutSessions.grantedUserId, row.grantedUserId),
            eq(checkoutSessions.grant, row.grant),
            eq(checkoutSessions.status, "granted"),
          ),
        );
      const held = and(
        eq(grants.tenantId, tenantId),
        eq(grants.userId, row.grantedUserId),
        eq(grants.grant, row.grant),
      );
      if (still.length === 0) await tx.delete(grants).where(held);
      else
        await tx
          .update(grants)
          .set({ expiresAt: expiryOf(still) })
          .where(held);
      changed.add(row.grantedUserId);
    }
    return { ended: ended.length, changedUsers: [...changed] };
  }
}

/**
 * When a grant ends given the purchases that still confer it: never while a subscription is live,
 * else when the longest-lasting one-time purchase ends.
 */
export function expiryOf(
  purchases: { mode: string; completedAt: Date | null; durationMs: number | null }[],
): Date | null {
  let latest = 0;
  for (const p of purchases) {
    if (p.mode === "subscription" || p.durationMs === null) return null;
    latest = Math.max(latest, (p.completedAt?.getTime() ?? 0) + p.durationMs);
  }
  return new Date(latest);
}

/** The tenant's user with that address, or a new one (unverified: the provider collected the address). */
async function userByEmail(tx: Tx, tenantId: string, email: string): Promise<string> {
  const normalized = email.trim().toLowerCase();
  const [inserted] = await tx
    .insert(users)
    .values({ id: randomUUID(), tenantId, email: normalized })
    .onConflictDoNothing()
    .returning({ id: users.id });
  if (inserted) return inserted.id;
  const [existing] = await tx
    .select({ id: users.id })
    .from(users)
    .where(and(eq(users.tenantId, tenantId), eq(users.email, normalized)));
  if (!existing) throw new Error("user neither inserted nor found");
  return existing.id;
}
