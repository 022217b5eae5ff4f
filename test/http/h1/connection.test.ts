import { afterAll, describe, expect, it } from "bun:test";
import { connect } from "node:net";
import { RequestStats } from "../../../src/http/request-stats";
import { until } from "../../helpers/wait";
import { decodeSeen, SEEN_HEADER, startRecordingServer } from "./recording-app";
import { readAnswers, send } from "./wire";

const H = "Host: h\r\n";

/** A handler's answer the test releases when it wants (a store read that takes its time). */
function gate() {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { open, opened };
}

const slow = gate();
const events = gate();
const server = startRecordingServer({
  maxBodyBytes: 64,
  extra: {
    async "/slow"() {
      await slow.opened;
      return Response.json({ slow: true });
    },
    "/big"(request) {
      const n = new URL(request.url).searchParams.get("n") ?? "";
      return new Response(`${n}:${"x".repeat(200_000)}`, { headers: { "content-type": "text/plain" } });
    },
    "/throws"() {
      throw new Error("boom");
    },
    "/peer"(request) {
      return Response.json(server.server.requestIP(request));
    },
    "/forever"() {
      const stream = new ReadableStream<Uint8Array>({
        start(controller) {
          controller.enqueue(new TextEncoder().encode("event: one\ndata: 1\n\n"));
        },
      });
      return new Response(stream, { headers: { "content-type": "text/event-stream" } });
    },
    "/events"() {
      const encoder = new TextEncoder();
      const stream = new ReadableStream<Uint8Array>({
        async start(controller) {
          controller.enqueue(encoder.encode("event: one\ndata: 1\n\n"));
          await events.opened;
          controller.enqueue(encoder.encode("event: two\ndata: 2\n\n"));
          controller.close();
        },
      });
      return new Response(stream, { headers: { "content-type": "text/event-stream" } });
    },
  },
});
afterAll(() => server.server.stop(true));

describe("connections of the h1 transport", () => {
  it("answers pipelined requests in order while the first one's handler still awaits", async () => {
    const pending = send(server.port, `GET /slow HTTP/1.1\r\n${H}\r\nGET /fast HTTP/1.1\r\n${H}\r\n`, { answers: 2 });
    // The second request is handled before the first is answered, and still waits its turn.
    expect(await until(() => server.seen.some((s) => s.target === "/fast"), 5_000, 1)).toBe(true);
    slow.open();
    const out = await pending;
    expect(out.answers.map((a) => a.body.toString())).toEqual(['{"slow":true}', ""]);
    expect(decodeSeen(out.answers[1]?.headers[SEEN_HEADER])?.target).toBe("/fast");
  });

  it("keeps an HTTP/1.1 connection open across requests and closes it after Connection: close", async () => {
    let write: (bytes: string) => void = () => undefined;
    let more = true;
    const out = await send(server.port, `GET /1 HTTP/1.1\r\n${H}\r\n`, {
      onOpen: (w) => {
        write = w;
      },
      // Once the first answer is in, the same connection carries the next requests.
      onData: (received) => {
        if (more && received.includes("\r\n\r\n")) {
          more = false;
          write(
            `GET /2 HTTP/1.1\r\n${H}\r\nGET /3 HTTP/1.1\r\n${H}Connection: close\r\n\r\nGET /4 HTTP/1.1\r\n${H}\r\n`,
          );
        }
      },
    });
    expect(out.answers.map((a) => decodeSeen(a.headers[SEEN_HEADER])?.target)).toEqual(["/1", "/2", "/3"]);
    expect(out.answers[2]?.headers.connection).toBe("close");
    expect(out.closed).toBe(true);
  });

  it("closes an HTTP/1.0 connection after its answer unless it asks to keep it", async () => {
    const plain = await send(server.port, `GET /a HTTP/1.0\r\n${H}\r\nGET /b HTTP/1.0\r\n${H}\r\n`);
    expect(plain.closed).toBe(true);
    expect(plain.answers).toHaveLength(1);
    expect(plain.answers[0]?.head.startsWith("HTTP/1.1 200")).toBe(true);
    const kept = await send(
      server.port,
      `GET /a HTTP/1.0\r\n${H}Connection: keep-alive\r\n\r\nGET /b HTTP/1.0\r\n${H}\r\n`,
    );
    expect(kept.answers.map((a) => a.headers.connection)).toEqual(["keep-alive", "close"]);
    // A tab after the option at the line's end: llhttp reads no option there, and neither do we.
    const tabbed = await send(
      server.port,
      `GET /a HTTP/1.0\r\n${H}Connection: keep-alive\t\r\n\r\nGET /b HTTP/1.0\r\n${H}\r\n`,
    );
    expect(tabbed.answers).toHaveLength(1);
    expect(tabbed.closed).toBe(true);
  });

  it("answers HEAD with the length of the body it leaves out, and frames the next answer", async () => {
    const out = await send(server.port, `HEAD /throws HTTP/1.1\r\n${H}\r\nGET /x HTTP/1.1\r\n${H}\r\n`, {
      answers: 2,
      headRequests: [true, false],
    });
    expect(out.answers[0]?.status).toBe(500);
    expect(Number(out.answers[0]?.headers["content-length"])).toBeGreaterThan(0);
    expect(out.answers[0]?.body.byteLength).toBe(0);
    expect(decodeSeen(out.answers[1]?.headers[SEEN_HEADER])?.target).toBe("/x");
  });

  it("answers 100 Continue before reading a body the client holds back", async () => {
    let write: (bytes: string) => void = () => undefined;
    let interim = 0;
    const out = send(server.port, post("Expect: 100-continue\r\nContent-Length: 5\r\n"), {
      onOpen: (w) => {
        write = w;
      },
      answers: 1,
      onInterim: () => {
        interim++;
        write("hello");
      },
    });
    const answer = (await out).answers[0];
    expect(interim).toBe(1);
    expect(Buffer.from(decodeSeen(answer?.headers[SEEN_HEADER])?.body ?? "", "base64").toString()).toBe("hello");
  });

  it("answers 413 in the envelope before the client sends a byte of a body too large", async () => {
    const out = await send(server.port, post("Expect: 100-continue\r\nContent-Length: 65\r\n"));
    expect(out.interim).toEqual([]);
    expect(out.answers.map((a) => a.status)).toEqual([413]);
    expect(JSON.parse(out.answers[0]?.body.toString() ?? "").error.code).toBe("payload_too_large");
    expect(out.closed).toBe(true);
  });

  it("streams an event stream as it is written, then answers the request behind it", async () => {
    let chunks = 0;
    const out = send(server.port, `GET /events HTTP/1.1\r\n${H}\r\nGET /after HTTP/1.1\r\n${H}\r\n`, {
      answers: 2,
      onData: (received) => {
        chunks++;
        if (received.includes("event: one")) events.open();
      },
    });
    const answers = (await out).answers;
    expect(answers[0]?.headers["transfer-encoding"]).toBe("chunked");
    expect(answers[0]?.body.toString()).toBe("event: one\ndata: 1\n\nevent: two\ndata: 2\n\n");
    expect(decodeSeen(answers[1]?.headers[SEEN_HEADER])?.target).toBe("/after");
    expect(chunks).toBeGreaterThan(1);
  });

  it("answers HEAD of an event stream that never ends with its head only, and the request behind it", async () => {
    const out = await send(server.port, `HEAD /forever HTTP/1.1\r\n${H}\r\nGET /x HTTP/1.1\r\n${H}\r\n`, {
      answers: 2,
      headRequests: [true, false],
    });
    expect(out.answers[0]?.headers["content-type"]).toBe("text/event-stream");
    expect(out.answers[0]?.body.byteLength).toBe(0);
    expect(decodeSeen(out.answers[1]?.headers[SEEN_HEADER])?.target).toBe("/x");
  });

  it("answers every pipelined request in order to a client that reads its answers late", async () => {
    const count = 60;
    const requests = Array.from({ length: count }, (_, n) => `GET /big?n=${n} HTTP/1.1\r\n${H}\r\n`).join("");
    const answers = await new Promise<string[]>((resolve, reject) => {
      const socket = connect({ port: server.port, host: "127.0.0.1" });
      let received = Buffer.alloc(0);
      socket.on("connect", () => {
        socket.pause();
        socket.write(requests);
        // The answers (12 MB) pile up at the server until the client reads.
        setTimeout(() => socket.resume(), 200);
      });
      socket.on("data", (chunk: Buffer) => {
        received = Buffer.concat([received, chunk]);
        const out = readAnswers(received, false);
        if (out.answers.length === count) {
          socket.destroy();
          resolve(out.answers.map((a) => a.body.toString("latin1", 0, a.body.indexOf(":"))));
        }
      });
      socket.on("error", reject);
    });
    expect(answers).toEqual(Array.from({ length: count }, (_, n) => String(n)));
  });

  it("answers what a handler throws with 500 in the envelope and keeps the connection", async () => {
    const out = await send(server.port, `GET /throws HTTP/1.1\r\n${H}\r\nGET /x HTTP/1.1\r\n${H}\r\n`, { answers: 2 });
    expect(out.answers.map((a) => a.status)).toEqual([500, 200]);
    expect(JSON.parse(out.answers[0]?.body.toString() ?? "").error.code).toBe("internal_error");
  });

  it("gives every answer a request id: the client's when valid, a new one otherwise", async () => {
    const out = await send(
      server.port,
      `GET / HTTP/1.1\r\n${H}x-request-id: trace-1\r\n\r\nGET / HTTP/1.1\r\n${H}x-request-id: has space\r\n\r\n`,
      { answers: 2 },
    );
    expect(out.answers[0]?.headers["x-request-id"]).toBe("trace-1");
    expect(out.answers[1]?.headers["x-request-id"]).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("tells a handler the peer's address", async () => {
    const out = await send(server.port, `GET /peer HTTP/1.1\r\n${H}\r\n`, { answers: 1 });
    expect(JSON.parse(out.answers[0]?.body.toString() ?? "")).toMatchObject({ address: "127.0.0.1", family: "IPv4" });
  });
});

const post = (fields: string, body = "") => `POST /p HTTP/1.1\r\n${H}${fields}\r\n${body}`;

describe("slow clients (the clock the transport reads is the test's)", () => {
  let now = 1_000_000;
  const timed = startRecordingServer({ now: () => now, sweepMs: 5 });
  afterAll(() => timed.server.stop(true));

  it.each([
    ["a head that never ends (10 s)", `GET / HTTP/1.1\r\n${H}X-A: 1\r\n`, 10_001],
    ["a body that stops coming (10 s idle)", post("Content-Length: 100000\r\n", "a"), 10_001],
  ])("answers 408 in the envelope and closes on %s", async (_name, bytes, advance) => {
    // The clock moves on past the limit again and again until the server has cut the client off.
    const ticking = setInterval(() => {
      now += advance;
    }, 10);
    try {
      const result = await send(timed.port, bytes);
      expect(result.answers.map((a) => a.status)).toEqual([408]);
      expect(result.closed).toBe(true);
    } finally {
      clearInterval(ticking);
    }
  });

  it("keeps a quiet connection without a request open until the keep-alive time (10 s)", async () => {
    const ticking = setInterval(() => {
      now += 10_001;
    }, 10);
    try {
      const result = await send(timed.port, "");
      expect(result.answers).toEqual([]);
      expect(result.closed).toBe(true);
    } finally {
      clearInterval(ticking);
    }
  });

  it("cuts off a body still trickling in 30 s after its request began", async () => {
    let write: (bytes: string) => void = () => undefined;
    const out = send(timed.port, post("Content-Length: 100000\r\n", "a"), {
      onOpen: (w) => {
        write = w;
      },
    });
    for (let second = 0; second < 31; second++) {
      // One byte a second: never idle for 10 s, but past the request's 30 s.
      now += 1_000;
      write("a");
      await Bun.sleep(10);
    }
    const result = await out;
    expect(result.answers.map((a) => a.status)).toEqual([408]);
    expect(result.closed).toBe(true);
  });
});

describe("request stats", () => {
  it("counts each answer once written, by route and status", async () => {
    const quiet = { debug() {}, info() {}, warn() {}, error() {}, warnAtMostEvery() {} };
    const stats = new RequestStats(quiet, false);
    const counted = startRecordingServer({ requests: stats });
    try {
      await send(counted.port, `POST /native HTTP/1.1\r\n${H}Content-Length: 0\r\n\r\nGET /x HTTP/1.1\r\n${H}\r\n`, {
        answers: 2,
      });
      const native = stats.nativeStats("POST", "/native");
      expect(native.byStatus.get(200)?.count).toBe(1);
    } finally {
      await counted.server.stop(true);
    }
  });
});
