import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import type { Deps } from "../../src/deps";
import { UNMATCHED_ROUTE } from "../../src/http/request-stats";
import { readiness } from "../../src/ops/ready";
import { basicDocument } from "../fixtures/documents";
import { signedContent } from "../helpers/content";
import { freshDatabase, type StoreKind, storeKinds } from "../helpers/databases";
import { type Harness, OPERATOR_TOKEN, type Served, seedSite, serveHarness, startHarness } from "../helpers/harness";

const METRICS_TOKEN = "metrics-token-0123456789abcdef";
/** Debian's Python, whose python3-prometheus-client is the official client's parser (.ci/run installs it). */
const PYTHON = process.env.SVC_PYTHON || "/usr/bin/python3";
/** Reads Prometheus text on stdin and prints `{ family: type }` as JSON; fails on any line it cannot parse. */
const PARSE_FAMILIES = [
  "import json, sys",
  "from prometheus_client.parser import text_string_to_metric_families",
  "print(json.dumps({f.name: f.type for f in text_string_to_metric_families(sys.stdin.read())}))",
].join("\n");
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The value of one sample line of a Prometheus text answer (undefined when absent). */
function sample(text: string, line: string): number | undefined {
  for (const l of text.split("\n")) {
    if (l.startsWith(`${line} `)) return Number(l.slice(line.length + 1));
  }
  return undefined;
}

describe.each(storeKinds)("health, readiness, metrics and request ids (%s store)", (kind: StoreKind) => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let h: Harness;
  let server: Served;
  let base: string;
  let key: string;

  beforeAll(async () => {
    db = await freshDatabase(kind);
    h = await startHarness(db, { config: { SVC_METRICS_TOKEN: METRICS_TOKEN, SVC_ACCESS_LOG: "1" } });
    ({ key } = await seedSite(h, "news", basicDocument()));
    server = serveHarness(h);
    base = server.base;
  });

  afterAll(async () => {
    await server.stop();
    await h.stop();
    await db.drop();
  });

  const decide = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${base}/v1/decide`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${key}`,
        "x-svc-site-id": "news",
        "content-type": "application/json",
        ...headers,
      },
      body: JSON.stringify(body),
    });
  const metrics = async () => {
    const response = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(response.status).toBe(200);
    return response.text();
  };

  it("answers /health and /ready with 200 while the store answers and the flush keeps up", async () => {
    expect(await (await fetch(`${base}/health`)).json()).toEqual({ ok: true });
    const ready = await fetch(`${base}/ready`);
    expect(ready.status).toBe(200);
    expect(ready.headers.get("retry-after")).toBeNull();
    expect(await ready.json()).toEqual({ ready: true, checks: { store: "ok", loaded: "ok", flush: "ok" } });
  });

  it("answers /ready 503 with Retry-After when the flush is behind, and 200 again after a good flush", async () => {
    const flusher = h.deps.flusher;
    // The flush timer stays off meanwhile (and a flush it started is done): a timed flush would
    // make it current again.
    flusher.stop();
    await flusher.flushAll();
    const kept = flusher.lastSuccessAt;
    flusher.lastSuccessAt = performance.now() - (h.deps.config.readyFlushIntervals + 5) * h.deps.config.flushIntervalMs;
    try {
      const behind = await fetch(`${base}/ready`);
      expect(behind.status).toBe(503);
      expect(Number(behind.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(await behind.json()).toEqual({ ready: false, checks: { store: "ok", loaded: "ok", flush: "failed" } });
      await flusher.flushAll();
      expect((await fetch(`${base}/ready`)).status).toBe(200);
    } finally {
      if (flusher.lastSuccessAt < kept) flusher.lastSuccessAt = kept;
      flusher.start();
    }
  });

  it("is not ready before startDeps finished or when the store does not answer within the probe's deadline", async () => {
    const notStarted = { ...h.deps, lifecycle: { started: false } } as Deps;
    expect((await readiness(notStarted)).checks.loaded).toBe("failed");
    const hung = {
      ...h.deps,
      database: { ...h.deps.database, db: { execute: () => new Promise(() => {}) } },
    } as unknown as Deps;
    const state = await readiness(hung);
    expect(state).toEqual({ ready: false, checks: { store: "failed", loaded: "ok", flush: "ok" } });
  });

  it("gives every answer an x-request-id: the client's when valid, a new UUID otherwise", async () => {
    const fresh = await decide({ features: ["paywall"], deviceId: "d-ids" });
    expect(fresh.status).toBe(200);
    expect(fresh.headers.get("x-request-id")).toMatch(UUID);
    const kept = await decide({ features: ["paywall"], deviceId: "d-ids" }, { "x-request-id": "trace-42.abc" });
    expect(kept.headers.get("x-request-id")).toBe("trace-42.abc");
    for (const bad of ["x".repeat(129), "has space", "tab\there"]) {
      const replaced = await fetch(`${base}/health`, { headers: { "x-request-id": bad } });
      expect(replaced.headers.get("x-request-id")).toMatch(UUID);
    }
    expect((await fetch(`${base}/no-such-route`)).headers.get("x-request-id")).toMatch(UUID);
    expect((await fetch(`${base}/admin/tenants`)).headers.get("x-request-id")).toMatch(UUID);
  });

  it("refuses /metrics without the operator or metrics token", async () => {
    expect((await fetch(`${base}/metrics`)).status).toBe(401);
    const wrong = await fetch(`${base}/metrics`, {
      headers: { authorization: "Bearer not-the-token-0123456789abcdef" },
    });
    expect(wrong.status).toBe(401);
    expect((await wrong.json()) as object).toHaveProperty("error.code", "unauthorized");
    const operator = await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } });
    expect(operator.status).toBe(200);
    expect(operator.headers.get("content-type")).toStartWith("text/plain");
  });

  it("counts decide answers by route and status, with their latency, and the meters held", async () => {
    const before = await metrics();
    const ok = 'svc_http_requests_total{method="POST",route="/v1/decide",status="200"}';
    const okBefore = sample(before, ok) ?? 0;
    const seenBefore = sample(before, "svc_meter_seen_admissions_total") ?? -1;
    for (let i = 0; i < 3; i++) {
      const content = signedContent({ id: `m-${i}`, section: "news" });
      expect((await decide({ features: ["paywall"], deviceId: `d-metrics-${i}`, content })).status).toBe(200);
    }
    expect((await decide({ features: 7 })).status).toBe(422);
    const after = await metrics();
    expect(sample(after, ok)).toBe(okBefore + 3);
    expect(sample(after, 'svc_http_requests_total{method="POST",route="/v1/decide",status="422"}')).toBe(1);
    const histogram = 'svc_http_request_duration_seconds_count{method="POST",route="/v1/decide",status="200"}';
    expect(sample(after, histogram)).toBe(okBefore + 3);
    expect(
      sample(
        after,
        'svc_http_request_duration_seconds_bucket{method="POST",route="/v1/decide",status="200",le="+Inf"}',
      ),
    ).toBe(okBefore + 3);
    expect(sample(after, "svc_meter_entries")).toBeGreaterThanOrEqual(3);
    expect(sample(after, "svc_meter_entries_evicted_total")).toBe(0);
    // Each new article is a new member of the paywall's seen meter: admitted through the store only on a server.
    expect(sample(after, "svc_meter_seen_admissions_total")).toBe(seenBefore + (kind === "server" ? 3 : 0));
    expect(sample(after, "svc_meter_seen_admission_statements_total")).toBeGreaterThanOrEqual(
      kind === "server" ? 1 : 0,
    );
    // A count meter's call (the teaser's) is admitted through the store only on a server.
    const admissions = sample(after, "svc_meter_count_admissions_total") ?? -1;
    expect((await decide({ features: ["teaser"], deviceId: "d-metrics-teaser" })).status).toBe(200);
    const counted = await metrics();
    expect(sample(counted, "svc_meter_count_admissions_total")).toBe(admissions + (kind === "server" ? 1 : 0));
    expect(sample(counted, "svc_meter_count_admission_statements_total")).toBeGreaterThanOrEqual(
      kind === "server" ? 1 : 0,
    );
    expect(sample(after, "svc_flush_failures_total")).toBe(0);
    expect(sample(after, "svc_flush_duration_seconds_count")).toBeGreaterThan(0);
    expect(sample(after, "svc_flush_backlog")).toBeGreaterThanOrEqual(0);
    expect(sample(after, "svc_outbox_backlog")).toBe(0);
    expect(sample(after, "svc_change_feed_lag_seconds")).toBeGreaterThanOrEqual(0);
    expect(sample(after, "svc_store_read_duration_seconds_count")).toBeGreaterThanOrEqual(0);
    for (const name of [
      "svc_http_rate_limited_total",
      "svc_store_read_duration_seconds",
      "svc_flush_last_success_age_seconds",
    ]) {
      expect(after).toContain(`# TYPE ${name} `);
    }
  });

  it("parses with the official Prometheus client's parser (Python prometheus_client)", async () => {
    const text = await metrics();
    const parser = Bun.spawnSync({
      cmd: [PYTHON, "-c", PARSE_FAMILIES],
      stdin: new TextEncoder().encode(text),
      stderr: "pipe",
    });
    if (parser.exitCode !== 0 && /No module named|ENOENT/.test(parser.stderr.toString())) {
      throw new Error(`${PYTHON} with prometheus_client is missing: apt-get install python3-prometheus-client`);
    }
    expect(parser.stderr.toString()).toBe("");
    const families = JSON.parse(parser.stdout.toString()) as Record<string, string>;
    expect(families).toMatchObject({
      svc_http_requests: "counter",
      svc_http_request_duration_seconds: "histogram",
      process_resident_memory_bytes: "gauge",
      nodejs_heap_size_used_bytes: "gauge",
      nodejs_eventloop_lag_seconds: "gauge",
      nodejs_gc_duration_seconds: "histogram",
    });
  });

  it("serves the runtime's metrics: memory, heap, event-loop lag and GC", async () => {
    const text = await metrics();
    expect(sample(text, "process_resident_memory_bytes")).toBeGreaterThan(0);
    expect(sample(text, "nodejs_heap_size_used_bytes")).toBeGreaterThan(0);
    expect(sample(text, "nodejs_eventloop_lag_seconds")).toBeGreaterThanOrEqual(0);
    expect(sample(text, "process_cpu_seconds_total")).toBeGreaterThan(0);
    for (const [name, type] of [
      ["nodejs_eventloop_lag_p99_seconds", "gauge"],
      ["nodejs_gc_duration_seconds", "histogram"],
      ["process_open_fds", "gauge"],
    ]) {
      expect(text).toContain(`# TYPE ${name} ${type}`);
    }
  });

  it("labels other routes by their template, unknown paths as one label, and 429s as rate limited", async () => {
    const unmatched = `svc_http_requests_total{method="GET",route="${UNMATCHED_ROUTE}",status="404"}`;
    const unmatchedBefore = sample(await metrics(), unmatched) ?? 0;
    const tenantSites = await fetch(`${base}/admin/tenants/default/sites`, {
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}` },
    });
    expect(tenantSites.status).toBe(200);
    await fetch(`${base}/nothing/here/1`);
    await fetch(`${base}/nothing/here/2`);
    // A 429 as the rate window answers it, recorded as the transport records every answer.
    h.deps.requests.nativeStats("POST", "/v1/decide").record(429, 0.0001);
    const text = await metrics();
    expect(text).toMatch(
      /svc_http_requests_total\{method="GET",route="\/admin\/tenants\/:[A-Za-z]+\/sites",status="200"\} 1/,
    );
    expect(sample(text, unmatched)).toBe(unmatchedBefore + 2);
    expect(text).not.toContain("/nothing/here");
    expect(sample(text, 'svc_http_rate_limited_total{method="POST",route="/v1/decide"}')).toBe(1);
  });

  it("writes one access-log line per answer, with no credential and no body", async () => {
    const lines = h.logger.lines;
    const from = lines.length;
    const answer = await decide(
      { features: ["paywall"], deviceId: "d-access-log-secret-body" },
      { "x-request-id": "access-log-1" },
    );
    expect(answer.status).toBe(200);
    await fetch(`${base}/admin/tenants`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } });
    const logged = lines.slice(from).map((l) => JSON.parse(l) as Record<string, unknown>);
    const requests = logged.filter((l) => l.message === "request");
    const line = requests.find((l) => l.requestId === "access-log-1");
    expect(line).toMatchObject({
      level: "info",
      method: "POST",
      route: "/v1/decide",
      status: 200,
      site: "news",
      client: "127.0.0.1",
    });
    expect(typeof line?.durationMs).toBe("number");
    expect(requests.some((l) => l.route === "/admin/tenants" && l.status === 200)).toBe(true);
    const text = lines.slice(from).join("\n");
    expect(text).not.toContain(key);
    expect(text).not.toContain(OPERATOR_TOKEN);
    expect(text).not.toContain("d-access-log-secret-body");
  });
});

describe("the access log is off by default; the bun transport also sends request ids and counts", () => {
  it("writes no request lines without SVC_ACCESS_LOG, and counts through Bun.serve", async () => {
    const db = await freshDatabase("embedded");
    const h = await startHarness(db, { config: { SVC_HTTP_SERVER: "bun" } });
    const server = serveHarness(h);
    try {
      const { key } = await seedSite(h, "news", basicDocument());
      const base = server.base;
      const answer = await fetch(`${base}/v1/decide`, {
        method: "POST",
        headers: { authorization: `Bearer ${key}`, "x-svc-site-id": "news", "x-request-id": "bun-1" },
        body: JSON.stringify({ features: ["paywall"], deviceId: "d-bun" }),
      });
      expect(answer.status).toBe(200);
      expect(answer.headers.get("x-request-id")).toBe("bun-1");
      expect((await fetch(`${base}/health`)).headers.get("x-request-id")).toMatch(UUID);
      const text = await (
        await fetch(`${base}/metrics`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } })
      ).text();
      expect(sample(text, 'svc_http_requests_total{method="POST",route="/v1/decide",status="200"}')).toBe(1);
      expect(sample(text, 'svc_http_requests_total{method="GET",route="/health",status="200"}')).toBe(1);
      expect(h.logger.lines.some((l) => (JSON.parse(l) as { message: string }).message === "request")).toBe(false);
    } finally {
      await server.stop();
      await h.stop();
      await db.drop();
    }
  });
});

describe("sign-in mail with a Postgres server and no SMTP", () => {
  it("answers 503 without Retry-After (not configured) and writes no link", async () => {
    const db = await freshDatabase("embedded");
    // DATABASE_URL is only read to choose the mail transport here: the harness passes the store.
    const h = await startHarness(db, { config: { DATABASE_URL: "postgres://nobody@127.0.0.1:1/unused" } });
    try {
      await seedSite(h, "news", basicDocument());
      const answer = await h.request("POST", "/v1/id/sign-in/magic-link", {
        headers: { "x-svc-site-id": "news" },
        body: { email: "reader@example.com" },
      });
      expect(answer.status).toBe(503);
      expect(answer.headers.get("retry-after")).toBeNull();
      expect((await answer.json()) as object).toHaveProperty("error.code", "service_unavailable");
      expect(await h.deps.outbox.backlog()).toBe(0);
    } finally {
      await h.stop();
      await db.drop();
    }
  });
});
