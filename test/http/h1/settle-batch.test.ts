import { describe, expect, it } from "bun:test";
import { serveOverH1 } from "../../../src/http/h1/server";
import type { ServedApp } from "../../../src/http/node-server";

/**
 * Hot answers found at once are written together after their turn's code (`settleAll` in
 * src/http/h1/server.ts). A socket whose write throws must cost only its own answer: the others
 * of the batch are still written, and the failure goes to `onError`.
 */

type Handlers = Record<string, (socket: unknown, data?: unknown) => void>;

/** Serves `app` over h1 with the socket handlers taken as `Bun.listen` is called (no port opened). */
function handlersOf(app: ServedApp, onError: (error: Error) => void): Handlers {
  let handlers: Handlers = {};
  const listen = Bun.listen;
  (Bun as { listen: unknown }).listen = (options: { socket: Handlers }) => {
    handlers = options.socket;
    return { port: 0, stop() {} };
  };
  try {
    serveOverH1(app, { port: 0, hostname: "127.0.0.1", maxRequestBodySize: 1 << 20, onError, sweepMs: 60_000 });
  } finally {
    (Bun as { listen: unknown }).listen = listen;
  }
  return handlers;
}

/** A socket of our own: it records what it is sent, or throws on every write. */
function socket(fails: boolean) {
  return {
    data: undefined as unknown,
    remoteAddress: "127.0.0.1",
    remoteFamily: "IPv4",
    remotePort: 1,
    sent: "",
    write(data: Uint8Array | string, start = 0, length?: number) {
      if (fails) throw new Error("the socket broke");
      const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
      const end = length === undefined ? bytes.byteLength : start + length;
      this.sent += Buffer.from(bytes.subarray(start, end)).toString("latin1");
      return end - start;
    },
    end() {},
    pause() {},
    resume() {},
    setNoDelay() {},
  };
}

describe("a turn's hot answers, written together", () => {
  it("writes the others when one socket's write throws, and reports that one", async () => {
    const hot = Object.assign(() => new Response("general"), {
      hot: () => JSON.stringify({ answered: true }),
    });
    const app = {
      fetch: () => new Response("not here", { status: 404 }),
      config: { serve: { routes: { "/hot": { POST: hot } } } },
      server: undefined,
    } as unknown as ServedApp;
    const errors: Error[] = [];
    const handlers = handlersOf(app, (error) => errors.push(error));
    const sockets = [socket(false), socket(true), socket(false)];
    for (const s of sockets) handlers.open?.(s);
    const request = Buffer.from("POST /hot HTTP/1.1\r\nHost: 127.0.0.1\r\ncontent-length: 2\r\n\r\n{}");
    // All three in one turn: their answers are written by one microtask after it.
    for (const s of sockets) handlers.data?.(s, request);
    expect(sockets.map((s) => s.sent)).toEqual(["", "", ""]);
    await Bun.sleep(0);
    for (const s of [sockets[0], sockets[2]]) {
      expect(s?.sent).toStartWith("HTTP/1.1 200 ");
      expect(s?.sent).toEndWith('{"answered":true}');
    }
    expect(sockets[1]?.sent).toBe("");
    expect(errors.map((e) => e.message)).toEqual(["the socket broke"]);
  });
});
