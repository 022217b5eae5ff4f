import type { CompiledSite } from "../core/compile";
import { parseDuration } from "../core/document-schema";
import type { ContentDescriptor } from "../core/types";
import type { MeterCounters, MeterTable } from "../counters/meter-counters";
import { storeUnavailableOf, withinDeadline } from "../infra/deadline";
import type { SiteState } from "../sites/registry";
import { type GiftStore, REDEMPTION_METER, REDEMPTION_PERIOD } from "./store";
import { contentHashOf, type GiftClaims, type GiftTokens } from "./token";

/** `gift.*` of a valid gift link, as the frozen snapshot carries them. */
export type GiftFacts = Readonly<{ valid: true; contentId: string; gifter: string }>;

/** What decide hands the ledger of its request. */
export interface GiftRequest {
  readonly site: SiteState;
  readonly document: CompiledSite;
  readonly token: string;
  readonly content: ContentDescriptor | undefined;
  /** The recipient: the user id, else the device id. */
  readonly subject: string | null;
  readonly now: number;
  /** Count the redemption (decide); false for a read that applies no effects. */
  readonly effects: boolean;
}

/** Revoked gifts held per process: bounded by how many are revoked and not yet expired. */
const PRUNE_AT = 100_000;

/**
 * The in-memory side of gift links, read by decide: the token's signature and expiry (no I/O),
 * the revoked set (loaded at start, kept current by the change feed in every process) and each
 * link's redemptions, held as members of the `$gift` seen counter (subject = gift id, member =
 * recipient), so they are read on a miss, counted in memory and flushed with the meters.
 */
export class GiftLedger {
  private readonly revoked = new Map<string, number>();
  /**
   * `onRedeemed` is told of each newly counted reader of a link (the interventions stream's
   * `gift` event).
   */
  constructor(
    readonly tokens: GiftTokens,
    private readonly store: GiftStore,
    private readonly meters: MeterCounters,
    private readonly readDeadlineMs: number,
    private readonly onRedeemed: ((site: SiteState, giftId: string) => void) | null = null,
  ) {}

  /** Loads the revoked gifts still within their lifetime (at start). */
  async loadRevoked(now: number): Promise<void> {
    for (const row of await this.store.revokedSince(new Date(now))) this.revoked.set(row.id, row.expiresAt.getTime());
  }

  /** A gift was revoked (change feed): this process stops reading it. */
  async onGiftChanged(tenantId: string, giftId: string, now: number): Promise<void> {
    const row = await this.store.byTenantId(tenantId, giftId);
    if (row?.revokedAt) this.markRevoked(row.id, row.expiresAt.getTime(), now);
  }

  markRevoked(giftId: string, expiresAtMs: number, now: number): void {
    if (this.revoked.size >= PRUNE_AT) {
      for (const [id, expires] of this.revoked) if (expires <= now) this.revoked.delete(id);
    }
    this.revoked.set(giftId, expiresAtMs);
  }

  isRevoked(giftId: string): boolean {
    return this.revoked.has(giftId);
  }

  /** The redemptions of one gift (members of its seen counter). */
  redemptionTable(site: SiteState): MeterTable {
    return this.meters.table(site.tenantId, site.id, REDEMPTION_METER, REDEMPTION_PERIOD, true);
  }

  /**
   * The `gift.*` facts of a request's gift link, or null (no gift) when the site has no gift
   * policy, the token is overlong, malformed, forged, expired or revoked, names another article
   * than the verified content, there is no subject, or the link's redemptions are spent by other
   * readers. A reader already counted reads it again for free. Synchronous unless the link's
   * redemptions must be read first.
   */
  check(req: GiftRequest): GiftFacts | null | Promise<GiftFacts | null> {
    const policy = req.document.document.gifts;
    if (policy === undefined || req.subject === null) return null;
    const claims = this.tokens.read(req.site.tenantId, req.site.id, req.token);
    if (claims === null || claims.expiresAtMs <= req.now || this.revoked.has(claims.giftId)) return null;
    const articleId = req.document.verifyContent(req.content, req.now)?.articleId ?? null;
    if (articleId === null || contentHashOf(articleId) !== claims.contentHash) return null;
    const table = this.redemptionTable(req.site);
    const at = table.find(claims.giftId);
    if (at >= 0) return this.redeem(table, at, claims, articleId, policy.redemptionsPerLink, req);
    return withinDeadline(table.load(claims.giftId), this.readDeadlineMs).then(() => {
      const found = table.find(claims.giftId);
      // Evicted again meanwhile (only at the counters' cap): read as no gift, never over the cap.
      return found < 0 ? null : this.redeem(table, found, claims, articleId, policy.redemptionsPerLink, req);
    });
  }

  /**
   * The link's facts for its reader, counting a new reader (decide). Where other processes count
   * too (`MeterTable.exact`: a Postgres server), a new reader is admitted by the store first
   * (`admit`, serialised per link across processes), so a link never lets in more readers than
   * its cap however many processes serve it; on one process it is counted in memory and written
   * behind. Should the store be unreachable or late, the reader is counted by this process alone.
   */
  private redeem(
    table: MeterTable,
    at: number,
    claims: GiftClaims,
    articleId: string,
    cap: number,
    req: GiftRequest,
  ): GiftFacts | null | Promise<GiftFacts | null> {
    const subject = req.subject as string;
    const facts = Object.freeze({ valid: true as const, contentId: articleId, gifter: claims.gifterId });
    if (table.holdsAt(at, subject)) return facts;
    if (table.countAt(at) >= cap) return null;
    if (!req.effects) return facts;
    if (!table.exact) {
      table.tickSeenAt(at, subject);
      this.onRedeemed?.(req.site, claims.giftId);
      return facts;
    }
    return withinDeadline(table.admit(claims.giftId, subject, cap), this.readDeadlineMs).then(
      (admission) => {
        const found = table.find(claims.giftId);
        if (admission.outcome === "full") {
          // Other processes filled the link: read its readers again for the next request.
          table.refresh(claims.giftId).catch(() => {});
          return null;
        }
        if (found >= 0) table.admittedAt(found, subject, admission.before);
        if (admission.outcome === "added") this.onRedeemed?.(req.site, claims.giftId);
        return facts;
      },
      (error: unknown) => {
        if (storeUnavailableOf(error) === null) throw error;
        const found = table.find(claims.giftId);
        if (found < 0) return null;
        table.tickSeenAt(found, subject);
        this.onRedeemed?.(req.site, claims.giftId);
        return facts;
      },
    );
  }
}

/** Milliseconds a policy's `lifetime` lasts. */
export const lifetimeMs = (lifetime: string): number => parseDuration(lifetime);
