/**
 * The request thread (SVC_DECIDE_THREAD=on, src/decide-thread) in a real server process on the
 * embedded store: keyed decide answered by the thread from state the main thread's changes keep
 * current, every other request answered by the app through it, pipelined requests of both kinds
 * answered in order, and the thread's meter counts written before a graceful stop ends.
 */
import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { connect } from "node:net";
import { OPERATOR_TOKEN } from "../helpers/harness";
import { type ServerProcess, startServerProcess } from "../helpers/process";
import { scratchDir } from "../helpers/scratch-dirs";
import { within } from "../helpers/second-process";
import { adminPost } from "../helpers/server-processes";
import { DOCUMENT, ORIGIN } from "./document";

const dataDir = scratchDir("svc-decide-thread-");
const env = {
  SVC_OPERATOR_TOKEN: OPERATOR_TOKEN,
  SVC_SECRET: "decide-thread-test-secret-0123456789",
  SVC_DECIDE_THREAD: "on",
  SVC_SEED_DEMO: "0",
  SVC_DATA_DIR: dataDir,
  SVC_ACCESS_LOG: "1",
  // Every keyed decide sampled for impact replay; counts written only when asked (or at stop).
  SVC_IMPACT_SAMPLE_EVERY: "1",
  SVC_FLUSH_INTERVAL_MS: "60000",
  SVC_STATS_FLUSH_INTERVAL_MS: "60000",
};
let server: ServerProcess;
let key = { key: "", id: "" };

const admin = (path: string, body: unknown) => adminPost(server, path, body);

function decide(deviceId: string, apiKey = key.key) {
  return fetch(`${server.url}/v1/decide`, {
    method: "POST",
    headers: { "x-svc-site-id": "news", authorization: `Bearer ${apiKey}`, "content-type": "application/json" },
    body: JSON.stringify({ features: ["paywall"], deviceId }),
  });
}

/** Browser decide (/svc/v1/decide): answered by the app on the main thread, decided by the thread. */
async function browserOutcome(deviceId: string): Promise<string> {
  const response = await fetch(`${server.url}/svc/v1/decide`, {
    method: "POST",
    headers: { "x-svc-site-id": "news", origin: ORIGIN, "content-type": "application/json" },
    body: JSON.stringify({ features: ["paywall"], deviceId }),
  });
  expect(response.status).toBe(200);
  const body = (await response.json()) as { decisions: { paywall: { outcome: string } } };
  return body.decisions.paywall.outcome;
}

/** OFREP's one-flag evaluation: answered by the app on the main thread, evaluated by the thread. */
function ofrep(context: unknown) {
  return fetch(`${server.url}/ofrep/v1/evaluate/flags/paywall`, {
    method: "POST",
    headers: { "x-svc-site-id": "news", authorization: `Bearer ${key.key}`, "content-type": "application/json" },
    body: JSON.stringify({ context }),
  });
}

async function outcome(deviceId: string): Promise<string> {
  const response = await decide(deviceId);
  expect(response.status).toBe(200);
  const body = (await response.json()) as { decisions: { paywall: { outcome: string } } };
  return body.decisions.paywall.outcome;
}

beforeAll(async () => {
  server = await startServerProcess(env);
  await admin("/tenants", { id: "default", default: true });
  await admin("/tenants/default/sites", { id: "news" });
  await admin("/tenants/default/sites/news/deploy", { document: DOCUMENT });
  const issued = (await admin("/tenants/default/sites/news/keys", { name: "thread" })) as {
    key: string;
    id: string;
  };
  key = { key: issued.key, id: issued.id };
  // The site and key reach the thread as changes the main thread passes on.
  await within(10_000, async () => (await decide("warm-up")).status === 200);
}, 60_000);

afterAll(async () => {
  await server?.stop("SIGKILL");
});

describe("the request thread (SVC_DECIDE_THREAD=on)", () => {
  it("decides keyed requests with the reader's meter, and the app answers the rest through it", async () => {
    expect([await outcome("d-1"), await outcome("d-1"), await outcome("d-1"), await outcome("d-1")]).toEqual([
      "open",
      "open",
      "open",
      "wall",
    ]);
    const health = await fetch(`${server.url}/health`, { headers: { "x-request-id": "thread-test-1" } });
    expect(health.status).toBe(200);
    expect(health.headers.get("x-request-id")).toBe("thread-test-1");
    // The app's envelope names the id the thread's transport wrote in the header.
    const missing = await fetch(`${server.url}/no-such-route`, { headers: { "x-request-id": "thread-test-2" } });
    expect(missing.status).toBe(404);
    expect(missing.headers.get("x-request-id")).toBe("thread-test-2");
    expect(((await missing.json()) as { error: { requestId: string } }).error.requestId).toBe("thread-test-2");
  });

  it("counts a reader decided through keyed and browser decide once, in the thread's meters", async () => {
    expect(await outcome("d-3")).toBe("open");
    expect(await browserOutcome("d-3")).toBe("open");
    expect(await outcome("d-3")).toBe("open");
    // Three decisions counted whichever route made them: the allowance (3) is spent on both.
    expect(await browserOutcome("d-3")).toBe("wall");
    expect(await outcome("d-3")).toBe("wall");
  });

  it("resolves a journey's destination from the thread's meters (the forward route)", async () => {
    const destination = async (deviceId: string) => {
      const response = await fetch(
        `${server.url}/svc/v1/decide/forward?feature=subscribe&site=news&deviceId=${deviceId}`,
        {
          redirect: "manual",
        },
      );
      expect(response.status).toBe(302);
      return response.headers.get("location");
    };
    expect(await destination("d-5")).toBe("https://shop.example/offer");
    for (let i = 0; i < 3; i++) expect(await outcome("d-5")).toBe("open");
    // The allowance spent by keyed decide, in the thread: the journey reads it there too.
    expect(await destination("d-5")).toBe("https://shop.example/last-free");
    // And charged nothing: a reader with one left keeps it.
    expect(await outcome("d-5b")).toBe("open");
    expect(await outcome("d-5b")).toBe("open");
    expect(await destination("d-5b")).toBe("https://shop.example/offer");
    expect(await outcome("d-5b")).toBe("open");
    expect(await outcome("d-5b")).toBe("wall");
  });

  it("counts OFREP's evaluations in the thread's meters too, and refuses a bad context as OFREP does", async () => {
    expect(await outcome("d-4")).toBe("open");
    const variants: string[] = [];
    for (let i = 0; i < 2; i++) {
      const response = await ofrep({ deviceId: "d-4" });
      expect(response.status).toBe(200);
      variants.push(((await response.json()) as { variant: string }).variant);
    }
    expect(variants).toEqual(["open", "open"]);
    expect(await outcome("d-4")).toBe("wall");
    const refused = await ofrep({ deviceId: 7 });
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { errorCode: string }).errorCode).toBe("INVALID_CONTEXT");
  });

  it("answers pipelined keyed and forwarded requests in order, on one connection", async () => {
    const body = JSON.stringify({ features: ["paywall"], deviceId: "d-1" });
    const keyed =
      `POST /v1/decide HTTP/1.1\r\nHost: 127.0.0.1\r\nx-svc-site-id: news\r\nauthorization: Bearer ${key.key}\r\n` +
      `content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
    const health = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n";
    const text = await new Promise<string>((resolve, reject) => {
      const socket = connect(server.port, "127.0.0.1");
      let received = "";
      socket.on("data", (chunk) => {
        received += chunk.toString();
        if ((received.match(/HTTP\/1\.1 /g) ?? []).length === 3 && received.endsWith("}")) {
          socket.end();
          resolve(received);
        }
      });
      socket.on("error", reject);
      socket.write(keyed + health + keyed);
    });
    const answers = text.split(/(?=HTTP\/1\.1 )/);
    expect(answers).toHaveLength(3);
    expect(answers[0]).toContain('"outcome":"wall"');
    expect(answers[1]).toContain('{"ok":true}');
    expect(answers[2]).toContain('"outcome":"wall"');
  });

  it("counts the thread's answers in /metrics and the access log, keyed decide's and forwarded ones", async () => {
    const count = async (route: string, status: string) => {
      const text = await (
        await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } })
      ).text();
      const line = text
        .split("\n")
        .find((l) =>
          l.startsWith(
            `svc_http_requests_total{method="${route.split(" ")[0]}",route="${route.split(" ")[1]}",status="${status}"}`,
          ),
        );
      return Number(line?.split(" ").pop() ?? 0);
    };
    const before = await count("POST /v1/decide", "200");
    for (let i = 0; i < 3; i++) await outcome(`d-metrics-${i}`);
    // Handed to the main thread's statistics every 250 ms.
    // (Answers of the tests before may land meanwhile too.)
    await within(10_000, async () => (await count("POST /v1/decide", "200")) >= before + 3);
    expect(await count("GET /health", "200")).toBeGreaterThan(0);
    const line = await server.waitForOutput(
      /"message":"request","method":"POST","route":"\/v1\/decide","status":200[^\n]*"client":"127\.0\.0\.1"/,
      5_000,
    );
    expect(line).not.toBeNull();
    // The thread's meter values held (one a reader decided so far), reported every second.
    const metrics = async () =>
      (await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } })).text();
    await within(5_000, async () => {
      const held = (await metrics()).split("\n").find((l) => l.startsWith("svc_meter_entries "));
      return Number(held?.split(" ")[1] ?? 0) >= 6;
    });
    const ready = await fetch(`${server.url}/ready`);
    expect(ready.status).toBe(200);
  }, 30_000);

  it("hands the thread's impact samples to the replay, and its decision counts to an insight report", async () => {
    const get = async (path: string) => {
      const response = await fetch(`${server.url}/admin${path}`, {
        headers: { authorization: `Bearer ${OPERATOR_TOKEN}` },
      });
      expect(response.status).toBe(200);
      return response.json();
    };
    const counted = async () => {
      const report = (await get("/tenants/default/sites/news/insight/decisions?range=1h")) as {
        series: { feature: string; total: number }[];
      };
      return report.series.filter((s) => s.feature === "paywall").reduce((sum, s) => sum + s.total, 0);
    };
    const before = await counted();
    await admin("/tenants/default/sites/news/deploy", { document: DOCUMENT, preview: true });
    for (let i = 0; i < 4; i++) await outcome(`d-impact-${i}`);
    // The counts are the thread's, not yet flushed (60 s): the report asks the thread to write them.
    expect(await counted()).toBe(before + 4);
    await within(5_000, async () => {
      const impact = (await get("/tenants/default/sites/news/impact")) as { samples: number };
      return impact.samples >= 4;
    });
  });

  it("captures browser decide's impact samples in the thread, with the meters it counts", async () => {
    const report = async () => {
      const response = await fetch(`${server.url}/admin/tenants/default/sites/news/impact`, {
        headers: { authorization: `Bearer ${OPERATOR_TOKEN}` },
      });
      expect(response.status).toBe(200);
      return (await response.json()) as {
        samples: number;
        features: { name: string; transitions: { from: string; to: string; count: number }[] }[];
      };
    };
    // Staged: a larger allowance. A reader whose 3 are spent is walled live, let through staged.
    const staged = structuredClone(DOCUMENT);
    staged.meters.free.allowance = 10;
    await admin("/tenants/default/sites/news/deploy", { document: staged, preview: true });
    for (let i = 0; i < 3; i++) expect(await outcome("d-7")).toBe("open");
    const walledToOpen = async () =>
      (await report()).features
        .find((f) => f.name === "paywall")
        ?.transitions.filter((t) => t.from.startsWith("wall") && t.to.startsWith("open"))
        .reduce((sum, t) => sum + t.count, 0) ?? 0;
    await within(5_000, async () => (await report()).samples >= 3);
    const before = await walledToOpen();
    const samples = (await report()).samples;
    // Sampled (every decision here, at most 20 a second: this one in a second of its own) where it
    // was decided: the thread's meters hold d-7's 3.
    await Bun.sleep(1_000);
    expect(await browserOutcome("d-7")).toBe("wall");
    await within(5_000, async () => (await report()).samples > samples);
    expect(await walledToOpen()).toBe(before + 1);
  });

  it("refuses a key once the main thread revokes it", async () => {
    await admin(`/tenants/default/sites/news/keys/${key.id}/revoke`, {});
    await within(10_000, async () => (await decide("d-9")).status === 401);
  });

  it("writes the thread's counts before a graceful stop ends: a new process reads them", async () => {
    expect(await server.stop("SIGTERM")).toBe(0);
    server = await startServerProcess(env);
    const issued = (await admin("/tenants/default/sites/news/keys", { name: "thread-2" })) as {
      key: string;
      id: string;
    };
    key = { key: issued.key, id: issued.id };
    await within(10_000, async () => (await decide("warm-up")).status === 200);
    // d-1 was walled before the stop (its count, 3, in the store), d-2 never decided.
    expect(await outcome("d-1")).toBe("wall");
    expect(await outcome("d-2")).toBe("open");
  }, 60_000);
});
