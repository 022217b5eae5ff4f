/**
 * The request thread (a Worker, src/decide-thread): it holds the listening socket and the h1
 * transport, answers keyed decide from state of its own, and hands every other request to the
 * main thread's app (forward.ts). Its JavaScriptCore heap holds only what keyed decide runs, so
 * its young collections stop it for a fraction of what svc's whole heap costs them
 * (docs/performance.md, "A decide thread with a heap of its own").
 *
 * Its state is a process' worth of keyed decide's: the sites and keys (loaded at start, reloaded
 * on the change events the main thread passes on), the readers' meters, facts caches, rate
 * windows, key usage and decision counts. Its stores are the main thread's, called over the
 * channel (remoteOf): reads on a miss, the flusher's writes, admissions on a server.
 */
import type { ChangeFeed } from "../changes/change-feed";
import type { DecisionCountSink } from "../counters/decision-counts";
import { DecisionCounts } from "../counters/decision-counts";
import { Flusher } from "../counters/flusher";
import { MeterCounters } from "../counters/meter-counters";
import { type KeyedRate, type LeaseStore, QuotaLeases } from "../counters/quota-leases";
import { RateWindows } from "../counters/rate-windows";
import { createDecisionEngine } from "../decide/engine";
import { KEYED_DECIDE_PATH } from "../decide/model";
import { keyedDecideHandler, keyedDecideText } from "../decide/routes";
import { GiftLedger } from "../gifts/ledger";
import type { GiftStore } from "../gifts/store";
import { GiftTokens } from "../gifts/token";
import { serveOverH1 } from "../http/h1/server";
import type { NodeServerHandle } from "../http/node-server";
import { ImpactSamples } from "../impact/samples";
import { withHotPath } from "../infra/hot-request";
import { KeyService } from "../keys/service";
import type { KeyStore } from "../keys/store";
import { KeyUsage } from "../keys/usage";
import type { Logger } from "../logger";
import { NewsletterFactsCache } from "../newsletters/facts-cache";
import type { NewsletterStore } from "../newsletters/store";
import { PreviewTokens } from "../preview/tokens";
import { SiteRegistry } from "../sites/registry";
import type { SiteStore } from "../sites/store";
import { StreamingFactsCache } from "../streaming/facts-cache";
import type { StreamingStore } from "../streaming/store";
import { UserFactsCache } from "../users/facts-cache";
import type { UserStore } from "../users/store";
import { ThreadAnswers } from "./answers";
import { Channel, remoteOf } from "./channel";
import { reportFigures } from "./figures";
import { forwarder } from "./forward";
import { serveEngine } from "./remote-engine";
import { remoteMeterStore } from "./remote-meters";
import { serveRate } from "./remote-rate";
import type { ThreadChange, ThreadSettings } from "./settings";

declare const self: Worker;

const channel = new Channel(self);
/** Changes the main thread applied before this thread could (it was loading), in order. */
const early: ThreadChange[] = [];
/** Applies a change the main thread applied to this thread's copy, once it is loaded. */
let applyChange: ((change: ThreadChange) => Promise<void>) | null = null;
/** How often the answers counted here are handed to the main thread's request statistics. */
const ANSWERS_INTERVAL_MS = 250;

/** Lines logged here are written by the main thread's logger. */
const logger: Logger = {
  debug: (message, fields) => channel.emit("log", { level: "debug", message, fields }),
  info: (message, fields) => channel.emit("log", { level: "info", message, fields }),
  warn: (message, fields) => channel.emit("log", { level: "warn", message, fields }),
  error: (message, fields) => channel.emit("log", { level: "error", message, fields }),
  warnAtMostEvery: (intervalMs, message, fields) => channel.emit("log", { level: "warn", intervalMs, message, fields }),
};

async function start(settings: ThreadSettings) {
  const now = Date.now;
  const siteStore = remoteOf<SiteStore>(channel, "sites");
  const registry = new SiteRegistry(siteStore, logger);
  const keyStore = remoteOf<KeyStore>(channel, "keys");
  const keyUsage = new KeyUsage(keyStore);
  // Keys are issued and revoked on the main thread: this thread only reads them.
  const noPublishing = { publish: () => Promise.reject(new Error("the request thread publishes no change")) };
  const keys = new KeyService(keyStore, keyUsage, noPublishing as unknown as ChangeFeed, settings.readDeadlineMs);
  const meters = new MeterCounters(remoteMeterStore(channel), {
    maxEntries: settings.meterEntries,
    exclusiveWriter: settings.embedded,
    exact: !settings.embedded,
    now,
  });
  const decisionCounts = new DecisionCounts(remoteOf<DecisionCountSink>(channel, "insight"));
  const flusher = new Flusher([keyUsage, meters, decisionCounts], settings.flushIntervalMs, logger, {
    parts: new Set([keyUsage, decisionCounts]),
    everyTicks: Math.max(1, Math.round(settings.statsFlushIntervalMs / settings.flushIntervalMs)),
  });
  const userFacts = new UserFactsCache(remoteOf<UserStore>(channel, "users"));
  const streamingFacts = new StreamingFactsCache(remoteOf<StreamingStore>(channel, "streaming"));
  const gifts = new GiftLedger(
    new GiftTokens(settings.secret),
    remoteOf<GiftStore>(channel, "gifts"),
    meters,
    settings.readDeadlineMs,
    (site, giftId) => channel.emit("gift-redeemed", { tenantId: site.tenantId, giftId }),
  );
  const newsletterFacts = new NewsletterFactsCache(remoteOf<NewsletterStore>(channel, "newsletters"));
  const previewTokens = new PreviewTokens(settings.secret);
  const keyedDecideRate: KeyedRate = settings.embedded
    ? new RateWindows(settings.keyedDecideLimit, settings.decideWindowMs)
    : new QuotaLeases(
        settings.keyedDecideLimit,
        settings.decideWindowMs,
        remoteOf<LeaseStore>(channel, "leases"),
        logger,
        settings.readDeadlineMs,
        { now },
      );
  const sources = {
    meters,
    userFacts,
    streamingFacts,
    gifts,
    config: { igluVendor: settings.igluVendor, readDeadlineMs: settings.readDeadlineMs },
    newsletters: { facts: newsletterFacts },
    decisionCounts,
    previewTokens,
  };
  const decisions = createDecisionEngine(sources);
  // Samples are captured here, with this thread's meters (keyed decide's and browser decide's), and
  // kept by the main thread's replay.
  const impact = new ImpactSamples({
    every: settings.impactSampleEvery,
    logger,
    hashKey: settings.impactHashKey,
    onKept: (tenantId, siteId, sample) => channel.emit("impact-sample", { tenantId, siteId, sample }),
  });
  serveEngine(channel, decisions, registry, impact);
  serveRate(channel, keyedDecideRate);
  const deps = {
    ...sources,
    config: {
      maxBodyBytes: settings.maxBodyBytes,
      igluVendor: settings.igluVendor,
      readDeadlineMs: settings.readDeadlineMs,
    },
    keys,
    registry,
    now,
    keyedDecideRate,
    decisions,
    impact,
    logger,
  };

  await registry.loadAll();
  await keys.loadAll(now());
  await meters.prime();
  await gifts.loadRevoked(now());
  flusher.start();
  const stopFigures = reportFigures(channel, meters, flusher, keyedDecideRate);

  const onChange: { [topic: string]: (change: ThreadChange) => unknown } = {
    tenant: () => registry.reloadTenants(),
    site: (change) => registry.reloadSite(change.tenantId, change.subject),
    grants: (change) => userFacts.invalidate(change.tenantId, change.subject),
    traits: (change) => userFacts.invalidate(change.tenantId, change.subject),
    gift: (change) => gifts.onGiftChanged(change.tenantId, change.subject, now()),
    streaming: (change) => streamingFacts.invalidate(change.tenantId, change.subject),
    key: (change) => keys.onKeyChanged(change.subject),
    newsletters: (change) => newsletterFacts.invalidate(change.tenantId, change.subject),
  };

  // Changes that came while this thread was loading (a key revoked meanwhile among them) are
  // applied before it listens; later ones as they come.
  for (let change = early.shift(); change !== undefined; change = early.shift()) {
    await onChange[change.topic]?.(change);
  }
  applyChange = async (change) => {
    await onChange[change.topic]?.(change);
  };

  const route = withHotPath(keyedDecideHandler(deps), keyedDecideText(deps));
  const served = {
    config: { serve: { routes: { [KEYED_DECIDE_PATH]: { POST: route } } } },
    server: null as NodeServerHandle | null,
    fetch: (request: Request) => forward(request),
  };
  const forward = forwarder(channel, (request) => served.server?.requestIP(request) ?? null);
  const answers = new ThreadAnswers(channel, settings.accessLog, ANSWERS_INTERVAL_MS);
  serveOverH1(served, {
    port: settings.port,
    hostname: settings.host,
    maxRequestBodySize: settings.maxBodyBytes,
    timeouts: { keepAliveMs: settings.keepAliveMs },
    reusePort: settings.reusePort,
    onError: (error) => logger.error("unhandled server error", { error: error.message }),
    requests: answers,
  });
  const server = served.server as unknown as NodeServerHandle;

  return {
    port: server.port,
    /** Writes every count held now (an insight report reads them next). */
    flush: () => flusher.flushAll(),
    /** Stops listening, then writes every count held: the main thread closes the store after. */
    stop: async () => {
      await server.stop(false);
      answers.stop();
      stopFigures();
      flusher.stop();
      if (keyedDecideRate instanceof QuotaLeases) await keyedDecideRate.stop();
      await flusher.flushAll();
    },
  };
}

let started: Awaited<ReturnType<typeof start>> | null = null;
channel.serve("thread", {
  start: async (settings: ThreadSettings) => {
    started = await start(settings);
    return { port: started.port };
  },
  change: (change: ThreadChange) => (applyChange === null ? early.push(change) : applyChange(change)),
  flush: () => started?.flush(),
  stop: () => started?.stop(),
});
