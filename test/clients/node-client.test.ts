import { describe, expect, it } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { createServer, type Server, Socket } from "node:net";
import { join } from "node:path";
import {
  createDecideClient,
  type DecideClientOptions,
  type DecisionEntry,
  type FallbackReason,
} from "../../clients/node/src/index";
import { basicDocument } from "../fixtures/documents";
import { scratchDir } from "../helpers/scratch-dirs";
import { servedSuite } from "../helpers/served-suite";

const CLIENT_DIR = join(import.meta.dir, "../../clients/node");
const DOCUMENT_FILE = join(CLIENT_DIR, "openapi.json");
const TYPES_FILE = join(CLIENT_DIR, "src/schema.d.ts");

/** A TCP proxy on 127.0.0.1 that counts the connections it is opened, or holds them unanswered. */
async function countingProxy(targetPort: number) {
  let connections = 0;
  let hold = false;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    connections++;
    sockets.add(client);
    client.on("close", () => sockets.delete(client));
    client.on("error", () => client.destroy());
    if (hold) {
      client.on("data", () => {});
      return;
    }
    const upstream = new Socket();
    sockets.add(upstream);
    upstream.on("close", () => sockets.delete(upstream));
    upstream.on("error", () => client.destroy());
    upstream.connect(targetPort, "127.0.0.1", () => {
      client.pipe(upstream);
      upstream.pipe(client);
    });
    client.on("close", () => upstream.destroy());
    upstream.on("close", () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}`,
    connections: () => connections,
    holdEverything() {
      hold = true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}

describe("clients/node: decide from a publisher's server, against a started server", () => {
  const document = basicDocument();
  const suite = servedSuite("embedded", { config: { HOST: "127.0.0.1" }, site: document });
  const client = (extra: Partial<DecideClientOptions> = {}) =>
    createDecideClient({ baseUrl: suite.server.base, apiKey: suite.key, site: "news", document, ...extra });

  it("is built on the service's current document: openapi.json and the generated types are up to date", async () => {
    const served = await (await fetch(`${suite.server.base}/openapi.json`)).json();
    const snapshot = `${JSON.stringify(served, null, 2)}\n`;
    // UPDATE_CLIENT=1 rewrites both (then review and commit them).
    if (process.env.UPDATE_CLIENT === "1") writeFileSync(DOCUMENT_FILE, snapshot);
    // Compared as data, keys sorted and `additionalProperties: false` left out: Elysia adds that
    // member to a route's TypeBox schema when it compiles the route's validator, and the schema
    // objects are shared by every app in the process, so whether it shows depends on which tests
    // ran first. It changes none of the generated types, which are compared exactly below.
    expect(canonical(JSON.parse(readFileSync(DOCUMENT_FILE, "utf8")))).toEqual(canonical(served));
    const out = join(scratchDir("svc-client-"), "schema.d.ts");
    // openapi-typescript needs TypeScript 5: clients/node pins it in its own node_modules.
    const generated = Bun.spawnSync(
      [process.execPath, join(CLIENT_DIR, "node_modules/openapi-typescript/bin/cli.js"), DOCUMENT_FILE, "-o", out],
      { cwd: CLIENT_DIR, stderr: "pipe", stdout: "pipe" },
    );
    expect({ exitCode: generated.exitCode, stderr: generated.stderr.toString() }).toEqual({ exitCode: 0, stderr: "" });
    if (process.env.UPDATE_CLIENT === "1") writeFileSync(TYPES_FILE, readFileSync(out, "utf8"));
    expect(readFileSync(TYPES_FILE, "utf8")).toBe(readFileSync(out, "utf8"));
  }, 60_000);

  it("decides, reading decisions with no cast", async () => {
    const answer = await client().decide({ features: ["paywall", "section", "nope"], deviceId: "device-1" });
    expect(answer.fallback).toBeUndefined();
    const paywall = answer.decisions.paywall;
    expect(paywall?.outcome).toBeString();
    expect(answer.decisions.section?.outcome).toBe("other");
    expect(answer.unanswered).toEqual(["nope"]);
  });

  it("gives the generated client of the whole API, whose decide answer reads decisions with no cast", async () => {
    const { data, response } = await client().api.POST("/v1/decide", {
      params: { header: { "x-svc-site-id": "news" } },
      body: { features: ["section"], deviceId: "device-1" },
    });
    expect(response.status).toBe(200);
    // The 200 is DecideAnswer | ExplainAnswer, discriminated: `decisions` is typed, absent under explain.
    const decisions: Record<string, DecisionEntry> | undefined = data?.decisions;
    expect(decisions?.section?.outcome).toBe("other");
    expect(data?.explain).toBeUndefined();
  });

  it("explains, as its own call", async () => {
    const answer = await client().explain({ features: ["section"], deviceId: "device-1" });
    expect(answer.explain.section?.outcome).toBe("other");
    // No content descriptor: the rule reading content.section routes to onError.
    expect(answer.explain.section?.matched).toMatchObject({ rule: "onError" });
  });

  it("reuses one kept-alive connection across calls", async () => {
    const proxy = await countingProxy(suite.server.port);
    try {
      const c = client({ baseUrl: proxy.url });
      for (let i = 0; i < 20; i++) {
        const answer = await c.decide({ features: ["section"], deviceId: `device-${i}` });
        expect(answer.fallback).toBeUndefined();
      }
      expect(proxy.connections()).toBe(1);
    } finally {
      await proxy.close();
    }
  });

  it("runs on Node from its build (npm install builds it), reusing its kept-alive connection", async () => {
    const proxy = await countingProxy(suite.server.port);
    try {
      const script = `
        const { createDecideClient } = await import(${JSON.stringify(join(CLIENT_DIR, "dist/index.js"))});
        const svc = createDecideClient({ baseUrl: process.argv[1], apiKey: process.argv[2], site: "news" });
        const outcomes = [];
        for (let i = 0; i < 20; i++) {
          const { decisions, fallback } = await svc.decide({ features: ["section"], deviceId: "node-" + i });
          outcomes.push(fallback ? fallback.kind : decisions.section.outcome);
        }
        console.log(JSON.stringify(outcomes));`;
      const child = Bun.spawn(["node", "--input-type=module", "-e", script, proxy.url, suite.key], {
        stdout: "pipe",
        stderr: "pipe",
      });
      const [out, err, code] = [
        await new Response(child.stdout).text(),
        await new Response(child.stderr).text(),
        await child.exited,
      ];
      expect({ code, err }).toEqual({ code: 0, err: "" });
      expect(JSON.parse(out)).toEqual(Array(20).fill("other"));
      // Node 20's fetch opens a second connection for the second call, then reuses it (it does so
      // against a bare node:http server too); 20 calls, at most 2 connections.
      expect(proxy.connections()).toBeLessThanOrEqual(2);
    } finally {
      await proxy.close();
    }
  }, 30_000);

  it("answers each feature's onError outcome when the deadline passes, and tells why", async () => {
    const proxy = await countingProxy(suite.server.port);
    proxy.holdEverything();
    const told: FallbackReason[] = [];
    try {
      const c = client({ baseUrl: proxy.url, timeoutMs: 5_000, onFallback: (reason) => told.push(reason) });
      const started = performance.now();
      const answer = await c.decide({ features: ["paywall", "teaser", "unknown"] }, { timeoutMs: 100 });
      expect(performance.now() - started).toBeLessThan(2_000);
      expect(answer.fallback).toEqual({ kind: "deadline" });
      // paywall's onError is `broken` (a deny); teaser's `off` (plain).
      expect(answer.decisions).toEqual({ paywall: { outcome: "broken", type: "deny" }, teaser: { outcome: "off" } });
      expect(answer.unanswered).toEqual(["unknown"]);
      expect(told).toEqual([{ kind: "deadline" }]);
    } finally {
      await proxy.close();
    }
  });

  it("answers the caller's defaults over the document's when the service is unreachable", async () => {
    const closed = await countingProxy(suite.server.port);
    await closed.close();
    const answer = await client({
      baseUrl: closed.url,
      defaults: { paywall: { outcome: "free", type: "allow" } },
    }).decide({ features: ["paywall", "section"] });
    expect(answer.fallback?.kind).toBe("network");
    expect(answer.decisions).toEqual({ paywall: { outcome: "free", type: "allow" }, section: { outcome: "other" } });
  });

  it("answers the fallback on a refusal, with the status and code", async () => {
    const answer = await client({ apiKey: "svc_not_a_key" }).decide({ features: ["section"] });
    expect(answer.fallback).toEqual({ kind: "refused", status: 401, code: "unauthorized" });
    expect(answer.decisions).toEqual({ section: { outcome: "other" } });
  });

  it("waits Retry-After and retries when the wait fits the deadline", async () => {
    let calls = 0;
    const waits: number[] = [];
    const c = client({
      timeoutMs: 5_000,
      sleep: async (ms) => {
        waits.push(ms);
      },
      fetch: async (request) => {
        calls++;
        // The first answer is a 503 with Retry-After, as a briefly unavailable service sends.
        if (calls === 1) {
          return new Response(JSON.stringify({ error: { code: "unavailable", message: "Busy." } }), {
            status: 503,
            headers: { "content-type": "application/json", "retry-after": "1" },
          });
        }
        return fetch(request);
      },
    });
    const answer = await c.decide({ features: ["section"], deviceId: "device-1" });
    expect(answer.fallback).toBeUndefined();
    expect(waits).toEqual([1_000]);
    expect(calls).toBe(2);
  });

  it("honours the service's 429 Retry-After: falls back without asking until the window passes", async () => {
    // Spend keyed decide's window (2,000 a key per 10 s; the server's clock stands still).
    const spend = () =>
      fetch(`${suite.server.base}/v1/decide`, {
        method: "POST",
        headers: { authorization: `Bearer ${suite.key}`, "x-svc-site-id": "news", "content-type": "application/json" },
        body: JSON.stringify({ features: ["section"] }),
      }).then((r) => r.status);
    let limited = false;
    for (let round = 0; round < 25 && !limited; round++) {
      const statuses = await Promise.all(Array.from({ length: 100 }, spend));
      limited = statuses.includes(429);
    }
    expect(limited).toBe(true);
    let clock = Date.parse("2026-11-21T12:00:00Z");
    let calls = 0;
    const c = client({
      now: () => clock,
      fetch: (request) => {
        calls++;
        return fetch(request);
      },
    });
    const first = await c.decide({ features: ["section"] });
    expect(first.fallback).toMatchObject({ kind: "retry_after", status: 429 });
    expect(first.decisions).toEqual({ section: { outcome: "other" } });
    const until = (first.fallback as { untilMs: number }).untilMs;
    expect(until).toBeGreaterThan(clock);
    expect(calls).toBe(1);
    const second = await c.decide({ features: ["section"] });
    expect(second.fallback?.kind).toBe("retry_after");
    expect(calls).toBe(1);
    // The window passes, for the service and the client alike.
    suite.h.clock.advance(10_000);
    clock = until;
    const third = await c.decide({ features: ["section"] });
    expect(third.fallback).toBeUndefined();
    expect(calls).toBe(2);
  }, 60_000);
});

/** A JSON value with object keys sorted and `additionalProperties: false` dropped (see above). */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value === null || typeof value !== "object") return value;
  return Object.fromEntries(
    Object.entries(value)
      .filter(([name, member]) => !(name === "additionalProperties" && member === false))
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))
      .map(([name, member]) => [name, canonical(member)]),
  );
}
