import { describe, expect, it } from "bun:test";
import { statSync } from "node:fs";
import { join } from "node:path";
import { ConfigError, loadConfig } from "../src/config";
import { tempDir } from "./helpers/process";

describe("configuration", () => {
  it("defaults to port 3000, ./data and the embedded store", () => {
    const dir = tempDir();
    const config = loadConfig({ SVC_DATA_DIR: dir });
    expect(config.port).toBe(3000);
    expect(config.databaseUrl).toBeUndefined();
    expect(config.seedDemo).toBe(true);
    expect(config.runtimeThreads).toBe("normal");
    expect(config.accessLog).toBe(false);
    expect(config.metricsToken).toBeUndefined();
    expect(config.readyFlushIntervals).toBe(20);
    expect(config.flushIntervalMs).toBe(250);
    expect(config.statsFlushIntervalMs).toBe(1000);
    expect(config.httpServer).toBe("h1");
    expect(config.httpIdleTimeoutMs).toBe(10_000);
    expect(config.readDeadlineMs).toBe(1000);
    expect(config.startRetryMs).toBe(30_000);
    expect(config.workers).toBe(1);
    expect(config.embeddedSharedBuffersMb).toBe(8);
    expect(config.retention).toMatchObject({
      intervalMs: 600_000,
      batch: 500,
      changeLogMinutes: 60,
      meterDays: 7,
      expiredDays: 7,
      mailDays: 7,
      checkoutEventDays: 7,
      auditDays: 365,
      documentVersions: 200,
      documentDays: 30,
    });
    expect(loadConfig({ SVC_DATA_DIR: dir, SVC_WORKERS: "4", DATABASE_URL: "postgres://x@127.0.0.1/db" }).workers).toBe(
      4,
    );
    expect(loadConfig({ SVC_DATA_DIR: dir, SVC_RUNTIME_THREADS: "idle" }).runtimeThreads).toBe("idle");
    expect(loadConfig({ SVC_DATA_DIR: dir, SVC_HTTP_IDLE_TIMEOUT_MS: "65000" }).httpIdleTimeoutMs).toBe(65_000);
    expect(loadConfig({ SVC_DATA_DIR: dir, SVC_ACCESS_LOG: "1" }).accessLog).toBe(true);
    expect(loadConfig({ SVC_DATA_DIR: dir, SVC_EMBEDDED_SHARED_BUFFERS_MB: "64" }).embeddedSharedBuffersMb).toBe(64);
    expect(loadConfig({ SVC_DATA_DIR: dir, SVC_HTTP_SERVER: "bun" }).httpServer).toBe("bun");
    expect(loadConfig({ SVC_DATA_DIR: dir, SVC_HTTP_SERVER: "node" }).httpServer).toBe("node");
    expect(loadConfig({ SVC_DATA_DIR: dir, SVC_HTTP_SERVER: "h1" }).httpServer).toBe("h1");
    expect(loadConfig({ SVC_DATA_DIR: dir }).decideThread).toBe(false);
    expect(loadConfig({ SVC_DATA_DIR: dir, SVC_DECIDE_THREAD: "on" }).decideThread).toBe(true);
  });

  it("logs JSON lines unless NODE_ENV=development or SVC_LOG_FORMAT says pretty", () => {
    const dir = tempDir();
    expect(loadConfig({ SVC_DATA_DIR: dir }).logFormat).toBe("json");
    expect(loadConfig({ SVC_DATA_DIR: dir, NODE_ENV: "development" }).logFormat).toBe("pretty");
    expect(loadConfig({ SVC_DATA_DIR: dir, NODE_ENV: "development", SVC_LOG_FORMAT: "json" }).logFormat).toBe("json");
    expect(loadConfig({ SVC_DATA_DIR: dir, SVC_LOG_FORMAT: "pretty" }).logFormat).toBe("pretty");
  });

  it("traces only when an OTLP endpoint is set, as the OpenTelemetry SDKs read it", () => {
    const dir = tempDir();
    expect(loadConfig({ SVC_DATA_DIR: dir }).traces).toBeUndefined();
    expect(loadConfig({ SVC_DATA_DIR: dir, OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318/" }).traces).toEqual({
      endpoint: "http://collector:4318/v1/traces",
      headers: {},
      serviceName: "svc",
      exportDelayMs: 5000,
    });
    const signal = loadConfig({
      SVC_DATA_DIR: dir,
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318",
      OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: "https://traces.example/otlp/v1/traces",
      OTEL_EXPORTER_OTLP_HEADERS: "x-api-key=abc%3D,tenant = news",
      OTEL_SERVICE_NAME: "svc-eu",
    }).traces;
    expect(signal).toMatchObject({
      endpoint: "https://traces.example/otlp/v1/traces",
      headers: { "x-api-key": "abc=", tenant: "news" },
      serviceName: "svc-eu",
    });
    const endpoint = { SVC_DATA_DIR: dir, OTEL_EXPORTER_OTLP_ENDPOINT: "http://collector:4318" };
    expect(loadConfig({ ...endpoint, OTEL_SDK_DISABLED: "true" }).traces).toBeUndefined();
    expect(loadConfig({ ...endpoint, OTEL_TRACES_EXPORTER: "none" }).traces).toBeUndefined();
  });

  it("seeds nothing with DATABASE_URL unless asked", () => {
    const dir = tempDir();
    expect(loadConfig({ SVC_DATA_DIR: dir, DATABASE_URL: "postgres://x@127.0.0.1/db" }).seedDemo).toBe(false);
    expect(
      loadConfig({ SVC_DATA_DIR: dir, DATABASE_URL: "postgres://x@127.0.0.1/db", SVC_SEED_DEMO: "1" }).seedDemo,
    ).toBe(true);
  });

  it.each([
    ["PORT", "abc"],
    ["PORT", "70000"],
    ["DATABASE_URL", "mysql://x"],
    ["SVC_OPERATOR_TOKEN", "short"],
    ["SVC_SECRET", "short"],
    ["SVC_MAX_BODY_BYTES", "12"],
    ["SVC_FLUSH_INTERVAL_MS", "-1"],
    ["SVC_STATS_FLUSH_INTERVAL_MS", "5"],
    ["SVC_METER_ENTRIES", "0"],
    ["SVC_EMBEDDED_SHARED_BUFFERS_MB", "0"],
    ["SVC_EMBEDDED_SHARED_BUFFERS_MB", "1025"],
    ["SVC_EMBEDDED_SHARED_BUFFERS_MB", "32MB"],
    ["SVC_LOG_LEVEL", "loud"],
    ["SVC_LOG_FORMAT", "colour"],
    ["OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318"],
    ["OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "grpc://collector:4317"],
    ["SVC_SEED_DEMO", "maybe"],
    ["SVC_IGLU_VENDOR", "not a vendor"],
    ["SVC_RUNTIME_THREADS", "realtime"],
    ["SVC_HTTP_SERVER", "uws"],
    ["SVC_HTTP_SERVER", "H1"],
    ["SVC_DECIDE_THREAD", "yes"],
    ["SVC_DECIDE_THREAD", "1"],
    ["SVC_HTTP_IDLE_TIMEOUT_MS", "999"],
    ["SVC_HTTP_IDLE_TIMEOUT_MS", "250001"],
    ["SVC_HTTP_IDLE_TIMEOUT_MS", "10s"],
    ["SVC_READ_DEADLINE_MS", "0"],
    ["SVC_READ_DEADLINE_MS", "1s"],
    ["SVC_START_RETRY_MS", "-5"],
    ["SVC_WORKERS", "0"],
    ["SVC_WORKERS", "65"],
    ["SVC_WORKERS", "2"],
    ["SVC_TRUSTED_PROXIES", "*"],
    ["SVC_TRUSTED_PROXIES", "true"],
    ["SVC_TRUSTED_PROXIES", "10.0.0.1 10.0.0.2"],
    ["SVC_TRUSTED_PROXIES", "10.0.0.0/33"],
    ["SVC_TRUSTED_PROXIES", "10.0.0.0/0"],
    ["SVC_TRUSTED_PROXIES", "loopback,private"],
    ["SVC_TRUSTED_PROXIES", "nginx.internal"],
    ["SVC_RETENTION_INTERVAL_MS", "soon"],
    ["SVC_RETENTION_BATCH", "0"],
    ["SVC_RETAIN_CHANGE_LOG_MINUTES", "1"],
    ["SVC_RETAIN_METER_DAYS", "-1"],
    ["SVC_RETAIN_EXPIRED_DAYS", "a week"],
    ["SVC_RETAIN_MAIL_DAYS", "1.5"],
    ["SVC_RETAIN_CHECKOUT_EVENTS_DAYS", "3"],
    ["SVC_RETAIN_AUDIT_DAYS", "0"],
    ["SVC_RETAIN_DOCUMENT_VERSIONS", "0"],
    ["SVC_RETAIN_DOCUMENT_DAYS", "a month"],
  ])("stops with a message naming %s when it is %p", (variable, value) => {
    const attempt = () => loadConfig({ SVC_DATA_DIR: tempDir(), [variable]: value });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow(variable);
  });

  it("refuses the decide thread on a transport other than h1, naming both variables", () => {
    const attempt = () => loadConfig({ SVC_DATA_DIR: tempDir(), SVC_DECIDE_THREAD: "on", SVC_HTTP_SERVER: "node" });
    expect(attempt).toThrow(ConfigError);
    expect(attempt).toThrow("SVC_DECIDE_THREAD");
    expect(attempt).toThrow("SVC_HTTP_SERVER=h1");
  });

  it("generates the operator token and secret once, mode 0600, and reuses them", () => {
    const dir = tempDir();
    const first = loadConfig({ SVC_DATA_DIR: dir });
    const second = loadConfig({ SVC_DATA_DIR: dir });
    expect(second.operatorToken).toBe(first.operatorToken);
    expect(second.secret).toBe(first.secret);
    expect(statSync(join(dir, "operator-token")).mode & 0o777).toBe(0o600);
    expect(statSync(join(dir, "secret")).mode & 0o777).toBe(0o600);
  });

  it("trusts no proxy by default, and reads addresses, ranges and shorthands separated by commas", () => {
    expect(loadConfig({ SVC_DATA_DIR: tempDir() }).trustedProxies).toEqual([]);
    expect(loadConfig({ SVC_DATA_DIR: tempDir(), SVC_TRUSTED_PROXIES: "" }).trustedProxies).toEqual([]);
    const config = loadConfig({
      SVC_DATA_DIR: tempDir(),
      SVC_TRUSTED_PROXIES: " loopback, 10.0.0.0/8 ,192.168.1.7,fd00::/8, 172.16.0.0/255.240.0.0,uniquelocal,linklocal",
    });
    expect(config.trustedProxies).toEqual([
      "loopback",
      "10.0.0.0/8",
      "192.168.1.7",
      "fd00::/8",
      "172.16.0.0/255.240.0.0",
      "uniquelocal",
      "linklocal",
    ]);
    expect(Object.isFrozen(config.trustedProxies)).toBe(true);
  });

  it("names the entry of SVC_TRUSTED_PROXIES it cannot read, and what it accepts", () => {
    const attempt = () => loadConfig({ SVC_DATA_DIR: tempDir(), SVC_TRUSTED_PROXIES: "loopback, 10.0.0.300" });
    expect(attempt).toThrow('"10.0.0.300"');
    expect(attempt).toThrow("loopback, linklocal, uniquelocal");
  });

  it("returns a frozen config", () => {
    expect(Object.isFrozen(loadConfig({ SVC_DATA_DIR: tempDir() }))).toBe(true);
  });
});
