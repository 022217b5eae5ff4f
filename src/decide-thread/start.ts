import cluster from "node:cluster";
import type { Database } from "../../db/client";
import type { Change, ChangeFeed } from "../changes/change-feed";
import type { Config } from "../config";
import { DrizzleLeaseStore } from "../counters/drizzle-lease-store";
import { DrizzleMeterStore } from "../counters/drizzle-meter-store";
import type { CounterFigures } from "../counters/figures";
import type { Flusher } from "../counters/flusher";
import type { MeterCounters } from "../counters/meter-counters";
import type { KeyedRate } from "../counters/quota-leases";
import type { DecisionEngine, DecisionSampler } from "../decide/engine";
import { DECIDE_WINDOW_MS, KEYED_DECIDE_LIMIT } from "../decide/limits";
import type { GiftStore } from "../gifts/store";
import type { NodeServerHandle } from "../http/node-server";
import type { RequestStats } from "../http/request-stats";
import type { ImpactSample, ImpactSamples } from "../impact/samples";
import { errorText, stackFrames } from "../infra/error-text";
import type { InsightDeps } from "../insight/service";
import type { KeyStore } from "../keys/store";
import type { Logger } from "../logger";
import type { NewsletterStore } from "../newsletters/store";
import type { FlagEvaluator } from "../ofrep/service";
import type { SiteStore } from "../sites/store";
import type { StreamingStore } from "../streaming/store";
import type { UserStore } from "../users/store";
import { recordAnswers } from "./answers";
import { Channel } from "./channel";
import { ThreadFigures } from "./figures";
import { type Peer, serveForwarded } from "./forward";
import { threadEngine, threadFlags } from "./remote-engine";
import { threadRate } from "./remote-rate";
import { threadSettingsOf } from "./settings";

type Served = { fetch: (request: Request) => Response | Promise<Response>; server: unknown };

/** What the thread is served from this thread: the stores, the feed, the statistics (a view of the app's deps). */
export interface DecideThreadDeps {
  readonly config: Config;
  readonly logger: Logger;
  readonly database: Pick<Database, "db" | "kind">;
  readonly siteStore: SiteStore;
  readonly keyStore: KeyStore;
  readonly users: UserStore;
  readonly streamingStore: StreamingStore;
  readonly giftStore: GiftStore;
  readonly newsletters: { readonly store: NewsletterStore };
  readonly insightDeps: InsightDeps;
  readonly changes: Pick<ChangeFeed, "publish">;
  readonly changeListeners: ((change: Change) => void)[];
  readonly requests: RequestStats;
  readonly impact: Pick<ImpactSamples, "hashKey" | "hold">;
  readonly decisions: DecisionEngine;
  readonly meters: MeterCounters;
  readonly flusher: Flusher;
}

/** What the app's routes use instead of this thread's own while the thread serves. */
export interface ThreadRoutes {
  readonly decisions: DecisionEngine;
  readonly keyedDecideRate: KeyedRate;
  readonly ofrepFlags: FlagEvaluator;
  readonly insightDeps: InsightDeps;
  readonly figures: CounterFigures;
  readonly browserSampler: DecisionSampler;
}

/** The request thread, started beside the app: its engine for the app's routes, then `serve`. */
export interface DecideThread {
  /**
   * What the app's routes use instead of this thread's own while the thread serves: its decision
   * engine (remote-engine.ts), keyed decide's window (OFREP spends it too: remote-rate.ts),
   * OFREP's flag evaluation, the insight reports' flush of the counts held, the counters'
   * figures /metrics, /ready and the operator's flush read (figures.ts), and browser decide's
   * impact sampler (none here: the thread offers each browser decision to its own).
   */
  readonly routes: ThreadRoutes;
  /**
   * Starts the thread in front of `app`: it listens on the configured port, answers keyed decide
   * itself and hands every other request to `app` here. `app.server` becomes the thread's listener
   * as the app sees it (its port and each forwarded request's peer); stopping it stops the thread,
   * which writes its counts first.
   */
  serve<A extends Served>(app: A, port?: number): Promise<A>;
}

/**
 * Opens the request thread (thread.ts): this thread serves it the stores it reads and writes,
 * passes on every change the feed applies, and writes the lines it logs.
 */
export function openDecideThread(deps: DecideThreadDeps): DecideThread {
  // The small heap `npm start` gives the main thread (`--smol`): without it the thread cost 11-24 %
  // more CPU a request than one thread at saturation, with it 6-25 % less (bench/HISTORY.md).
  const worker = new Worker(new URL("./thread.ts", import.meta.url).href, { smol: true });
  const channel = new Channel(worker);
  worker.addEventListener("error", (event) => {
    // The thread held the listening socket: without it the process answers nothing, so it ends
    // and its supervisor starts it again (as a cluster's primary restarts a worker that died).
    deps.logger.error("the request thread failed; exiting", { error: event.message });
    channel.close(new Error(`the request thread failed: ${event.message}`));
    process.exit(1);
  });
  const { db } = deps.database;
  channel.serve("sites", deps.siteStore);
  channel.serve("keys", deps.keyStore);
  const threadMeters = new DrizzleMeterStore(db, deps.config.readDeadlineMs);
  channel.serve("meters", threadMeters);
  channel.serve("insight", deps.insightDeps.insight);
  channel.serve("users", deps.users);
  channel.serve("streaming", deps.streamingStore);
  channel.serve("gifts", deps.giftStore);
  channel.serve("newsletters", deps.newsletters.store);
  channel.serve("leases", new DrizzleLeaseStore(db, DECIDE_WINDOW_MS));
  channel.on("log", (payload) => logLine(deps.logger, payload as LogLine));
  recordAnswers(channel, deps.requests);
  channel.on("impact-sample", (payload) => {
    const { tenantId, siteId, sample } = payload as { tenantId: string; siteId: string; sample: ImpactSample };
    deps.impact.hold(tenantId, siteId, sample);
  });
  channel.on("gift-redeemed", (payload) => {
    const { tenantId, giftId } = payload as { tenantId: string; giftId: string };
    deps.changes.publish({ topic: "gift", tenantId, subject: giftId }).catch((error: unknown) => {
      deps.logger.warn("publishing a gift redemption failed", { error: errorText(error) });
    });
  });
  deps.changeListeners.push((change) => {
    const { topic, tenantId, subject } = change;
    channel.call("thread", "change", [{ topic, tenantId, subject }]).catch((error: unknown) => {
      deps.logger.error("the request thread did not apply a change", { topic, error: errorText(error) });
    });
  });
  return {
    routes: {
      decisions: threadEngine(channel, deps.decisions),
      keyedDecideRate: threadRate(channel, KEYED_DECIDE_LIMIT, DECIDE_WINDOW_MS),
      ofrepFlags: threadFlags(channel),
      browserSampler: { offer: () => {} },
      figures: new ThreadFigures(channel, () => channel.call("thread", "flush", []), deps, threadMeters),
      // A report first writes the counts both threads hold.
      insightDeps: {
        ...deps.insightDeps,
        flushCounters: async () => {
          await deps.insightDeps.flushCounters();
          await channel.call("thread", "flush", []);
        },
      },
    },
    async serve(app, port = deps.config.port) {
      const peers = new WeakMap<Request, Peer>();
      serveForwarded(
        channel,
        (request) => app.fetch(request),
        peers,
        (error) => {
          deps.logger.error("unhandled server error", { error: errorText(error), stack: stackFrames(error) });
        },
      );
      const settings = threadSettingsOf(deps.config, {
        port,
        embedded: deps.database.kind === "embedded",
        keyedDecideLimit: KEYED_DECIDE_LIMIT,
        decideWindowMs: DECIDE_WINDOW_MS,
        impactHashKey: deps.impact.hashKey,
        reusePort: cluster.isWorker,
      });
      const started = await channel.call<{ port: number }>("thread", "start", [settings]);
      const handle: NodeServerHandle = {
        port: started.port,
        hostname: deps.config.host,
        requestIP: (request) => peers.get(request) ?? null,
        async stop() {
          await channel.call("thread", "stop", []);
          worker.terminate();
        },
      };
      app.server = handle;
      return app;
    },
  };
}

interface LogLine {
  readonly level: "debug" | "info" | "warn" | "error";
  readonly message: string;
  readonly fields?: Record<string, unknown>;
  /** A warning the thread logs at most once per this many ms (`warnAtMostEvery`). */
  readonly intervalMs?: number;
}

function logLine(logger: Logger, line: LogLine): void {
  if (line.intervalMs !== undefined) logger.warnAtMostEvery(line.intervalMs, line.message, line.fields);
  else logger[line.level](line.message, line.fields);
}
