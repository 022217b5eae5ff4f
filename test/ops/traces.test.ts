import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type FakeIdp, startFakeIdp } from "../helpers/fake-idp";
import { type Harness, type Served, seedSite, serveHarness, startHarness } from "../helpers/harness";
import { siteWorld } from "../helpers/worlds";

/** One span as OTLP/HTTP's JSON encoding carries it (ids in hex). */
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes?: { key: string; value: Record<string, unknown> }[];
}

const SERVER = 2;
const CLIENT = 3;

/**
 * A local OTLP receiver: a real HTTP server on 127.0.0.1 that takes OTLP/HTTP trace exports
 * (`POST /v1/traces`, JSON), decodes them and keeps every span with its resource's service name.
 */
function startOtlpReceiver() {
  const spans: (OtlpSpan & { service: string })[] = [];
  const contentTypes: string[] = [];
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      if (request.method !== "POST" || new URL(request.url).pathname !== "/v1/traces") {
        return new Response("not found", { status: 404 });
      }
      contentTypes.push(request.headers.get("content-type") ?? "");
      const body = (await request.json()) as {
        resourceSpans: {
          resource: { attributes: { key: string; value: { stringValue?: string } }[] };
          scopeSpans: { spans: OtlpSpan[] }[];
        }[];
      };
      for (const resource of body.resourceSpans) {
        const service = resource.resource.attributes.find((a) => a.key === "service.name")?.value.stringValue ?? "";
        for (const scope of resource.scopeSpans) for (const span of scope.spans) spans.push({ ...span, service });
      }
      return Response.json({});
    },
  });
  return { url: `http://127.0.0.1:${server.port}`, spans, contentTypes, stop: () => server.stop(true) };
}

const attribute = (span: OtlpSpan, key: string) => {
  const value = span.attributes?.find((a) => a.key === key)?.value;
  return value === undefined ? undefined : Object.values(value)[0];
};

const hex = (bytes: number) =>
  Array.from(crypto.getRandomValues(new Uint8Array(bytes)), (b) => b.toString(16).padStart(2, "0")).join("");

const dualDocument = () =>
  basicDocument({
    identity: {
      mode: "dual",
      upstream: { audience: "news-web", signOutUrl: "https://login.example/out", cookieNames: ["idp_token"] },
    },
  });

describe.each(storeKinds)("traces over OTLP on the %s store", (kind) => {
  describe.each(["h1", "bun", "node"])("served by SVC_HTTP_SERVER=%s", (transport) => {
    let h: Harness;
    let drop: () => Promise<void>;
    let receiver: ReturnType<typeof startOtlpReceiver>;
    let idp: FakeIdp;
    let base: string;
    let key: string;
    let server: Served | undefined;

    beforeAll(async () => {
      receiver = startOtlpReceiver();
      idp = await startFakeIdp();
      const db = await freshDatabase(kind);
      drop = db.drop;
      h = await startHarness(db, {
        config: {
          HOST: "127.0.0.1",
          SVC_HTTP_SERVER: transport,
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url,
          OTEL_SERVICE_NAME: "svc-under-test",
        },
      });
      ({ key } = await seedSite(h, "news", dualDocument()));
      expect(
        (await h.admin("PUT", "/admin/tenants/default/identity-provider", { issuer: idp.issuer, jwksUrl: idp.jwksUrl }))
          .status,
      ).toBe(200);
      server = serveHarness(h);
      base = server.base;
    }, 60_000);
    afterAll(async () => {
      await server?.stop();
      await h.stop();
      receiver.stop();
      await idp.stop();
      await drop();
    }, 60_000);

    /** Sends what the process holds and answers the spans of one trace. */
    const spansOf = async (traceId: string) => {
      await h.deps.tracing?.flush();
      return receiver.spans.filter((s) => s.traceId === traceId);
    };

    it("continues the caller's trace through keyed decide: a server span, a decide span under it, and the answer carries the trace", async () => {
      const traceId = hex(16);
      const parentId = hex(8);
      const res = await fetch(`${base}/v1/decide`, {
        method: "POST",
        headers: {
          "x-svc-site-id": "news",
          authorization: `Bearer ${key}`,
          "content-type": "application/json",
          traceparent: `00-${traceId}-${parentId}-01`,
        },
        body: JSON.stringify({ features: ["paywall"], deviceId: "device-1" }),
      });
      expect(res.status).toBe(200);
      const answered = res.headers.get("traceparent") ?? "";
      expect(answered).toMatch(new RegExp(`^00-${traceId}-[0-9a-f]{16}-01$`));
      await res.arrayBuffer();

      const spans = await spansOf(traceId);
      const server = spans.find((s) => s.kind === SERVER);
      expect(server).toBeDefined();
      expect(server?.name).toBe("POST /v1/decide");
      expect(server?.parentSpanId).toBe(parentId);
      expect(server?.service).toBe("svc-under-test");
      expect(attribute(server as OtlpSpan, "http.response.status_code")).toBe(200);
      // The answer names the server span as the caller's next parent.
      expect(answered.split("-")[2]).toBe(server?.spanId);
      const decide = spans.find((s) => s.name === "decide");
      expect(decide?.parentSpanId).toBe(server?.spanId);
      expect(attribute(decide as OtlpSpan, "svc.site")).toBe("news");
      expect(receiver.contentTypes.every((t) => t.startsWith("application/json"))).toBe(true);
    });

    it("puts the span's trace and span ids on a line the app logs inside it", async () => {
      const tracing = h.deps.tracing;
      expect(tracing).not.toBeNull();
      const traceId = hex(16);
      const request = new Request("http://127.0.0.1/logged", {
        headers: { traceparent: `00-${traceId}-${hex(8)}-01` },
      });
      h.deps.logger.info("outside any span");
      await tracing?.serve(
        request,
        () => "/logged",
        () => {
          h.deps.logger.warn("inside the request", { n: 1 });
          return new Response("ok");
        },
      );
      const lines = h.logger.lines.map((l) => JSON.parse(l) as Record<string, unknown>);
      const inside = lines.find((l) => l.message === "inside the request");
      const server = (await spansOf(traceId)).find((s) => s.kind === SERVER);
      expect(inside).toMatchObject({ n: 1, trace_id: traceId, span_id: server?.spanId });
      const outside = lines.find((l) => l.message === "outside any span");
      expect(outside?.trace_id).toBeUndefined();
    });

    it("starts a new trace for a request without a (valid) traceparent", async () => {
      const res = await fetch(`${base}/health`, { headers: { traceparent: "00-zz-not-a-trace-01" } });
      expect(res.status).toBe(200);
      const answered = res.headers.get("traceparent") ?? "";
      expect(answered).toMatch(/^00-[0-9a-f]{32}-[0-9a-f]{16}-01$/);
      const traceId = answered.split("-")[1] as string;
      const spans = await spansOf(traceId);
      expect(spans.map((s) => s.name)).toEqual(["GET /health"]);
      expect(spans[0]?.parentSpanId ?? "").toBe("");
    });

    it("traces a route that calls an outside service: the IdP's JWKS fetch is a client span that sends the trace on, and the store's statements are spans", async () => {
      const traceId = hex(16);
      const parentId = hex(8);
      const credential = await idp.token({ sub: "traced-1", email: "traced@example.com" }, { nowMs: h.clock.now() });
      const res = await fetch(`${base}/v1/id/session/exchange`, {
        method: "POST",
        headers: {
          "x-svc-site-id": "news",
          "content-type": "application/json",
          traceparent: `00-${traceId}-${parentId}-01`,
        },
        body: JSON.stringify({ subject_token: credential }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get("traceparent")).toStartWith(`00-${traceId}-`);
      await res.arrayBuffer();

      const spans = await spansOf(traceId);
      const server = spans.find((s) => s.kind === SERVER);
      expect(server?.name).toBe("POST /v1/id/session/exchange");
      expect(server?.parentSpanId).toBe(parentId);
      const jwks = spans.find((s) => s.kind === CLIENT && attribute(s, "peer.service") === "idp");
      expect(jwks).toBeDefined();
      expect(jwks?.parentSpanId).toBe(server?.spanId);
      expect(attribute(jwks as OtlpSpan, "http.response.status_code")).toBe(200);
      expect(attribute(jwks as OtlpSpan, "server.address")).toBe("127.0.0.1");
      // The identity provider received the trace context of that client span.
      expect(idp.state.traceparents.at(-1)).toBe(`00-${traceId}-${jwks?.spanId}-01`);
      // The new user and session are written in statements traced under the request.
      const statements = spans.filter((s) => attribute(s, "db.system.name") === "postgresql");
      expect(statements.map((s) => s.name)).toContain("INSERT");
      for (const statement of statements) {
        expect(statement.parentSpanId).toBe(server?.spanId);
        // Placeholders only: no value the request carried reaches a span.
        expect(String(attribute(statement, "db.query.text"))).not.toContain("traced@example.com");
      }
      expect(JSON.stringify(spans)).not.toContain(credential);
    });

    it("makes each job run a span of its own, with the job's statements under it", async () => {
      const kind = `traced.${transport}`;
      h.deps.jobs.register(kind, async () => {
        await h.deps.siteStore.listTenants();
      });
      await h.deps.jobs.enqueue(kind, [{ key: "one", payload: {} }]);
      expect(await h.deps.jobs.runDue()).toBeGreaterThanOrEqual(1);
      await h.deps.tracing?.flush();
      const run = receiver.spans.find((s) => s.name === `job ${kind}`);
      expect(run).toBeDefined();
      expect(attribute(run as OtlpSpan, "svc.job.kind")).toBe(kind);
      const inside = receiver.spans.filter((s) => s.parentSpanId === run?.spanId);
      expect(inside.map((s) => s.name)).toContain("SELECT");
    });
  });
});

describe("with no OTLP endpoint configured", () => {
  const w = siteWorld({ document: basicDocument(), config: { HOST: "127.0.0.1" } });

  it("builds no tracing at all, and answers carry no trace context", async () => {
    expect(w.h.deps.tracing).toBeNull();
    const server = serveHarness(w.h);
    try {
      const res = await fetch(`${server.base}/v1/decide`, {
        method: "POST",
        headers: {
          "x-svc-site-id": "news",
          authorization: `Bearer ${w.key}`,
          "content-type": "application/json",
          traceparent: `00-${hex(16)}-${hex(8)}-01`,
        },
        body: JSON.stringify({ features: ["paywall"], deviceId: "device-1" }),
      });
      expect(res.status).toBe(200);
      expect(res.headers.get("traceparent")).toBeNull();
    } finally {
      await server.stop();
    }
  });
});
