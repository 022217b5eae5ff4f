import { type Database, openDatabase } from "../db/client";
import { type AuditStore, DrizzleAuditStore } from "./audit/store";
import { type Change, ChangeFeed, type ChangeTopic } from "./changes/change-feed";
import type { Config } from "./config";
import { registerConsoleJobs } from "./console/service";
import { type ConsoleStore, DrizzleConsoleStore } from "./console/store";
import { type ContentDeps, registerContentJobs } from "./content/service";
import { type ContentStore, DrizzleContentStore } from "./content/store";
import { DecisionCounts } from "./counters/decision-counts";
import { Flusher } from "./counters/flusher";
import { MeterCounters, type MeterStore } from "./counters/meter-counters";
import { DrizzleLeaseStore, type KeyedRate, QuotaLeases } from "./counters/quota-leases";
import { RateWindows } from "./counters/rate-windows";
import { createDecisionEngine, type DecisionEngine } from "./decide/engine";
import { GiftLedger } from "./gifts/ledger";
import { DrizzleGiftStore, type GiftStore } from "./gifts/store";
import { GiftTokens } from "./gifts/token";
import { type ClientAddresses, clientAddresses } from "./http/client-address";
import { RouteTable } from "./http/error-envelope";
import { RequestStats } from "./http/request-stats";
import { AccessTokens } from "./identity/access-token";
import { type CredentialsPlugin, credentialsPlugin } from "./identity/credentials";
import type { IdentityDeps } from "./identity/service";
import { DrizzleIdentityStore } from "./identity/store";
import { UpstreamVerifier } from "./identity/upstream";
import { ImpactSamples } from "./impact/samples";
import { errorText } from "./infra/error-text";
import { type OutsideCalls, Tracing, UNTRACED } from "./infra/tracing";
import { DrizzleInsightStore } from "./insight/drizzle-store";
import type { InsightDeps } from "./insight/service";
import { InterventionHub } from "./interventions/hub";
import { DrizzleStreamSlots } from "./interventions/stream-slots";
import { JobQueue } from "./jobs/queue";
import { DrizzleJobStore } from "./jobs/store";
import { KeyService } from "./keys/service";
import { DrizzleKeyStore, type KeyStore } from "./keys/store";
import { KeyUsage } from "./keys/usage";
import { createLogger, type Logger } from "./logger";
import { logTransport, type MailTransport, noMailTransport, Outbox, smtpTransport } from "./mail/outbox";
import { SealedText } from "./mail/sealed-text";
import type { MailBudgetRules } from "./mail-budget/budgets";
import { MailBudget } from "./mail-budget/mail-budget";
import { DrizzleMailBudgetStore } from "./mail-budget/store";
import { createNewsletterDeps, type NewsletterDeps } from "./newsletters/deps";
import { registerAnonymousSubscribeJob } from "./newsletters/service";
import { StoreSizes } from "./ops/store-sizes";
import { DrizzleOrgStore, type OrgStore } from "./orgs/store";
import { DrizzleServiceConfigStore, ServiceConfigs } from "./outside/service-config";
import { PreviewTokens } from "./preview/tokens";
import { AnswerCache } from "./recommendations/cache";
import { type BrowserRecommendationRate, browserRecommendationRate } from "./recommendations/routes";
import type { RecommendationDeps } from "./recommendations/service";
import { DrizzleUsageStore, type UsageStore } from "./recommendations/store";
import { RetentionSweeper } from "./retention/sweeper";
import { SiteRegistry } from "./sites/registry";
import { DrizzleSiteStore, type SiteStore } from "./sites/store";
import { StreamingFactsCache } from "./streaming/facts-cache";
import { DrizzleStreamingStore, type StreamingStore } from "./streaming/store";
import { UserFactsCache } from "./users/facts-cache";
import { DrizzleUserStore, type UserStore } from "./users/store";

/** Keyed decide: 2,000 requests per fixed 10-second window per key. */
const KEYED_DECIDE_LIMIT = 2_000;
/** Browser decide and forward: 200 requests per 10 seconds per client per site. */
export const BROWSER_LIMIT = 200;
export const DECIDE_WINDOW_MS = 10_000;
/** Keyed recommendations: one answer per key, site and full URL for 15 minutes. */
const RECOMMENDATION_CACHE_MS = 15 * 60_000;

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
  /** Browser decide's and forward's windows per client and site: likewise. */
  readonly browserDecideRate: KeyedRate;
  readonly forwardRate: KeyedRate;
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
  readonly recommendations: {
    readonly deps: RecommendationDeps;
    /** The keyed mount's answers as JSON text (a hit serialises nothing). */
    readonly cache: AnswerCache<string>;
    readonly usage: UsageStore;
    /** The browser mount's windows, per client and per site (per process). */
    readonly browserRate: BrowserRecommendationRate;
  };
  /** Newsletters (src/newsletters): standings, confirmations, their fact cache, vendor sync. */
  readonly newsletters: NewsletterDeps;
  /** The interventions stream's open streams and recent events (src/interventions). */
  readonly interventions: InterventionHub;
  /** Recent decide requests, sampled in memory for impact replay before a publish (src/impact). */
  readonly impact: ImpactSamples;
  /** `started`: startDeps loaded documents and keys and started the timers (for /ready). */
  readonly lifecycle: { started: boolean };
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

/** The composition root: opens the store, builds stores, caches, counters and the change feed. */
export async function createDeps(config: Config, overrides: DepsOverrides = {}): Promise<Deps> {
  const logger = overrides.logger ?? createLogger(config.logLevel, undefined, undefined, config.logFormat);
  const now = overrides.now ?? Date.now;
  const database =
    overrides.database ??
    (await openDatabase({
      url: config.databaseUrl,
      dataDir: config.dataDir,
      hangMs: config.readDeadlineMs,
      onProgress: (message, fields) => logger.info(message, fields),
    }));
  // Built only when an endpoint is configured: otherwise nothing anywhere creates a span.
  const tracing = config.traces === undefined ? null : new Tracing(config.traces);
  if (tracing !== null) database.observeStatements(tracing.statements);
  const outside: OutsideCalls = tracing ?? UNTRACED;
  const siteStore = new DrizzleSiteStore(database.db, new SealedText(config.secret, "content-key"));
  const registry = new SiteRegistry(siteStore, logger);
  const keyStore = new DrizzleKeyStore(database.db);
  const keyUsage = new KeyUsage(keyStore);
  // The embedded store has one writer (this process holds the data folder), so the counters
  // may know which keys exist and skip reads for first-seen subjects.
  const meters = new MeterCounters(overrides.meterStore ?? database.db, {
    maxEntries: config.meterEntries,
    exclusiveWriter: database.kind === "embedded",
    // Other processes (workers, hosts) may serve the same readers on a Postgres server.
    exact: database.kind === "server",
    now,
  });
  const insight = new DrizzleInsightStore(database.db);
  const decisionCounts = new DecisionCounts(insight);
  const flusher = new Flusher([keyUsage, meters, decisionCounts], config.flushIntervalMs, logger);
  const users = new DrizzleUserStore(database.db, config.readDeadlineMs);
  const userFacts = new UserFactsCache(users);
  const streamingStore = new DrizzleStreamingStore(database.db);
  const streamingFacts = new StreamingFactsCache(streamingStore);

  const giftStore = new DrizzleGiftStore(database.db);
  const gifts = new GiftLedger(new GiftTokens(config.secret), giftStore, meters, config.readDeadlineMs);

  const interventions = new InterventionHub(registry, {
    heartbeatMs: config.sseHeartbeatMs,
    streamsPerKey: config.sseStreamsPerKey,
    resumeMs: 5 * 60_000,
    resumeEvents: 1000,
    now,
    // Renewed at every heartbeat: a process gone for three no longer holds its slots.
    slots: database.kind === "server" ? new DrizzleStreamSlots(database.db, 3 * config.sseHeartbeatMs) : null,
  });
  // What each topic of the change feed does in this process. Capabilities built after the feed
  // (the key service publishes to it) add their handler once they exist.
  const onChange: { [T in ChangeTopic]?: (change: Change) => Promise<unknown> | unknown } = {
    tenant: () => registry.reloadTenants(),
    site: (change) => registry.reloadSite(change.tenantId, change.subject),
    grants: (change) => userFacts.invalidate(change.tenantId, change.subject),
    traits: (change) => userFacts.invalidate(change.tenantId, change.subject),
    gift: (change) => gifts.onGiftChanged(change.tenantId, change.subject, now()),
    streaming: (change) => streamingFacts.invalidate(change.tenantId, change.subject),
  };
  const apply = async (change: Change) => {
    const before = interventions.before(change);
    try {
      await onChange[change.topic]?.(change);
    } finally {
      interventions.onChange(change, before);
    }
  };
  // The embedded store belongs to this one process, whose writers publish (and apply) their own
  // changes, so it has no timer poll: an idle server runs no query at all.
  const pollMs = overrides.pollMs ?? (database.kind === "embedded" ? 0 : 1000);
  const changes = new ChangeFeed(database, apply, logger, pollMs);
  // A newly counted reader of a gift link is a change every process's streams hear of.
  gifts.onRedeemed = (site, giftId) => {
    changes.publish({ topic: "gift", tenantId: site.tenantId, subject: giftId }).catch((error: unknown) => {
      logger.warn("publishing a gift redemption failed", { error: errorText(error) });
    });
  };
  const keys = new KeyService(keyStore, keyUsage, changes, config.readDeadlineMs);
  onChange.key = (change) => keys.onKeyChanged(change.subject);
  // Without SMTP, mail is printed only for the embedded development store; with a Postgres
  // server (DATABASE_URL) it is refused, so live sign-in links never reach a production log.
  const transport =
    overrides.mailTransport ??
    (config.smtpUrl
      ? smtpTransport(config.smtpUrl, config.mailFrom)
      : config.databaseUrl === undefined
        ? logTransport()
        : noMailTransport());
  const outbox = new Outbox(
    database.db,
    transport,
    logger,
    now,
    database.kind === "server",
    new SealedText(config.secret, "mail-outbox"),
  );
  const mailBudget = new MailBudget(
    database.db,
    new DrizzleMailBudgetStore(database.db),
    outbox,
    logger,
    now,
    overrides.mailBudgets,
  );
  const orgs = new DrizzleOrgStore(database.db, config.readDeadlineMs);
  const identityDeps: IdentityDeps = {
    identity: new DrizzleIdentityStore(database.db, config.readDeadlineMs),
    users,
    accessTokens: new AccessTokens(config.secret),
    upstream: new UpstreamVerifier(config.idpTimeoutMs, now, outside.fetch("idp")),
    outbox,
    mailBudget,
    logger,
    now,
    identityProvider: (tenantId) => registry.identityProvider(tenantId),
    organizationClaims: (tenantId, userId, active) => orgs.claims(tenantId, userId, active),
    traitsChanged: (tenantId, userId) => changes.publish({ topic: "traits", tenantId, subject: userId }),
  };
  const services = new ServiceConfigs(
    new DrizzleServiceConfigStore(database.db),
    new SealedText(config.secret, "service-config"),
    overrides.serviceEnv ?? process.env,
  );
  const jobs = new JobQueue(new DrizzleJobStore(database.db), logger, now, database.kind === "server", tracing);
  const contentStore = new DrizzleContentStore(database.db);
  const contentDeps: ContentDeps = {
    services,
    store: contentStore,
    jobs,
    now,
    cmsTimeoutMs: config.cmsTimeoutMs,
    outside,
  };
  registerContentJobs(contentDeps, config.contentDebounceMs);
  const newsletters = createNewsletterDeps({
    db: database.db,
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
  onChange.newsletters = (change) => newsletters.facts.invalidate(change.tenantId, change.subject);
  const usage = new DrizzleUsageStore(database.db);
  const recommendations = {
    deps: {
      services,
      content: contentStore,
      usage,
      logger,
      now,
      timeoutMs: config.recommendationTimeoutMs,
      outside,
    },
    cache: new AnswerCache<string>(RECOMMENDATION_CACHE_MS, 10_000, now),
    usage,
    browserRate: browserRecommendationRate(config.recommendationsSitePerMinute),
  };
  const previewTokens = new PreviewTokens(config.secret);
  const clients = clientAddresses(config);
  const leaseStore = new DrizzleLeaseStore(database.db);
  const windows = (limit: number): KeyedRate =>
    database.kind === "server"
      ? new QuotaLeases(limit, DECIDE_WINDOW_MS, leaseStore, logger, config.readDeadlineMs, { now })
      : new RateWindows(limit, DECIDE_WINDOW_MS);
  const built = {
    newsletters,
    interventions,
    impact: new ImpactSamples({ every: config.impactSampleEvery, logger }),
    jobs,
    retention: new RetentionSweeper({
      db: database.db,
      jobs,
      settings: config.retention,
      now,
      logger,
      vacuum: database.kind === "embedded",
      meterRetention: (tenantId, siteId, meter) =>
        registry.site(tenantId, siteId)?.live?.document.meters?.[meter]?.retainDays,
    }),
    storeSizes: new StoreSizes(database.db, now),
    audit: new DrizzleAuditStore(database.db),
    consoleStore: new DrizzleConsoleStore(database.db),
    recommendations,
    contentStore,
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
    meters,
    flusher,
    users,
    userFacts,
    streamingStore,
    streamingFacts,
    previewTokens,
    decisionCounts,
    insightDeps: { insight, flushCounters: () => flusher.flushAll(), now },
    decisions: tracedEngine(
      tracing,
      createDecisionEngine({
        meters,
        userFacts,
        streamingFacts,
        gifts,
        config,
        newsletters,
        previewTokens,
        decisionCounts,
      }),
    ),
    // The embedded store has one process: its windows are exact in memory. On a server, several
    // processes and hosts may serve one key (or client), so each leases its share of the window
    // from Postgres. Their lease keys never meet: a key id, or a route's name and the client.
    keyedDecideRate: windows(KEYED_DECIDE_LIMIT),
    browserDecideRate: windows(BROWSER_LIMIT),
    forwardRate: windows(BROWSER_LIMIT),
  };
  const deps: Deps = { ...built, credentials: credentialsPlugin(built), routeTable: new RouteTable() };
  registerConsoleJobs(deps);
  registerAnonymousSubscribeJob(newsletters);
  return deps;
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
  for (const rate of [deps.keyedDecideRate, deps.browserDecideRate, deps.forwardRate]) {
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
