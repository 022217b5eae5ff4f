import { randomUUID } from "node:crypto";
import type { ChangeFeed } from "../changes/change-feed";
import type { CompiledSite } from "../core/compile";
import type { Flusher } from "../counters/flusher";
import type { SiteState } from "../sites/registry";
import type { UserStore } from "../users/store";
import { allowanceSpent, giftsNotEnabled, unknownArticle, unknownGift, unknownGifter } from "./errors";
import { type GiftLedger, lifetimeMs } from "./ledger";
import type { MintGiftBody } from "./model";
import type { AttributionReport, GiftStore } from "./store";
import { contentHashOf } from "./token";

/** What minting, revoking and the attribution report read. */
export interface GiftDeps {
  readonly gifts: GiftLedger;
  readonly giftStore: GiftStore;
  readonly users: UserStore;
  readonly changes: ChangeFeed;
  /** Flushed before the attribution report, so it is current. */
  readonly flusher: Pick<Flusher, "flushAll">;
  /** With the decide thread on, its flusher writes both threads' counts (its redemptions among them). */
  readonly figures?: { readonly flusher: Pick<Flusher, "flushAll"> };
  readonly now: () => number;
}

/** The calendar month (UTC) a gifter's allowance is counted in: `YYYY-MM`. */
const allowancePeriod = (now: number): string => new Date(now).toISOString().slice(0, 7);

function policyOf(site: SiteState) {
  const policy = (site.live as CompiledSite).document.gifts;
  if (policy === undefined) throw giftsNotEnabled();
  return policy;
}

/**
 * Mints a gift link for one article: checks the gifter and (when sent) the descriptor first, then
 * takes one of the gifter's month and records the link in one transaction. Nothing is written on
 * any refusal.
 */
export async function mintGift(deps: GiftDeps, site: SiteState, body: typeof MintGiftBody.static) {
  const policy = policyOf(site);
  const now = deps.now();
  if (body.content !== undefined) {
    const verified = (site.live as CompiledSite).verifyContent(body.content, now);
    if (verified?.articleId !== body.contentId) throw unknownArticle();
  }
  const gifter = await deps.users.userById(site.tenantId, body.userId);
  if (gifter === undefined || gifter.erasedAt !== null) throw unknownGifter();
  const giftId = randomUUID();
  const expiresAtMs = now + lifetimeMs(policy.lifetime);
  const remaining = await deps.giftStore.mint(
    {
      id: giftId,
      tenantId: site.tenantId,
      siteId: site.id,
      gifterId: gifter.id,
      contentId: body.contentId,
      expiresAt: new Date(expiresAtMs),
    },
    allowancePeriod(now),
    policy.perGifterPerMonth,
  );
  if (remaining === null) throw allowanceSpent();
  const token = deps.gifts.tokens.mint(site.tenantId, site.id, {
    giftId,
    gifterId: gifter.id,
    contentHash: contentHashOf(body.contentId),
    expiresAtMs,
  });
  return { token, giftId, contentId: body.contentId, expiresAt: new Date(expiresAtMs).toISOString(), remaining };
}

/**
 * Revokes a gift (again: still revoked) and tells every process, which stop reading it as soon
 * as their change feed applies the change. `gifterId`: only that gifter's own link (else 404).
 */
export async function revokeGift(deps: GiftDeps, site: SiteState, giftId: string, gifterId: string | null) {
  const row = await deps.giftStore.byId(site.tenantId, site.id, giftId);
  if (row === undefined || (gifterId !== null && row.gifterId !== gifterId)) throw unknownGift();
  const now = deps.now();
  await deps.giftStore.revoke(site.tenantId, site.id, giftId, new Date(now));
  deps.gifts.markRevoked(giftId, row.expiresAt.getTime(), now);
  await deps.changes.publish({ topic: "gift", tenantId: site.tenantId, subject: giftId });
  return { giftId, revoked: true as const };
}

/** Mints and redemptions per gifter and per article; counters are flushed first so it is current. */
export async function giftAttribution(deps: GiftDeps, site: SiteState): Promise<AttributionReport> {
  await (deps.figures?.flusher ?? deps.flusher).flushAll();
  return deps.giftStore.attribution(site.tenantId, site.id);
}
