import type { Config } from "../config";
import type { DecisionCounts } from "../counters/decision-counts";
import type { MeterCounters } from "../counters/meter-counters";
import type { GiftLedger } from "../gifts/ledger";
import type { NewsletterFactsCache } from "../newsletters/facts-cache";
import type { StreamingFactsCache } from "../streaming/facts-cache";
import type { UserFactsCache } from "../users/facts-cache";

/** What decide reads facts from, as the phases use it (built once per route or engine). */
export interface DecideDeps {
  readonly meters: MeterCounters;
  readonly userFacts: UserFactsCache;
  readonly streamingFacts: StreamingFactsCache;
  /** The Iglu schema URI of exposure events (from SVC_IGLU_VENDOR) as a JSON string, built once. */
  readonly exposureSchemaJson: string;
  /** How long a request waits for each round of store reads before it answers 503. */
  readonly readDeadlineMs: number;
  /** Gift links: read only for a request that carries `giftLink`. */
  readonly gifts: GiftLedger;
  /** Newsletter standings: read only for a request naming a feature that reads `newsletters.*`. */
  readonly newsletterFacts?: NewsletterFactsCache;
  /** Decisions counted per feature, outcome, variant and minute (insight); null counts none. */
  readonly decisionCounts: DecisionCounts | null;
}

/** Where decide's facts come from: the process' stores and caches (a narrow view of the app's deps). */
export interface DecideSources {
  readonly meters: MeterCounters;
  readonly userFacts: UserFactsCache;
  readonly streamingFacts: StreamingFactsCache;
  readonly gifts: GiftLedger;
  readonly config: Pick<Config, "igluVendor" | "readDeadlineMs">;
  readonly newsletters?: { readonly facts: NewsletterFactsCache };
  readonly decisionCounts?: DecisionCounts;
}

/** What decide needs of the process' dependencies (every decide route builds it once). */
export function decideDepsOf(deps: DecideSources): DecideDeps {
  return {
    newsletterFacts: deps.newsletters?.facts,
    meters: deps.meters,
    gifts: deps.gifts,
    userFacts: deps.userFacts,
    streamingFacts: deps.streamingFacts,
    exposureSchemaJson: JSON.stringify(`iglu:${deps.config.igluVendor}/experiment_exposure/jsonschema/1-0-0`),
    readDeadlineMs: deps.config.readDeadlineMs,
    decisionCounts: deps.decisionCounts ?? null,
  };
}
