import type { Database, Db } from "../../db/client";
import type { Config } from "../config";
import type { Logger } from "../logger";
import { type DecisionCountSink, DecisionCounts } from "./decision-counts";
import { DrizzleLeaseStore } from "./drizzle-lease-store";
import { DrizzleMeterStore } from "./drizzle-meter-store";
import { type Flushable, Flusher } from "./flusher";
import { MeterCounters, type MeterStore } from "./meter-counters";
import { type KeyedRate, QuotaLeases } from "./quota-leases";
import { RateWindows } from "./rate-windows";

export interface CounterDeps {
  readonly meters: MeterCounters;
  /** Decisions counted per feature, outcome, variant and minute, flushed every statistics interval. */
  readonly decisionCounts: DecisionCounts;
  /**
   * Flushes the meters every flush interval, and the key usage, the meters and the decision
   * counts, in that order, every statistics interval.
   */
  readonly flusher: Flusher;
}

/** Builds the meters, the decision counts and the flusher that writes them (src/deps.ts). */
export function createCounterDeps(input: {
  readonly db: Db;
  readonly kind: Database["kind"];
  readonly config: Pick<Config, "meterEntries" | "flushIntervalMs" | "statsFlushIntervalMs" | "readDeadlineMs">;
  readonly now: () => number;
  readonly logger: Logger;
  /** The meters' store (default: the drizzle one on `db`). */
  readonly meterStore?: MeterStore;
  /** Flushed first: the keys' last-used times (src/keys). */
  readonly keyUsage: Flushable;
  /** Where the decision counts go (the insight store). */
  readonly decisionSink: DecisionCountSink;
}): CounterDeps {
  // The embedded store has one writer (this process holds the data folder), so the counters
  // may know which keys exist and skip reads for first-seen subjects.
  // An admission waits for its batch at most the read deadline before it is given up unsent.
  const meterStore = input.meterStore ?? new DrizzleMeterStore(input.db, input.config.readDeadlineMs);
  const meters = new MeterCounters(meterStore, {
    maxEntries: input.config.meterEntries,
    exclusiveWriter: input.kind === "embedded",
    // Other processes (workers, hosts) may serve the same readers on a Postgres server.
    exact: input.kind === "server",
    now: input.now,
  });
  const decisionCounts = new DecisionCounts(input.decisionSink);
  const { flushIntervalMs, statsFlushIntervalMs } = input.config;
  // Key usage and decision counts are statistics, and each of their flushes costs the store about
  // the same whatever it holds (a row per key used, per outcome counted): written every
  // statistics interval (default 1 s), they cost it a quarter of what they did every 250 ms.
  const flusher = new Flusher([input.keyUsage, meters, decisionCounts], flushIntervalMs, input.logger, {
    parts: new Set([input.keyUsage, decisionCounts]),
    everyTicks: Math.max(1, Math.round(statsFlushIntervalMs / flushIntervalMs)),
  });
  return { meters, decisionCounts, flusher };
}

/**
 * Windows of `limit` requests per `windowMs` per key. The embedded store has one process: its
 * windows are exact in memory. On a server, several processes and hosts may serve one key (or
 * client), so each leases its share of the window from Postgres.
 */
export function keyedRates(input: {
  readonly db: Db;
  readonly kind: Database["kind"];
  readonly windowMs: number;
  readonly logger: Logger;
  /** A lease claim slower than this counts as failed. */
  readonly claimDeadlineMs: number;
  readonly now: () => number;
}): (limit: number) => KeyedRate {
  const leaseStore = new DrizzleLeaseStore(input.db, input.windowMs);
  return (limit) =>
    input.kind === "server"
      ? new QuotaLeases(limit, input.windowMs, leaseStore, input.logger, input.claimDeadlineMs, { now: input.now })
      : new RateWindows(limit, input.windowMs);
}
