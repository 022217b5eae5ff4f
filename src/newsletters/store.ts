import { and, eq, inArray, sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { newsletterConfirmations, newsletterStandings } from "../../db/schema";
import { isUserId } from "../users/store";

/** A standing as stored: `subscribed`, `unsubscribed` or `pending` (no row: `unknown`). */
export type StoredStatus = "subscribed" | "unsubscribed" | "pending";

export interface StandingRow {
  readonly listId: string;
  readonly siteId: string;
  readonly status: string;
  readonly pendingUntil: Date | null;
  readonly vendorStatus: string | null;
  readonly vendorSubscriberId: string | null;
}

/** Proof of a confirmed opt-in, kept on the standing. */
export interface ConsentProof {
  readonly confirmedAt: string;
  readonly client: string;
  readonly listId: string;
  readonly mailId: number | null;
  readonly requestedAt: string;
  readonly requestedFrom: string;
}

export interface StandingWrite {
  readonly listId: string;
  readonly siteId: string;
  readonly status: StoredStatus;
  readonly pendingUntil: Date | null;
}

/** One user's standing on one list, as `standingsOfUsers` answers it. */
export interface UserStanding {
  userId: string;
  listId: string;
  status: string;
  pendingUntil: Date | null;
}

export interface ConfirmationRow {
  readonly tokenHash: string;
  readonly tenantId: string;
  readonly siteId: string;
  readonly userId: string;
  readonly listId: string;
  readonly email: string;
  readonly mailId: number | null;
  readonly requestedFrom: string;
  readonly createdAt: Date;
  readonly expiresAt: Date;
  readonly confirmedAt: Date | null;
}

/** The status a stored row reads as at `now`: a pending row past its link's life is `unknown`. */
export function effectiveStatus(row: Pick<StandingRow, "status" | "pendingUntil"> | undefined, now: number): string {
  if (row === undefined) return "unknown";
  if (row.status === "pending" && (row.pendingUntil === null || row.pendingUntil.getTime() <= now)) return "unknown";
  return row.status;
}

/**
 * Newsletter standings and confirmation links: Postgres behind this interface, or the in-memory
 * twin. A `db` parameter is a caller's transaction on the drizzle store; the twin writes at once.
 */
export interface NewsletterStore {
  /** A user's standings on the given lists (every list of the user when `listIds` is omitted). */
  standings(tenantId: string, userId: string, listIds?: readonly string[]): Promise<StandingRow[]>;
  /** The standings of several users (ids that are not uuids are skipped). */
  standingsOfUsers(tenantId: string, userIds: readonly string[]): Promise<UserStanding[]>;
  /** Writes standings (upsert); consent proof is kept until a new confirmation replaces it. */
  write(
    tenantId: string,
    userId: string,
    writes: readonly StandingWrite[],
    now: number,
    consent?: ConsentProof,
    db?: Db,
  ): Promise<void>;
  /** Records what the vendor was last told of a standing. */
  setVendorState(
    tenantId: string,
    userId: string,
    listId: string,
    vendorStatus: string,
    subscriberId: string | null,
  ): Promise<void>;
  /** Refused (throws) for a token hash already stored. */
  addConfirmation(row: Omit<ConfirmationRow, "confirmedAt">, db?: Db): Promise<void>;
  confirmation(tenantId: string, tokenHash: string): Promise<ConfirmationRow | undefined>;
  /** Marks a link used (the first use's time and client are kept). */
  markConfirmed(tokenHash: string, now: number, client: string): Promise<void>;
}

/** Postgres-backed newsletter standings and confirmation links (both stores). */
export class DrizzleNewsletterStore implements NewsletterStore {
  constructor(private readonly db: Db) {}

  /** A user's standings on the given lists (every list of the user when `listIds` is omitted). */
  async standings(tenantId: string, userId: string, listIds?: readonly string[]): Promise<StandingRow[]> {
    if (listIds !== undefined && listIds.length === 0) return [];
    return this.db
      .select({
        listId: newsletterStandings.listId,
        siteId: newsletterStandings.siteId,
        status: newsletterStandings.status,
        pendingUntil: newsletterStandings.pendingUntil,
        vendorStatus: newsletterStandings.vendorStatus,
        vendorSubscriberId: newsletterStandings.vendorSubscriberId,
      })
      .from(newsletterStandings)
      .where(
        and(
          eq(newsletterStandings.tenantId, tenantId),
          eq(newsletterStandings.userId, userId),
          listIds === undefined ? undefined : inArray(newsletterStandings.listId, [...listIds]),
        ),
      );
  }

  /** The standings of several users (the fact cache's batched misses). */
  async standingsOfUsers(tenantId: string, userIds: readonly string[]): Promise<UserStanding[]> {
    const ids = userIds.filter(isUserId);
    if (ids.length === 0) return [];
    return this.db
      .select({
        userId: newsletterStandings.userId,
        listId: newsletterStandings.listId,
        status: newsletterStandings.status,
        pendingUntil: newsletterStandings.pendingUntil,
      })
      .from(newsletterStandings)
      .where(and(eq(newsletterStandings.tenantId, tenantId), inArray(newsletterStandings.userId, ids)));
  }

  /** Writes standings (upsert); a write that moves to `subscribed` by confirmation carries its proof. */
  async write(
    tenantId: string,
    userId: string,
    writes: readonly StandingWrite[],
    now: number,
    consent?: ConsentProof,
    /** The caller's transaction (a confirmation's mail budget), else the store's own. */
    db: Db = this.db,
  ): Promise<void> {
    if (writes.length === 0) return;
    const updatedAt = new Date(now);
    await db
      .insert(newsletterStandings)
      .values(
        writes.map((w) => ({
          tenantId,
          userId,
          listId: w.listId,
          siteId: w.siteId,
          status: w.status,
          pendingUntil: w.pendingUntil,
          consent: consent ?? null,
          updatedAt,
        })),
      )
      .onConflictDoUpdate({
        target: [newsletterStandings.tenantId, newsletterStandings.userId, newsletterStandings.listId],
        set: {
          status: sql`excluded.status`,
          pendingUntil: sql`excluded.pending_until`,
          siteId: sql`excluded.site_id`,
          // Proof is kept until a new confirmation replaces it.
          consent: sql`coalesce(excluded.consent, ${newsletterStandings.consent})`,
          updatedAt,
        },
      });
  }

  /** Records what the vendor was last told of a standing. */
  async setVendorState(
    tenantId: string,
    userId: string,
    listId: string,
    vendorStatus: string,
    subscriberId: string | null,
  ): Promise<void> {
    await this.db
      .update(newsletterStandings)
      .set({ vendorStatus, vendorSubscriberId: subscriberId })
      .where(
        and(
          eq(newsletterStandings.tenantId, tenantId),
          eq(newsletterStandings.userId, userId),
          eq(newsletterStandings.listId, listId),
        ),
      );
  }

  /** `db`: the transaction that took the mail's budget and wrote its outbox row. */
  async addConfirmation(row: Omit<ConfirmationRow, "confirmedAt">, db: Db = this.db): Promise<void> {
    await db.insert(newsletterConfirmations).values({ ...row });
  }

  async confirmation(tenantId: string, tokenHash: string): Promise<ConfirmationRow | undefined> {
    const [row] = await this.db
      .select()
      .from(newsletterConfirmations)
      .where(and(eq(newsletterConfirmations.tenantId, tenantId), eq(newsletterConfirmations.tokenHash, tokenHash)));
    return row;
  }

  /** Marks a link used (the first use's time and client are kept). */
  async markConfirmed(tokenHash: string, now: number, client: string): Promise<void> {
    await this.db
      .update(newsletterConfirmations)
      .set({ confirmedAt: new Date(now), confirmedFrom: client })
      .where(
        and(eq(newsletterConfirmations.tokenHash, tokenHash), sql`${newsletterConfirmations.confirmedAt} is null`),
      );
  }
}
