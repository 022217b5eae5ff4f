import { copyRow, UniqueViolation } from "../infra/memory-rows";
import { type MemoryUserStore, UnknownUser } from "../users/memory-store";
import { isUserId } from "../users/store";
import type { ConfirmationRow, ConsentProof, NewsletterStore, StandingRow, StandingWrite, UserStanding } from "./store";

interface HeldStanding extends StandingRow {
  readonly tenantId: string;
  readonly userId: string;
  readonly consent: ConsentProof | null;
  readonly updatedAt: Date;
}

/**
 * Newsletter standings and confirmation links in memory, over the user twin's users (rows of an
 * unknown user are refused, as the foreign keys do); held to the drizzle store by one contract
 * suite. A caller's transaction (`db`) is ignored: the twin writes at once.
 */
export class MemoryNewsletterStore implements NewsletterStore {
  /** By tenant, user and list. */
  private readonly rows = new Map<string, HeldStanding>();
  private readonly confirmations = new Map<string, ConfirmationRow & { confirmedFrom: string | null }>();

  constructor(private readonly users: MemoryUserStore) {}

  private static key(tenantId: string, userId: string, listId: string): string {
    return JSON.stringify([tenantId, userId, listId]);
  }

  private static standing(row: HeldStanding): StandingRow {
    return {
      listId: row.listId,
      siteId: row.siteId,
      status: row.status,
      pendingUntil: row.pendingUntil === null ? null : new Date(row.pendingUntil.getTime()),
      vendorStatus: row.vendorStatus,
      vendorSubscriberId: row.vendorSubscriberId,
    };
  }

  async standings(tenantId: string, userId: string, listIds?: readonly string[]): Promise<StandingRow[]> {
    const wanted = listIds === undefined ? undefined : new Set(listIds);
    return [...this.rows.values()]
      .filter((r) => r.tenantId === tenantId && r.userId === userId && (wanted === undefined || wanted.has(r.listId)))
      .map(MemoryNewsletterStore.standing);
  }

  async standingsOfUsers(tenantId: string, userIds: readonly string[]): Promise<UserStanding[]> {
    const wanted = new Set(userIds.filter(isUserId));
    return [...this.rows.values()]
      .filter((r) => r.tenantId === tenantId && wanted.has(r.userId))
      .map((r) => ({
        userId: r.userId,
        listId: r.listId,
        status: r.status,
        pendingUntil: r.pendingUntil === null ? null : new Date(r.pendingUntil.getTime()),
      }));
  }

  async write(
    tenantId: string,
    userId: string,
    writes: readonly StandingWrite[],
    now: number,
    consent?: ConsentProof,
  ): Promise<void> {
    if (writes.length === 0) return;
    if (!this.users.rows.has(userId)) throw new UnknownUser(userId);
    for (const w of writes) {
      const key = MemoryNewsletterStore.key(tenantId, userId, w.listId);
      const held = this.rows.get(key);
      this.rows.set(key, {
        tenantId,
        userId,
        listId: w.listId,
        siteId: w.siteId,
        status: w.status,
        pendingUntil: w.pendingUntil === null ? null : new Date(w.pendingUntil.getTime()),
        consent: consent === undefined ? (held?.consent ?? null) : structuredClone(consent),
        vendorStatus: held?.vendorStatus ?? null,
        vendorSubscriberId: held?.vendorSubscriberId ?? null,
        updatedAt: new Date(now),
      });
    }
  }

  async setVendorState(
    tenantId: string,
    userId: string,
    listId: string,
    vendorStatus: string,
    subscriberId: string | null,
  ): Promise<void> {
    const key = MemoryNewsletterStore.key(tenantId, userId, listId);
    const held = this.rows.get(key);
    if (held !== undefined) this.rows.set(key, { ...held, vendorStatus, vendorSubscriberId: subscriberId });
  }

  async addConfirmation(row: Omit<ConfirmationRow, "confirmedAt">): Promise<void> {
    if (this.confirmations.has(row.tokenHash)) throw new UniqueViolation("newsletter_confirmations_pkey");
    if (!this.users.rows.has(row.userId)) throw new UnknownUser(row.userId);
    this.confirmations.set(row.tokenHash, { ...copyRow(row), confirmedAt: null, confirmedFrom: null });
  }

  async confirmation(tenantId: string, tokenHash: string): Promise<ConfirmationRow | undefined> {
    const row = this.confirmations.get(tokenHash);
    return row?.tenantId === tenantId ? copyRow(row) : undefined;
  }

  async markConfirmed(tokenHash: string, now: number, client: string): Promise<void> {
    const row = this.confirmations.get(tokenHash);
    if (row === undefined || row.confirmedAt !== null) return;
    this.confirmations.set(tokenHash, { ...row, confirmedAt: new Date(now), confirmedFrom: client });
  }
}
