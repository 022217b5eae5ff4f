import { randomBytes } from "node:crypto";
import { chmodSync, existsSync, readFileSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import proxyaddr from "proxy-addr";
import { privateFolder } from "../db/private-files";

/** Frozen configuration, read once from the environment in main.ts and passed down. */
export interface Config {
  readonly port: number;
  readonly host: string;
  /** Postgres server URL; undefined means embedded Postgres (PGlite) under dataDir. */
  readonly databaseUrl: string | undefined;
  readonly dataDir: string;
  /** Operator token for /admin and the CLI. */
  readonly operatorToken: string;
  /** Secret that signs preview tokens and access cookies (HMAC / JWT). */
  readonly secret: string;
  /** Largest accepted request body, in bytes. */
  readonly maxBodyBytes: number;
  /** How often counter deltas (meters) are flushed to Postgres. */
  readonly flushIntervalMs: number;
  /** How often the statistics (key usage, decision counts) are, rounded to whole flush intervals. */
  readonly statsFlushIntervalMs: number;
  /** Most meter values (subject-meter pairs) held in memory; past it the oldest clean ones go. */
  readonly meterEntries: number;
  /**
   * The embedded store's shared buffers, MB (Postgres' `shared_buffers`; no effect with a
   * Postgres server). Resident once used; more keeps a large store's counter writes cheaper.
   */
  readonly embeddedSharedBuffersMb: number;
  /** Seed the demo tenant/site/key on an empty store (default: only when embedded). */
  readonly seedDemo: boolean;
  readonly logLevel: "debug" | "info" | "warn" | "error" | "silent";
  /**
   * `json` (production): one JSON line per entry on stdout. `pretty`: pino-pretty's coloured,
   * readable lines (SVC_LOG_FORMAT; the default when NODE_ENV=development).
   */
  readonly logFormat: "json" | "pretty";
  /**
   * OpenTelemetry traces over OTLP/HTTP (docs/observability.md); undefined when no endpoint is
   * configured: then nothing is traced at all.
   */
  readonly traces: TracingSettings | undefined;
  /** Iglu vendor of the experiment-exposure schema in decide responses. */
  readonly igluVendor: string;
  /** smtp:// or smtps:// URL; unset means mail is printed on stdout (development). */
  readonly smtpUrl: string | undefined;
  readonly mailFrom: string;
  /** Origin of mailed links for a tenant with none of its own (src/identity/link-origin.ts has the rule). */
  readonly publicUrl: string | undefined;
  /** How long an upstream identity provider's JWKS may take before the exchange answers 503. */
  readonly idpTimeoutMs: number;
  /** How long a call to the payment provider (Stripe) may take before checkout answers 503. */
  readonly paymentTimeoutMs: number;
  /** Content re-reads of one (site, type, id) within this window collapse into one read. */
  readonly contentDebounceMs: number;
  /** How long one CMS read may take before it fails (and is retried with backoff). */
  readonly cmsTimeoutMs: number;
  /** How long the recommendation engine may take before the request answers 503. */
  readonly recommendationTimeoutMs: number;
  /** Browser recommendation calls one site answers per minute, per process (its clients share it). */
  readonly recommendationsSitePerMinute: number;
  /** How long one call to the newsletter vendor (listmonk) may take before the sync is retried. */
  readonly newsletterVendorTimeoutMs: number;
  /**
   * `normal` (default): the runtime's threads as Bun schedules them. `idle` (opt-in): its
   * background threads yield to the request thread (src/runtime; Linux and glibc only).
   */
  readonly runtimeThreads: "idle" | "normal";
  /**
   * `h1` (default): HTTP/1.1 parsed by src/http/h1 on Bun.listen, pipelined requests answered in
   * order; `node`: Bun's node:http server, which answers them too, more slowly; `bun`: Bun.serve,
   * which drops a pipelining client's connection behind a pending answer (src/http/node-server.ts).
   */
  readonly httpServer: "h1" | "node" | "bun";
  /**
   * `on` (SVC_DECIDE_THREAD): the h1 transport and keyed decide run in a thread of their own
   * (src/decide-thread), every other request is handed to this one; `off` (default): one thread.
   */
  readonly decideThread: boolean;
  /**
   * How long at least a keep-alive connection with nothing in flight stays open
   * (SVC_HTTP_IDLE_TIMEOUT_MS, 10 s; up to 250 s, within `Bun.serve`'s 255). Behind a proxy or load
   * balancer that keeps its own idle connections to the service, it must be longer than the
   * proxy's (docs/deploying.md).
   */
  readonly httpIdleTimeoutMs: number;
  /** How long a request waits for a store read before it answers 503 with Retry-After. */
  readonly readDeadlineMs: number;
  /**
   * About one keyed or browser decide request in this many is kept (at most 20 a second, 200 per
   * site, in memory) for impact replay (SVC_IMPACT_SAMPLE_EVERY, default 32; 0: none).
   */
  readonly impactSampleEvery: number;
  /** How long a start keeps retrying an unreachable DATABASE_URL before it exits. */
  readonly startRetryMs: number;
  /** How long an organization invitation stays pending (SVC_INVITATION_TTL_DAYS, default 7). */
  readonly invitationTtlDays: number;
  /** A bearer token that may read /metrics besides the operator token (SVC_METRICS_TOKEN). */
  readonly metricsToken: string | undefined;
  /** The interventions stream: heartbeat interval (SVC_SSE_HEARTBEAT_MS) and open streams per key. */
  readonly sseHeartbeatMs: number;
  readonly sseStreamsPerKey: number;
  /** One JSON line per answered request (SVC_ACCESS_LOG=1; off by default). */
  readonly accessLog: boolean;
  /** /ready answers 503 when the last good counter flush is more than this many intervals old. */
  readonly readyFlushIntervals: number;
  /** Server processes sharing the port on this host (SVC_WORKERS, default 1; more needs DATABASE_URL). */
  readonly workers: number;
  /**
   * Peers whose `X-Forwarded-For`, `-Proto` and `-Host` are believed (SVC_TRUSTED_PROXIES: addresses,
   * CIDR ranges, `loopback`, `linklocal`, `uniquelocal`; none by default). src/http/client-address.ts.
   */
  readonly trustedProxies: readonly string[];
  /** How long ended data is kept before the sweeper removes it (docs/operations.md, "Retention"). */
  readonly retention: RetentionSettings;
}

/** Where spans go (the standard OTEL_* variables; docs/observability.md). */
export interface TracingSettings {
  /** The OTLP/HTTP traces URL (`.../v1/traces`). */
  readonly endpoint: string;
  /** Sent with every export (an API key of a tracing vendor: never logged). */
  readonly headers: Readonly<Record<string, string>>;
  readonly serviceName: string;
  /** How long spans wait in the batch before they are sent. */
  readonly exportDelayMs: number;
}

/** Retention settings (SVC_RETAIN_*, SVC_RETENTION_*); every period is counted from when the data ended. */
export interface RetentionSettings {
  /** How often a sweep is owed (ms); 0: never (the operator sweeps some other way). */
  readonly intervalMs: number;
  /** Rows one statement deletes: small, so no sweep statement holds the store for long. */
  readonly batch: number;
  /** change_log rows older than this (minutes) have been read by every running process. */
  readonly changeLogMinutes: number;
  /** meter_counts/meter_seen rows of a period this many days after it ended everywhere. */
  readonly meterDays: number;
  /** Expired sessions, links, tokens, invitations, confirmations, grants and gift links. */
  readonly expiredDays: number;
  /** Sent and failed mail in mail_outbox, by when it was queued. */
  readonly mailDays: number;
  /** Checkout events (the provider's retry window, 3 days at Stripe, plus a margin). */
  readonly checkoutEventDays: number;
  /** The audit log, identity conflicts, dead jobs and recommendation usage. */
  readonly auditDays: number;
  /** Document versions kept per site besides the live and staged ones (the newest), at most. */
  readonly documentVersions: number;
  /** Days a version is kept past the newest few (`DOCUMENT_VERSIONS_ALWAYS`), within `documentVersions`. */
  readonly documentDays: number;
  /** Decision counts by minute, hour and day (src/insight): days each grain is kept. */
  readonly decisionMinuteDays: number;
  readonly decisionHourDays: number;
  readonly decisionDayDays: number;
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`Invalid configuration: ${variable} ${problem}`);
  }
}

type Env = Record<string, string | undefined>;

function intVar(env: Env, name: string, fallback: number, min: number, max: number): number {
  const raw = env[name];
  if (raw === undefined || raw === "") return fallback;
  if (!/^\d+$/.test(raw)) throw new ConfigError(name, `must be a whole number (got "${raw}")`);
  const value = Number(raw);
  if (value < min || value > max) throw new ConfigError(name, `must be between ${min} and ${max} (got ${value})`);
  return value;
}

/** Reads a secret from the environment, else from a 0600 file in the data folder (created once). */
function secretVar(env: Env, name: string, dataDir: string, fileName: string, minLength: number): string {
  const raw = env[name];
  if (raw !== undefined && raw !== "") {
    if (raw.length < minLength) throw new ConfigError(name, `must be at least ${minLength} characters`);
    return raw;
  }
  const file = join(dataDir, fileName);
  if (existsSync(file)) {
    const stored = readFileSync(file, "utf8").trim();
    if (stored.length >= minLength) return stored;
  }
  privateFolder(dataDir);
  const generated = randomBytes(32).toString("base64url");
  writeFileSync(file, `${generated}\n`, { mode: 0o600 });
  chmodSync(file, 0o600);
  return generated;
}

/** Validates the environment and returns a frozen Config; throws ConfigError naming the variable. */
export function loadConfig(env: Env = process.env): Config {
  const port = intVar(env, "PORT", 3000, 0, 65535);
  const databaseUrl = env.DATABASE_URL === "" ? undefined : env.DATABASE_URL;
  if (databaseUrl !== undefined && !/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new ConfigError("DATABASE_URL", "must be a postgres:// or postgresql:// URL");
  }
  const dataDir = resolve(env.SVC_DATA_DIR || "./data");
  const logLevel = (env.SVC_LOG_LEVEL || "info") as Config["logLevel"];
  if (!["debug", "info", "warn", "error", "silent"].includes(logLevel)) {
    throw new ConfigError("SVC_LOG_LEVEL", "must be one of debug, info, warn, error, silent");
  }
  const logFormat = (env.SVC_LOG_FORMAT || (env.NODE_ENV === "development" ? "pretty" : "json")) as Config["logFormat"];
  if (logFormat !== "json" && logFormat !== "pretty") {
    throw new ConfigError("SVC_LOG_FORMAT", `must be json or pretty (got "${logFormat}")`);
  }
  const seedRaw = env.SVC_SEED_DEMO;
  if (seedRaw !== undefined && seedRaw !== "" && !["0", "1", "true", "false"].includes(seedRaw)) {
    throw new ConfigError("SVC_SEED_DEMO", "must be 1, 0, true or false");
  }
  const runtimeThreads = (env.SVC_RUNTIME_THREADS || "normal") as Config["runtimeThreads"];
  if (runtimeThreads !== "idle" && runtimeThreads !== "normal") {
    throw new ConfigError("SVC_RUNTIME_THREADS", `must be idle or normal (got "${runtimeThreads}")`);
  }
  const httpServer = (env.SVC_HTTP_SERVER || "h1") as Config["httpServer"];
  if (httpServer !== "h1" && httpServer !== "node" && httpServer !== "bun") {
    throw new ConfigError("SVC_HTTP_SERVER", `must be h1, node or bun (got "${httpServer}")`);
  }
  const decideThreadRaw = env.SVC_DECIDE_THREAD || "off";
  if (decideThreadRaw !== "on" && decideThreadRaw !== "off") {
    throw new ConfigError("SVC_DECIDE_THREAD", `must be on or off (got "${decideThreadRaw}")`);
  }
  if (decideThreadRaw === "on" && httpServer !== "h1") {
    throw new ConfigError("SVC_DECIDE_THREAD", "needs SVC_HTTP_SERVER=h1");
  }
  const accessLogRaw = env.SVC_ACCESS_LOG;
  if (accessLogRaw !== undefined && accessLogRaw !== "" && !["0", "1", "true", "false"].includes(accessLogRaw)) {
    throw new ConfigError("SVC_ACCESS_LOG", "must be 1, 0, true or false");
  }
  const metricsToken = env.SVC_METRICS_TOKEN === "" ? undefined : env.SVC_METRICS_TOKEN;
  if (metricsToken !== undefined && metricsToken.length < 24) {
    throw new ConfigError("SVC_METRICS_TOKEN", "must be at least 24 characters");
  }
  const workers = intVar(env, "SVC_WORKERS", 1, 1, 64);
  if (workers > 1 && databaseUrl === undefined) {
    throw new ConfigError(
      "SVC_WORKERS",
      "above 1 needs DATABASE_URL: the embedded store belongs to one process (docs/deploying.md)",
    );
  }
  const seedDemo =
    seedRaw === undefined || seedRaw === "" ? databaseUrl === undefined : seedRaw === "1" || seedRaw === "true";
  return Object.freeze({
    port,
    host: env.HOST || "0.0.0.0",
    databaseUrl,
    dataDir,
    operatorToken: secretVar(env, "SVC_OPERATOR_TOKEN", dataDir, "operator-token", 24),
    secret: secretVar(env, "SVC_SECRET", dataDir, "secret", 32),
    maxBodyBytes: intVar(env, "SVC_MAX_BODY_BYTES", 1024 * 1024, 1024, 64 * 1024 * 1024),
    flushIntervalMs: intVar(env, "SVC_FLUSH_INTERVAL_MS", 250, 10, 60_000),
    statsFlushIntervalMs: intVar(env, "SVC_STATS_FLUSH_INTERVAL_MS", 1_000, 10, 600_000),
    meterEntries: intVar(env, "SVC_METER_ENTRIES", 4_000_000, 1, 100_000_000),
    embeddedSharedBuffersMb: intVar(env, "SVC_EMBEDDED_SHARED_BUFFERS_MB", 8, 1, 1024),
    seedDemo,
    logLevel,
    logFormat,
    traces: tracingSettings(env),
    igluVendor: igluVendor(env),
    smtpUrl: urlVar(env, "SVC_SMTP_URL", /^smtps?:\/\//, "must be an smtp:// or smtps:// URL"),
    mailFrom: env.SVC_MAIL_FROM || "svc <no-reply@localhost>",
    publicUrl: urlVar(
      env,
      "SVC_PUBLIC_URL",
      /^https?:\/\/[^/]+$/,
      "must be an http(s) origin without a path, e.g. https://id.news.example",
    )?.replace(/\/$/, ""),
    idpTimeoutMs: intVar(env, "SVC_IDP_TIMEOUT_MS", 3000, 100, 60_000),
    paymentTimeoutMs: intVar(env, "SVC_PAYMENT_TIMEOUT_MS", 10_000, 100, 120_000),
    contentDebounceMs: intVar(env, "SVC_CONTENT_DEBOUNCE_MS", 5000, 0, 3_600_000),
    cmsTimeoutMs: intVar(env, "SVC_CMS_TIMEOUT_MS", 5000, 100, 60_000),
    newsletterVendorTimeoutMs: intVar(env, "SVC_NEWSLETTER_VENDOR_TIMEOUT_MS", 5000, 100, 60_000),
    recommendationTimeoutMs: intVar(env, "SVC_RECOMMENDATION_TIMEOUT_MS", 1000, 50, 60_000),
    recommendationsSitePerMinute: intVar(env, "SVC_RECOMMENDATIONS_SITE_PER_MINUTE", 6000, 1, 10_000_000),
    runtimeThreads,
    httpServer,
    decideThread: decideThreadRaw === "on",
    httpIdleTimeoutMs: intVar(env, "SVC_HTTP_IDLE_TIMEOUT_MS", 10_000, 1_000, 250_000),
    readDeadlineMs: intVar(env, "SVC_READ_DEADLINE_MS", 1000, 10, 60_000),
    impactSampleEvery: intVar(env, "SVC_IMPACT_SAMPLE_EVERY", 32, 0, 1_000_000),
    startRetryMs: intVar(env, "SVC_START_RETRY_MS", 30_000, 0, 3_600_000),
    invitationTtlDays: intVar(env, "SVC_INVITATION_TTL_DAYS", 7, 1, 365),
    metricsToken,
    sseHeartbeatMs: intVar(env, "SVC_SSE_HEARTBEAT_MS", 15_000, 50, 300_000),
    sseStreamsPerKey: intVar(env, "SVC_SSE_STREAMS_PER_KEY", 16, 1, 10_000),
    accessLog: accessLogRaw === "1" || accessLogRaw === "true",
    readyFlushIntervals: intVar(env, "SVC_READY_FLUSH_INTERVALS", 20, 1, 100_000),
    workers,
    trustedProxies: trustedProxies(env),
    retention: retentionSettings(env),
  });
}

function retentionSettings(env: Env): RetentionSettings {
  const checkoutEventDays = intVar(env, "SVC_RETAIN_CHECKOUT_EVENTS_DAYS", 7, 1, 3650);
  if (checkoutEventDays < 4) {
    // A replayed or retried event must still find its record: Stripe retries for 3 days.
    throw new ConfigError("SVC_RETAIN_CHECKOUT_EVENTS_DAYS", "must be at least 4 (Stripe retries events for 3 days)");
  }
  return Object.freeze({
    intervalMs: intVar(env, "SVC_RETENTION_INTERVAL_MS", 10 * 60_000, 0, 86_400_000),
    batch: intVar(env, "SVC_RETENTION_BATCH", 500, 1, 100_000),
    // Every process reads the log each second (server) or applies its own changes (embedded).
    changeLogMinutes: intVar(env, "SVC_RETAIN_CHANGE_LOG_MINUTES", 60, 5, 525_600),
    meterDays: intVar(env, "SVC_RETAIN_METER_DAYS", 7, 0, 3650),
    expiredDays: intVar(env, "SVC_RETAIN_EXPIRED_DAYS", 7, 0, 3650),
    mailDays: intVar(env, "SVC_RETAIN_MAIL_DAYS", 7, 0, 3650),
    checkoutEventDays,
    auditDays: intVar(env, "SVC_RETAIN_AUDIT_DAYS", 365, 1, 36500),
    documentVersions: intVar(env, "SVC_RETAIN_DOCUMENT_VERSIONS", 200, 1, 1_000_000),
    documentDays: intVar(env, "SVC_RETAIN_DOCUMENT_DAYS", 30, 0, 36500),
    // At least what the insight ranges read: 1 hour by minute, 7 days by hour, 30 days by day.
    decisionMinuteDays: intVar(env, "SVC_RETAIN_DECISIONS_BY_MINUTE_DAYS", 2, 1, 3650),
    decisionHourDays: intVar(env, "SVC_RETAIN_DECISIONS_BY_HOUR_DAYS", 35, 8, 3650),
    decisionDayDays: intVar(env, "SVC_RETAIN_DECISIONS_BY_DAY_DAYS", 800, 31, 36500),
  });
}

/**
 * Traces are on when an OTLP endpoint is set: OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as is) or
 * OTEL_EXPORTER_OTLP_ENDPOINT (plus `/v1/traces`), as the OpenTelemetry SDKs read them; off with
 * OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none. OTEL_EXPORTER_OTLP_HEADERS (`k=v,k2=v2`,
 * values percent-encoded) and OTEL_SERVICE_NAME (default `svc`) as the SDKs read them too.
 */
function tracingSettings(env: Env): TracingSettings | undefined {
  if (env.OTEL_SDK_DISABLED === "true" || env.OTEL_TRACES_EXPORTER === "none") return undefined;
  const signal = env.OTEL_EXPORTER_OTLP_TRACES_ENDPOINT || undefined;
  const base = env.OTEL_EXPORTER_OTLP_ENDPOINT || undefined;
  if (signal === undefined && base === undefined) return undefined;
  const name = signal !== undefined ? "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT" : "OTEL_EXPORTER_OTLP_ENDPOINT";
  const raw = (signal ?? base) as string;
  if (!/^https?:\/\/[^/\s]+/.test(raw)) throw new ConfigError(name, "must be an http(s) URL");
  const endpoint = signal ?? `${raw.replace(/\/+$/, "")}/v1/traces`;
  const headers: Record<string, string> = {};
  for (const pair of (env.OTEL_EXPORTER_OTLP_TRACES_HEADERS || env.OTEL_EXPORTER_OTLP_HEADERS || "").split(",")) {
    if (pair.trim() === "") continue;
    const at = pair.indexOf("=");
    if (at <= 0) throw new ConfigError("OTEL_EXPORTER_OTLP_HEADERS", "must be key=value pairs separated by commas");
    try {
      headers[decodeURIComponent(pair.slice(0, at).trim())] = decodeURIComponent(pair.slice(at + 1).trim());
    } catch {
      throw new ConfigError("OTEL_EXPORTER_OTLP_HEADERS", "has a value that is not valid percent-encoding");
    }
  }
  return Object.freeze({
    endpoint,
    headers: Object.freeze(headers),
    serviceName: env.OTEL_SERVICE_NAME || "svc",
    exportDelayMs: intVar(env, "OTEL_BSP_SCHEDULE_DELAY", 5000, 10, 600_000),
  });
}

/** Proxy-addr's shorthands for ranges, as Express's `trust proxy` accepts them. */
const PROXY_SHORTHANDS = ["loopback", "linklocal", "uniquelocal"];

/**
 * SVC_TRUSTED_PROXIES as a list, each entry checked by compiling it with proxy-addr (the library
 * that applies it per request), so what starts is what is applied.
 */
function trustedProxies(env: Env): readonly string[] {
  const raw = env.SVC_TRUSTED_PROXIES ?? "";
  const entries = raw
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  for (const entry of entries) {
    try {
      proxyaddr.compile(entry);
    } catch {
      throw new ConfigError(
        "SVC_TRUSTED_PROXIES",
        `must list addresses, CIDR ranges (10.0.0.0/8) or ${PROXY_SHORTHANDS.join(", ")}, separated by commas (got "${entry}")`,
      );
    }
  }
  return Object.freeze(entries);
}

function igluVendor(env: Env): string {
  const value = env.SVC_IGLU_VENDOR || "com.svc";
  if (!/^[a-zA-Z0-9_.-]+$/.test(value))
    throw new ConfigError("SVC_IGLU_VENDOR", "must be a reverse-DNS vendor like com.example");
  return value;
}

function urlVar(env: Env, name: string, pattern: RegExp, problem: string): string | undefined {
  const value = env[name];
  if (value === undefined || value === "") return undefined;
  if (!pattern.test(value)) throw new ConfigError(name, problem);
  return value;
}
