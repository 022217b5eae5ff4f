import type { Db } from "../../db/client";
import type { Config } from "../config";
import type { MeterCounters } from "../counters/meter-counters";
import type { SiteState } from "../sites/registry";
import { DrizzleGiftStore } from "./drizzle-store";
import { GiftLedger } from "./ledger";
import type { GiftStore } from "./store";
import { GiftTokens } from "./token";

export interface GiftDeps {
  readonly giftStore: GiftStore;
  readonly gifts: GiftLedger;
}

/** Builds the gift links' store and ledger (src/deps.ts); the ledger counts redemptions in the meters. */
export function createGiftDeps(input: {
  readonly db: Db;
  readonly config: Pick<Config, "secret" | "readDeadlineMs">;
  readonly meters: MeterCounters;
  /** Told of each newly counted reader of a link. */
  readonly onRedeemed: (site: SiteState, giftId: string) => void;
}): GiftDeps {
  const giftStore = new DrizzleGiftStore(input.db);
  const gifts = new GiftLedger(
    new GiftTokens(input.config.secret),
    giftStore,
    input.meters,
    input.config.readDeadlineMs,
    input.onRedeemed,
  );
  return { giftStore, gifts };
}
