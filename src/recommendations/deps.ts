import type { Db } from "../../db/client";
import type { Config } from "../config";
import { AnswerCache } from "./cache";
import { type BrowserRecommendationRate, browserRecommendationRate } from "./routes";
import type { RecommendationDeps } from "./service";
import { DrizzleUsageStore, type UsageStore } from "./store";

/** Keyed recommendations: one answer per key, site and full URL for 15 minutes. */
const RECOMMENDATION_CACHE_MS = 15 * 60_000;

/** Recommendations: the engine's deps, the keyed mount's cache, quota counts. */
export interface Recommendations {
  readonly deps: RecommendationDeps;
  /** The keyed mount's answers as JSON text (a hit serialises nothing). */
  readonly cache: AnswerCache<string>;
  readonly usage: UsageStore;
  /** The browser mount's windows, per client and per site (per process). */
  readonly browserRate: BrowserRecommendationRate;
}

/** Builds the recommendations' deps, cache, usage store and browser windows (src/deps.ts). */
export function createRecommendations(
  input: Pick<RecommendationDeps, "services" | "content" | "logger" | "now" | "outside"> & {
    readonly db: Db;
    readonly config: Pick<Config, "recommendationTimeoutMs" | "recommendationsSitePerMinute">;
  },
): Recommendations {
  const usage = new DrizzleUsageStore(input.db);
  return {
    deps: {
      services: input.services,
      content: input.content,
      usage,
      logger: input.logger,
      now: input.now,
      timeoutMs: input.config.recommendationTimeoutMs,
      outside: input.outside,
    },
    cache: new AnswerCache<string>(RECOMMENDATION_CACHE_MS, 10_000, input.now),
    usage,
    browserRate: browserRecommendationRate(input.config.recommendationsSitePerMinute),
  };
}
