import { sql } from "drizzle-orm";
import type { Database } from "../../db/client";
import type { Config } from "../config";
import type { CounterFigures, FlushFigures } from "../counters/figures";
import { withinDeadline } from "../infra/deadline";

/** How long /ready waits for the store: short, a probe must not hang. */
const READY_STORE_DEADLINE_MS = 500;

/** What /ready tells its caller to wait before asking again when not ready. */
export const READY_RETRY_AFTER_SECONDS = 5;

export type Check = "ok" | "failed";

/** What /ready reads: the store, the counter flush and whether startDeps finished. */
export interface ReadinessDeps {
  readonly config: Config;
  readonly database: Database;
  readonly flusher: FlushFigures;
  /** The counters' figures with the decide thread's in them, when it runs. */
  readonly figures?: CounterFigures;
  readonly lifecycle: { readonly started: boolean };
}

export interface Readiness {
  readonly ready: boolean;
  readonly checks: {
    /** The store answered `select 1` within its deadline. */
    readonly store: Check;
    /** Site documents and API keys are loaded and the timers started (startDeps finished). */
    readonly loaded: Check;
    /** The last fully successful counter flush is at most N intervals old. */
    readonly flush: Check;
  };
}

/**
 * Whether this process should get traffic: the store reachable within a short deadline, the
 * documents and keys loaded, and the counter flush not behind by more than
 * `config.readyFlushIntervals` intervals.
 */
export async function readiness(deps: ReadinessDeps): Promise<Readiness> {
  const deadline = Math.min(READY_STORE_DEADLINE_MS, deps.config.readDeadlineMs);
  let store: Check = "ok";
  try {
    await withinDeadline(deps.database.db.execute(sql`select 1`), deadline);
  } catch {
    store = "failed";
  }
  const loaded: Check = deps.lifecycle.started ? "ok" : "failed";
  const flusher = deps.figures?.flusher ?? deps.flusher;
  const flush: Check = flusher.intervalsBehind() <= deps.config.readyFlushIntervals ? "ok" : "failed";
  return { ready: store === "ok" && loaded === "ok" && flush === "ok", checks: { store, loaded, flush } };
}
