import { type Database, openDatabase } from "../db/client";
import { type AuditStore, DrizzleAuditStore } from "./audit/store";
import { type Change, ChangeFeed, type ChangeTopic } from "./changes/change-feed";
import { CHECKOUT_LIMIT, CHECKOUT_WINDOW_MS } from "./checkout/model";
import type { Config } from "./config";
import { registerConsoleJobs } from "./console/service";
import { type ConsoleStore, DrizzleConsoleStore } from "./console/store";
import { createContentDeps } from "./content/deps";
import type { ContentDeps } from "./content/service";
import type { ContentStore } from "./content/store";
import type { DecisionCounts } from "./counters/decision-counts";
import { createCounterDeps, keyedRates } from "./counters/deps";
import type { CounterFigures } from "./counters/figures";
import type { Flusher } from "./counters/flusher";
import type { MeterCounters, MeterStore } from "./counters/meter-counters";
import { type KeyedRate, QuotaLeases } from "./counters/quota-leases";
import {
  createDecisionEngine,
  type DecisionEngine,
  type DecisionEngineDeps,
  type DecisionSampler,
} from "./decide/engine";
import { BROWSER_LIMIT, DECIDE_WINDOW_MS, KEYED_DECIDE_LIMIT } from "./decide/limits";
import { createGiftDeps } from "./gifts/deps";
import type { GiftLedger } from "./gifts/ledger";
import type { GiftStore } from "./gifts/store";
import { type ClientAddresses, clientAddresses } from "./http/client-address";
import { RouteTable } from "./http/error-envelope";
import { RequestStats } from "./http/request-stats";
import { type CredentialsPlugin, credentialsPlugin } from "./identity/credentials";
import { createIdentityDeps } from "./identity/deps";
import type { IdentityDeps } from "./identity/service";
import { ImpactSamples } from "./impact/samples";
import { errorText } from "./infra/error-text";
import { type OutsideCalls, Tracing, UNTRACED } from "./infra/tracing";
import { DrizzleInsightStore } from "./insight/drizzle-store";
import type { InsightDeps } from "./insight/service";
import { createInterventionHub } from "./interventions/deps";
import type { InterventionHub } from "./interventions/hub";
import { JobQueue } from "./jobs/queue";
import { DrizzleJobStore } from "./jobs/store";
import { KeyService } from "./keys/service";
import { DrizzleKeyStore, type KeyStore } from "./keys/store";
import { KeyUsage } from "./keys/usage";
import { createLogger, type Logger } from "./logger";
import { createOutbox } from "./mail/deps";
import type { MailTransport, Outbox } from "./mail/outbox";
import { SealedText } from "./mail/sealed-text";
import type { MailBudgetRules } from "./mail-budget/budgets";
import { MailBudget } from "./mail-budget/mail-budget";
import { DrizzleMailBudgetStore } from "./mail-budget/store";
import { createNewsletterDeps, type NewsletterDeps } from "./newsletters/deps";
import { registerAnonymousSubscribeJob } from "./newsletters/service";
import type { FlagEvaluator } from "./ofrep/service";
import { StoreSizes } from "./ops/store-sizes";
import { DrizzleOrgStore, type OrgStore } from "./orgs/store";
import { DrizzleServiceConfigStore, ServiceConfigs } from "./outside/service-config";
import { PreviewTokens } from "./preview/tokens";
import { createRecommendations, type Recommendations } from "./recommendations/deps";
import { RetentionSweeper } from "./retention/sweeper";
import { SiteRegistry } from "./sites/registry";
import { DrizzleSiteStore, type SiteStore } from "./sites/store";
import { StreamingFactsCache } from "./streaming/facts-cache";
import { DrizzleStreamingStore, type StreamingStore } from "./streaming/store";
import { UserFactsCache } from "./users/facts-cache";
import { DrizzleUserStore, type UserStore } from "./users/store";

export { BROWSER_LIMIT, DECIDE_WINDOW_MS } from "./decide/limits";

/** Everything the routes need, built once by createDeps. Tests build theirs with overrides. */
export interface Deps {
  readonly config: Config;
  readonly logger: Logger;
  /** OpenTelemetry traces (src/infra/tracing.ts); null when no OTLP endpoint is configured. */
  readonly tracing: Tracing | null;
  readonly now: () => number;
  readonly database: Database;
  readonly changes: ChangeFeed;
  readonly siteStore: SiteStore;
  readonly registry: SiteRegistry;
  readonly keyStore: KeyStore;
  readonly keys: KeyService;
  readonly meters: MeterCounters;
  readonly flusher: Flusher;
  /** Decisions counted per feature, outcome, variant and minute, flushed with the meters (src/insight). */
  readonly decisionCounts: DecisionCounts;
  /** What the insight reports read (src/insight). */
  readonly insightDeps: InsightDeps;
  readonly users: UserStore;
  readonly userFacts: UserFactsCache;
  readonly streamingStore: StreamingStore;
  readonly streamingFacts: StreamingFactsCache;
  readonly previewTokens: PreviewTokens;
  /** Decide's one face for every caller that is not keyed decide itself (src/decide/engine.ts). */
  readonly decisions: DecisionEngine;
  /** Keyed decide's windows: per process on the embedded store, quota leases on a server. */
  readonly keyedDecideRate: KeyedRate;
  /** OFREP's flag evaluation when not the process' own engine's (the decide thread's: src/decide-thread). */
  readonly ofrepFlags?: FlagEvaluator;
  /** The counters' figures with the decide thread's in them, when it runs (/metrics, /ready, flush). */
  readonly figures?: CounterFigures;
  /** Browser decide's impact sampler when not `impact` (the decide thread samples its own decisions). */
  readonly browserSampler?: DecisionSampler;
  /** Browser decide's and forward's windows per client and site: likewise. */
  readonly browserDecideRate: KeyedRate;
  readonly forwardRate: KeyedRate;
  /** Checkouts per client and site a minute (20): leased across processes on a Postgres server. */
  readonly checkoutRate: KeyedRate;
  readonly outbox: Outbox;
  /** Every mail sent on a caller's behalf is taken from it, in the transaction that writes it. */
  readonly mailBudget: MailBudget;
  readonly identityDeps: IdentityDeps;
  readonly credentials: CredentialsPlugin;
  /** The app's routes, for the JSON groups' error details (src/http/error-envelope.ts). */
  readonly routeTable: RouteTable;
  readonly orgs: OrgStore;
  readonly giftStore: GiftStore;
  readonly gifts: GiftLedger;
  /** Answers by route and status (and the access log), counted by the transport. */
  readonly requests: RequestStats;
  /** Who a request came from, behind the trusted proxies or not: every per-client rule's key. */
  readonly clients: ClientAddresses;
  /** Per-tenant settings of the outside services (CMS, recommendations, payments, newsletters). */
  readonly services: ServiceConfigs;
  /** The durable job queue (src/jobs): CMS re-reads now, vendor sync later. Never on the request path. */
  readonly jobs: JobQueue;
  /** Sweeps ended data off the request path, through the job queue (src/retention). */
  readonly retention: RetentionSweeper;
  /** The store's size per table, read from the catalog and cached (/metrics, `svc db stats`). */
  readonly storeSizes: StoreSizes;
  /** The operator actions' audit log (src/audit). */
  readonly audit: AuditStore;
  /** Console users, sign-in links and sessions (src/console). */
  readonly consoleStore: ConsoleStore;
  /** Content items read from the CMS (src/content), and what a re-read needs. */
  readonly contentStore: ContentStore;
  readonly contentDeps: ContentDeps;
  /** Recommendations (src/recommendations): the engine's deps, the keyed mount's cache, quota counts. */
  readonly recommendations: Recommendations;
  /** Newsletters (src/newsletters): standings, confirmations, their fact cache, vendor sync. */
  readonly newsletters: NewsletterDeps;
  /** The interventions stream's open streams and recent events (src/interventions). */
  readonly interventions: InterventionHub;
  /** Recent decide requests, sampled in memory for impact replay before a publish (src/impact). */
  readonly impact: ImpactSamples;
  /** `started`: startDeps loaded documents and keys and started the timers (for /ready). */
  readonly lifecycle: { started: boolean };
  /** Told of each change after this process applied it (the request thread's copy follows). */
  readonly changeListeners: ((change: Change) => void)[];
}

export interface DepsOverrides {
  readonly now?: () => number;
  readonly logger?: Logger;
  /** An already-open database (tests share one per file). */
  readonly database?: Database;
  /** How often the change feed polls (ms). */
  readonly pollMs?: number;
  /** Where mail goes (tests pass a transport of their own). */
  readonly mailTransport?: MailTransport;
  /** Where `env:NAME` references in outside-service settings resolve (default: process.env). */
  readonly serviceEnv?: Readonly<Record<string, string | undefined>>;
  /** The meters' store (tests wrap the drizzle one to force what other processes would cause). */
  readonly meterStore?: MeterStore;
  /** The mail budgets' numbers (default MAIL_BUDGETS; tests pass small ones). */
  readonly mailBudgets?: MailBudgetRules;
}

/** What each topic of the change feed does in this process. */
type ChangeHandlers = { [T in ChangeTopic]?: (change: Change) => Promise<unknown> | unknown };

/**
 * The composition root: opens the store, then calls each capability's builder in order, passing
 * each only what it uses. The change feed's handlers are one table, written with the feed; two of
 * them name capabilities built after it (the key service and newsletters publish to the feed they
 * handle), which is sound because a handler runs only once the feed has started (startDeps).
 */
export async function createDeps(config: Config, overrides: DepsOverrides = {}): Promise<Deps> {
  const baseLogger = overrides.logger ?? createLogger(config.logLevel, undefined, undefined, config.logFormat);
  const now = overrides.now ?? Date.now;
  const { database, tracing } = await openStore(config, overrides.database, baseLogger);
  // With tracing on, a line logged inside a span carries its trace and span ids.
  const logger = tracing === null ? baseLogger : tracing.logsOf(baseLogger);
  const { db, kind } = database;
  const outside: OutsideCalls = tracing ?? UNTRACED;
  const siteStore = new DrizzleSiteStore(db, new SealedText(config.secret, "content-key"));
  const registry = new SiteRegistry(siteStore, logger);
  const keyStore = new DrizzleKeyStore(db);
  const keyUsage = new KeyUsage(keyStore);
  const insight = new DrizzleInsightStore(db);
  const counters = createCounterDeps({
    db,
    kind,
    config,
    now,
    logger,
    meterStore: overrides.meterStore,
    keyUsage,
    decisionSink: insight,
  });
  const { meters, flusher } = counters;
  const users = new DrizzleUserStore(db, config.readDeadlineMs);
  const userFacts = new UserFactsCache(users);
  const streamingStore = new DrizzleStreamingStore(db);
  const streamingFacts = new StreamingFactsCache(streamingStore);
  // The feed's handlers and the gift ledger's publisher below run only once the feed has started
  // (startDeps) or a gift is redeemed, after every capability they name exists.
  const { giftStore, gifts } = createGiftDeps({
    db,
    config,
    meters,
    // A newly counted reader of a gift link is a change every process's streams hear of.
    onRedeemed: (site, giftId) => {
      changes.publish({ topic: "gift", tenantId: site.tenantId, subject: giftId }).catch((error: unknown) => {
        logger.warn("publishing a gift redemption failed", { error: errorText(error) });
      });
    },
  });
  const interventions = createInterventionHub({ db, kind, config, registry, now });

  const onChange: Readonly<ChangeHandlers> = {
    tenant: () => registry.reloadTenants(),
    site: (change) => registry.reloadSite(change.tenantId, change.subject),
    grants: (change) => userFacts.invalidate(change.tenantId, change.subject),
    traits: (change) => userFacts.invalidate(change.tenantId, change.subject),
    gift: (change) => gifts.onGiftChanged(change.tenantId, change.subject, now()),
    streaming: (change) => streamingFacts.invalidate(change.tenantId, change.subject),
    key: (change) => keys.onKeyChanged(change.subject),
    newsletters: (change) => newsletters.facts.invalidate(change.tenantId, change.subject),
  };
  const changeListeners: ((change: Change) => void)[] = [];
  const changes = changeFeed(database, onChange, changeListeners, interventions, logger, overrides.pollMs);
  const keys = new KeyService(keyStore, keyUsage, changes, config.readDeadlineMs);

  const outbox = createOutbox({ db, kind, config, logger, now, transport: overrides.mailTransport });
  const mailBudget = new MailBudget(db, new DrizzleMailBudgetStore(db), outbox, logger, now, overrides.mailBudgets);
  const orgs = new DrizzleOrgStore(db, config.readDeadlineMs);
  const identityDeps = createIdentityDeps({
    db,
    config,
    users,
    outbox,
    mailBudget,
    logger,
    now,
    outside,
    registry,
    changes,
    organizationClaims: (tenantId, userId, active) => orgs.claims(tenantId, userId, active),
  });
  const services = new ServiceConfigs(
    new DrizzleServiceConfigStore(db),
    new SealedText(config.secret, "service-config"),
    overrides.serviceEnv ?? process.env,
  );
  const jobs = new JobQueue(new DrizzleJobStore(db), logger, now, kind === "server", tracing);
  const contentDeps = createContentDeps({ db, config, services, jobs, now, outside });
  const newsletters = createNewsletterDeps({
    db,
    config,
    identity: identityDeps.identity,
    users,
    outbox,
    mailBudget,
    services,
    jobs,
    changes,
    registry,
    logger,
    now,
    outside,
  });
  const recommendations = createRecommendations({
    db,
    config,
    services,
    content: contentDeps.store,
    logger,
    now,
    outside,
  });
  const previewTokens = new PreviewTokens(config.secret);
  const clients = clientAddresses(config);
  const built = {
    newsletters,
    interventions,
    impact: new ImpactSamples({ every: config.impactSampleEvery, logger }),
    jobs,
    retention: new RetentionSweeper({
      db,
      jobs,
      settings: config.retention,
      now,
      logger,
      vacuum: kind === "embedded",
      meterRetention: (tenantId, siteId, meter) =>
        registry.site(tenantId, siteId)?.live?.document.meters?.[meter]?.retainDays,
    }),
    storeSizes: new StoreSizes(db, now),
    audit: new DrizzleAuditStore(db),
    consoleStore: new DrizzleConsoleStore(db),
    recommendations,
    contentStore: contentDeps.store,
    contentDeps,
    services,
    giftStore,
    gifts,
    outbox,
    mailBudget,
    identityDeps,
    orgs,
    requests: new RequestStats(logger, config.accessLog, clients),
    clients,
    lifecycle: { started: false },
    changeListeners,
    config,
    logger,
    tracing,
    now,
    database,
    changes,
    siteStore,
    registry,
    keyStore,
    keys,
    ...counters,
    users,
    userFacts,
    streamingStore,
    streamingFacts,
    previewTokens,
    insightDeps: { insight, flushCounters: () => flusher.flushAll(), now },
    ...decideDeps(
      { db, kind, config, logger, now, tracing },
      {
        meters,
        userFacts,
        streamingFacts,
        gifts,
        config,
        newsletters,
        previewTokens,
        decisionCounts: counters.decisionCounts,
      },
    ),
  };
  const deps: Deps = { ...built, credentials: credentialsPlugin(built), routeTable: new RouteTable() };
  registerConsoleJobs(deps);
  registerAnonymousSubscribeJob(newsletters);
  return deps;
}

/** Opens the store (unless tests pass one) and, when an OTLP endpoint is configured, tracing. */
async function openStore(
  config: Config,
  open: Database | undefined,
  logger: Logger,
): Promise<{ database: Database; tracing: Tracing | null }> {
  const database =
    open ??
    (await openDatabase({
      url: config.databaseUrl,
      dataDir: config.dataDir,
      hangMs: config.readDeadlineMs,
      sharedBuffersMb: config.embeddedSharedBuffersMb,
      idleThread: config.runtimeThreads === "idle",
      onProgress: (message, fields) => logger.info(message, fields),
    }));
  // Built only when an endpoint is configured: otherwise nothing anywhere creates a span.
  const tracing = config.traces === undefined ? null : new Tracing(config.traces);
  if (tracing !== null) database.observeStatements(tracing.statements);
  return { database, tracing };
}

/** Decide's engine for every caller other than keyed decide, and the decide routes' windows. */
function decideDeps(
  rates: Pick<Database, "db" | "kind"> & {
    readonly config: Pick<Config, "readDeadlineMs">;
    readonly logger: Logger;
    readonly now: () => number;
    readonly tracing: Tracing | null;
  },
  engine: DecisionEngineDeps,
): Pick<Deps, "decisions" | "keyedDecideRate" | "browserDecideRate" | "forwardRate" | "checkoutRate"> {
  const decisions = tracedEngine(rates.tracing, createDecisionEngine(engine));
  // Their lease keys never meet: a key id, or a route's name and the client.
  const windows = keyedRates({
    db: rates.db,
    kind: rates.kind,
    windowMs: DECIDE_WINDOW_MS,
    logger: rates.logger,
    claimDeadlineMs: rates.config.readDeadlineMs,
    now: rates.now,
  });
  // Checkout's window is a minute long: leases of its own length (a prune drops only its rows).
  const minutes = keyedRates({
    db: rates.db,
    kind: rates.kind,
    windowMs: CHECKOUT_WINDOW_MS,
    logger: rates.logger,
    claimDeadlineMs: rates.config.readDeadlineMs,
    now: rates.now,
  });
  return {
    decisions,
    keyedDecideRate: windows(KEYED_DECIDE_LIMIT),
    browserDecideRate: windows(BROWSER_LIMIT),
    forwardRate: windows(BROWSER_LIMIT),
    checkoutRate: minutes(CHECKOUT_LIMIT),
  };
}

/**
 * The change feed, applying each change through `handlers` (read at each change, so handlers
 * added later apply too) with the interventions hub told before and after. The embedded store
 * belongs to this one process, whose writers publish (and apply) their own changes, so it has no
 * timer poll: an idle server runs no query at all.
 */
function changeFeed(
  database: Database,
  handlers: ChangeHandlers,
  listeners: readonly ((change: Change) => void)[],
  interventions: InterventionHub,
  logger: Logger,
  pollMs = database.kind === "embedded" ? 0 : 1000,
): ChangeFeed {
  const apply = async (change: Change) => {
    const before = interventions.before(change);
    try {
      await handlers[change.topic]?.(change);
      for (const listener of listeners) listener(change);
    } finally {
      interventions.onChange(change, before);
    }
  };
  return new ChangeFeed(database, apply, logger, pollMs);
}

/** Loads state and starts the timers (change poll, counter flush). */
export async function startDeps(deps: Deps): Promise<void> {
  await deps.registry.loadAll();
  await deps.keys.loadAll(deps.now());
  await deps.meters.prime();
  await deps.gifts.loadRevoked(deps.now());
  await deps.changes.start();
  deps.flusher.start();
  deps.outbox.start();
  deps.jobs.start();
  deps.retention.start();
  deps.lifecycle.started = true;
}

/** Flushes every counter and closes the store: a graceful stop loses nothing. */
export async function stopDeps(deps: Deps, options: { closeDatabase?: boolean } = {}): Promise<void> {
  deps.lifecycle.started = false;
  deps.interventions.closeAll();
  deps.flusher.stop();
  for (const rate of [deps.keyedDecideRate, deps.browserDecideRate, deps.forwardRate, deps.checkoutRate]) {
    if (rate instanceof QuotaLeases) await rate.stop();
  }
  deps.retention.stop();
  // Jobs first: a job in flight may still write mail and kick the outbox.
  await deps.jobs.stop();
  await deps.outbox.stop();
  await deps.changes.stop();
  await deps.flusher.flushAll();
  if (options.closeDatabase !== false) await deps.database.close();
  // The spans of the stop itself go too (a shutdown flushes the batch).
  await deps.tracing?.shutdown().catch((error: unknown) => {
    deps.logger.warn("sending the last spans failed", { error: String(error) });
  });
}

/**
 * With tracing on, each decision other callers ask of the engine (browser decide, OFREP, the
 * console's try, explain) is a `decide` span; with it off, the engine as built.
 */
function tracedEngine(tracing: Tracing | null, engine: DecisionEngine): DecisionEngine {
  if (tracing === null) return engine;
  const span =
    <A extends unknown[], R>(name: string, call: (...args: A) => R) =>
    (...args: A): R =>
      tracing.inSpan(name, {}, () => call(...args)) as R;
  return {
    evaluate: span("decide", engine.evaluate),
    decideJson: span("decide", engine.decideJson),
    tryJson: span("decide try", engine.tryJson),
    explainJson: span("decide explain", engine.explainJson),
    chooseDocument: engine.chooseDocument,
  };
}
