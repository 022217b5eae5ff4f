import { describe, expect, it } from "bun:test";
import { connect } from "node:net";
import { keyedDecideText } from "../../../src/decide/routes";
import { encodeHead, encodeJsonHead } from "../../../src/http/h1/encode";
import type { RequestHead } from "../../../src/http/h1/head";
import { type Answer, encodeJson } from "../../../src/http/h1/output";
import { H1Request } from "../../../src/http/h1/request";
import { requestIdFor } from "../../../src/http/request-id";
import { basicDocument } from "../../fixtures/documents";
import { servedSuite } from "../../helpers/served-suite";
import { readAnswers, send } from "./wire";

const head = (headers: [string, string][], method = "POST"): RequestHead => ({
  fields: headers.flat(),
  method,
  target: "/v1/decide?x=1",
  http10: false,
  host: "svc.example:8080",
  contentLength: -1,
  chunked: false,
  keepAlive: true,
  expectContinue: false,
});

describe("the h1 transport's light request (keyed decide's hot path)", () => {
  it("reads fields by lower-case name and joins repeated ones, as Headers does", () => {
    const fields: [string, string][] = [
      ["X-Svc-Site-Id", "news"],
      ["Accept", "a"],
      ["accept", "b"],
      ["X-API-KEY", "k"],
    ];
    const light = new H1Request(head(fields), undefined, "rid-1");
    const native = new Headers(fields);
    for (const name of ["x-svc-site-id", "accept", "x-api-key", "authorization", "x-svc"]) {
      expect(light.headers.get(name)).toBe(native.get(name));
    }
    expect(light.method).toBe("POST");
    expect(light.url).toBe("http://svc.example:8080/v1/decide?x=1");
    expect(requestIdFor(light)).toBe("rid-1");
  });

  it("parses its body as JSON, rejects malformed or absent text as Request.json() does, and streams it", async () => {
    const bytes = new TextEncoder().encode('{"userId":"é"}');
    expect(await new H1Request(head([]), bytes, "r").json()).toEqual({ userId: "é" });
    expect(new H1Request(head([]), new TextEncoder().encode("{nope"), "r").json()).rejects.toThrow();
    expect(new H1Request(head([]), undefined, "r").json()).rejects.toThrow();
    expect(new H1Request(head([]), undefined, "r").body).toBeNull();
    // A byte order mark before the text is dropped, as Request.json() drops it.
    const bom = new Uint8Array([0xef, 0xbb, 0xbf, ...new TextEncoder().encode('{"a":1}')]);
    expect(await new H1Request(head([]), bom, "r").json()).toEqual(
      await new Request("http://x/", { method: "POST", body: bom }).json(),
    );
    const streamed = new H1Request(head([]), bytes, "r").body;
    expect(await new Response(streamed).text()).toBe('{"userId":"é"}');
  });

  it("writes a JSON answer's head exactly as the general encoder does", () => {
    const headers = new Headers({ "content-type": "application/json" });
    for (const fields of [
      { requestId: "a-1", close: false, keepAlive10: false },
      { requestId: "a-2", close: true, keepAlive10: false },
      { requestId: "a-3", close: false, keepAlive10: true },
    ]) {
      const date = "Thu, 26 Nov 2026 20:00:00 GMT";
      expect(encodeJsonHead(1234, fields, date)).toBe(encodeHead(200, headers, { length: 1234 }, fields, date));
    }
  });
});

describe("a hot JSON answer encoded once", () => {
  const date = "Fri, 27 Nov 2026 09:00:00 GMT";
  const fields = (headOnly: boolean) => ({ requestId: "enc-1", close: false, keepAlive10: false, headOnly }) as Answer;
  const bytesOf = (json: string, headOnly = false) => {
    const at = encodeJson(json, fields(headOnly), date);
    return Buffer.from(at.bytes.subarray(at.start, at.end));
  };

  it("is its head then its UTF-8 body, as a string of both would encode, for any size", () => {
    const small = '{"decisions":{"a":{"outcome":"on"}}}';
    const accented = JSON.stringify({ decisions: { "café-🎉": { outcome: "on", note: "ü".repeat(100) } } });
    // Past the largest buffer kept for encoding (1 MB of room): encoded into one of its own.
    const large = JSON.stringify({ decisions: { big: { note: "é".repeat(600_000) } } });
    for (const json of [small, accented, large, small]) {
      const length = Buffer.byteLength(json, "utf8");
      const expected = Buffer.from(encodeJsonHead(length, fields(false), date) + json, "utf8");
      expect(bytesOf(json).equals(expected)).toBe(true);
    }
  });

  it("ends with its head for a HEAD request, the length still the body's", () => {
    const json = JSON.stringify({ decisions: { é: { outcome: "on" } } });
    const head = encodeJsonHead(Buffer.byteLength(json, "utf8"), fields(true), date);
    expect(bytesOf(json, true).toString("latin1")).toBe(head);
  });
});

describe("keyed decide over the h1 transport (the hot path), over a real socket", () => {
  const served = servedSuite("embedded", { site: basicDocument() });

  const decideBytes = (body: string, extra = "") =>
    `POST /v1/decide HTTP/1.1\r\nHost: 127.0.0.1\r\nx-svc-site-id: news\r\nx-api-key: ${served.key}\r\n` +
    `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${extra}\r\n${body}`;

  it("answers as app.handle does: the same decisions, a UTF-8 length, the client's request id", async () => {
    const body = JSON.stringify({ userId: "reader-é", features: ["section", "teaser"] });
    const wire = await send(served.server.port, decideBytes(body, "x-request-id: hot-1\r\n"), { answers: 1 });
    const answer = wire.answers[0];
    expect(answer?.status).toBe(200);
    expect(answer?.headers["content-type"]).toBe("application/json");
    expect(answer?.headers["x-request-id"]).toBe("hot-1");
    expect(Number(answer?.headers["content-length"])).toBe(answer?.body.byteLength as number);
    const handled = await served.h.app.handle(
      new Request("http://127.0.0.1/v1/decide", {
        method: "POST",
        headers: { "x-svc-site-id": "news", "x-api-key": served.key, "content-type": "application/json" },
        body: JSON.stringify({ userId: "reader-è", features: ["section", "teaser"] }),
      }),
    );
    const viaHandle = (await handled.json()) as { decisions: Record<string, unknown> };
    const viaWire = JSON.parse(answer?.body.toString("utf8") ?? "") as { decisions: Record<string, unknown> };
    expect(Object.keys(viaWire.decisions).sort()).toEqual(Object.keys(viaHandle.decisions).sort());
    expect(viaWire.decisions.section).toEqual(viaHandle.decisions.section);
  });

  it("answers at once, with no promise, when the key and the reader are in memory; through a promise only when a step waits", async () => {
    const hot = keyedDecideText(served.h.deps);
    const light = (apiKey: string, body: string, id: string) =>
      new H1Request(
        head([
          ["x-svc-site-id", "news"],
          ["x-api-key", apiKey],
          ["content-type", "application/json"],
          ["content-length", String(Buffer.byteLength(body))],
        ]),
        new TextEncoder().encode(body),
        id,
      );
    const body = JSON.stringify({ userId: "at-once", features: ["section"] });
    // The first call may wait for the key's first read; after it, the key is held.
    const first = hot(light(served.key, body, "once-0"));
    await first;
    const warm = hot(light(served.key, body, "once-1"));
    expect(typeof warm).toBe("string");
    expect(JSON.parse(warm as string).decisions.section).toBeDefined();
    // A refusal found at once is a Response at once, in the envelope.
    const malformed = hot(light(served.key, "{nope", "once-2"));
    expect(malformed).toBeInstanceOf(Response);
    expect((malformed as Response).status).toBe(400);
    expect(((await (malformed as Response).json()) as { error: { requestId: string } }).error.requestId).toBe("once-2");
    // A key never seen is looked up in the store: a promise, settling to the 401 (never a rejection).
    const unknown = hot(light(`${served.key}x`, body, "once-3"));
    expect(unknown).toBeInstanceOf(Promise);
    const refused = (await unknown) as Response;
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { error: { requestId: string } }).error.requestId).toBe("once-3");
  });

  it("reads a chunked body, and answers a malformed one 400 in the envelope naming its request id", async () => {
    const json = JSON.stringify({ userId: "chunked", features: ["section"] });
    const chunked =
      `POST /v1/decide HTTP/1.1\r\nHost: 127.0.0.1\r\nx-svc-site-id: news\r\nx-api-key: ${served.key}\r\n` +
      `content-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n` +
      `${Buffer.byteLength(json).toString(16)}\r\n${json}\r\n0\r\n\r\n`;
    const malformed = decideBytes("{nope", "x-request-id: bad-1\r\n");
    const wire = await send(served.server.port, chunked + malformed, { answers: 2 });
    expect(wire.answers.map((a) => a.status)).toEqual([200, 400]);
    expect(JSON.parse(wire.answers[0]?.body.toString() ?? "").decisions.section).toBeDefined();
    const refused = JSON.parse(wire.answers[1]?.body.toString() ?? "");
    expect(refused.error).toMatchObject({ code: "bad_request", requestId: "bad-1" });
    expect(wire.answers[1]?.headers["x-request-id"]).toBe("bad-1");
  });

  it("answers a decide whose Host is unusable 400 in the envelope, between good ones, in order", async () => {
    // The hot route's own path takes only routable requests; this one goes the general path.
    const good = (id: string) =>
      decideBytes(JSON.stringify({ userId: id, features: ["section"] }), `x-request-id: ${id}\r\n`);
    const body = JSON.stringify({ userId: "no-host", features: ["section"] });
    const badHost = decideBytes(body, "x-request-id: host-1\r\n").replace("Host: 127.0.0.1", "Host: a/b");
    const wire = await send(served.server.port, good("host-0") + badHost + good("host-2"), { answers: 3 });
    expect(wire.answers.map((a) => a.status)).toEqual([200, 400, 200]);
    expect(wire.answers.map((a) => a.headers["x-request-id"])).toEqual(["host-0", "host-1", "host-2"]);
    expect(JSON.parse(wire.answers[1]?.body.toString() ?? "").error).toMatchObject({
      code: "bad_request",
      message: "The Host header is missing or invalid.",
      requestId: "host-1",
    });
  });

  it("answers pipelined decides in order, closing after the one that asks", async () => {
    const bodies = [0, 1, 2].map((i) => JSON.stringify({ userId: `p-${i}`, features: ["section"] }));
    const bytes = bodies.map((b, i) =>
      decideBytes(b, `x-request-id: pipe-${i}\r\n${i === 2 ? "connection: close\r\n" : ""}`),
    );
    const wire = await send(served.server.port, bytes.join(""));
    expect(wire.answers.map((a) => a.headers["x-request-id"])).toEqual(["pipe-0", "pipe-1", "pipe-2"]);
    expect(wire.answers.map((a) => a.status)).toEqual([200, 200, 200]);
    expect(wire.answers[2]?.headers.connection).toBe("close");
    expect(wire.closed).toBe(true);
  });

  it("keeps pipelined answers in order when some are found at once and some wait for the store", async () => {
    const body = JSON.stringify({ userId: "mixed", features: ["section"] });
    const withKey = (id: string, apiKey: string, extra = "") =>
      decideBytes(body, `x-request-id: ${id}\r\n${extra}`).replace(`x-api-key: ${served.key}`, `x-api-key: ${apiKey}`);
    // The reader's first request loads its meters; after it, its requests are answered at once.
    expect(
      (await send(served.server.port, withKey("mix-warm", served.key, "connection: close\r\n"))).answers[0]?.status,
    ).toBe(200);
    // Keys never issued are looked up in the store (a promise) between answers found at once.
    const wire = await send(
      served.server.port,
      [
        withKey("mix-0", served.key),
        withKey("mix-1", served.key),
        withKey("mix-wait", `${served.key}-unknown`),
        withKey("mix-2", served.key),
        withKey("mix-last", `${served.key}-never-issued`, "connection: close\r\n"),
      ].join(""),
    );
    expect(wire.answers.map((a) => a.headers["x-request-id"])).toEqual([
      "mix-0",
      "mix-1",
      "mix-wait",
      "mix-2",
      "mix-last",
    ]);
    expect(wire.answers.map((a) => a.status)).toEqual([200, 200, 401, 200, 401]);
  });

  it("keeps every answer whole and in order for a client that reads only after it has sent them all", async () => {
    // Enough answers to fill the socket's buffers while the client does not read: the server's
    // writes come back short, its answers wait as copies, and it stops reading until they drain.
    const count = 8_000;
    const keys: string[] = [];
    for (let k = 0; k < 4; k++) {
      const issued = await served.h.admin("POST", "/admin/tenants/default/sites/news/keys", {
        name: `slow reader ${k}`,
      });
      keys.push(((await issued.json()) as { key: string }).key);
    }
    const requests: string[] = [];
    for (let i = 0; i < count; i++) {
      // Explained, so each answer is near a kilobyte: 7 MB in all, past what the kernel buffers hold.
      const body = JSON.stringify({ userId: `slow-${i % 50}`, features: ["section", "teaser"], explain: true });
      const extra = `x-request-id: slow-${i}\r\n${i === count - 1 ? "connection: close\r\n" : ""}`;
      requests.push(decideBytes(body, extra).replace(`x-api-key: ${served.key}`, `x-api-key: ${keys[i % 4]}`));
    }
    const received = await new Promise<Buffer>((resolve, reject) => {
      const parts: Buffer[] = [];
      const socket = connect({ port: served.server.port, host: "127.0.0.1" });
      socket.pause();
      socket.on("connect", () => {
        socket.write(requests.join(""));
        setTimeout(() => socket.resume(), 500);
      });
      socket.on("data", (chunk: Buffer) => parts.push(chunk));
      socket.on("close", () => resolve(Buffer.concat(parts)));
      socket.on("error", reject);
    });
    expect(received.byteLength).toBeGreaterThan(6 * 1024 * 1024);
    const wire = readAnswers(received, true);
    expect(wire.answers).toHaveLength(count);
    // A key's rate may refuse some (429, written by the general path between hot answers).
    let decided = 0;
    for (let i = 0; i < count; i++) {
      const answer = wire.answers[i];
      expect(answer?.headers["x-request-id"]).toBe(`slow-${i}`);
      const body = JSON.parse(answer?.body.toString("utf8") ?? "");
      if (answer?.status === 200) {
        decided++;
        expect(body.explain.section.outcome).toBe("other");
      } else expect([answer?.status, body.error.code]).toEqual([429, "rate_limited"]);
    }
    expect(decided).toBeGreaterThan(7_000);
  }, 60_000);
});
