import { describe, expect, it } from "bun:test";
import { connect, type Socket } from "node:net";
import { servedSuite } from "../helpers/served-suite";

/**
 * SVC_HTTP_IDLE_TIMEOUT_MS reaches every transport: a keep-alive connection left idle after its
 * answer is closed by the server no sooner than that, and not long after (not after the 10-s
 * default). (Behind a
 * proxy that keeps idle connections longer than the service, a request written as the service
 * closes one is lost: docs/deploying.md.)
 */
describe.each(["h1", "node", "bun"])("the idle keep-alive timeout (SVC_HTTP_IDLE_TIMEOUT_MS, %s)", (httpServer) => {
  const served = servedSuite("embedded", {
    config: { SVC_HTTP_SERVER: httpServer, SVC_HTTP_IDLE_TIMEOUT_MS: "1000" },
  });

  it("closes a connection idle after its answer once the timeout has passed, and answers on it before", async () => {
    const socket: Socket = connect(served.server.port, "127.0.0.1");
    let received = "";
    let closedAt = 0;
    const closed = new Promise<void>((resolve) =>
      socket.on("close", () => {
        closedAt = performance.now();
        resolve();
      }),
    );
    socket.on("data", (chunk) => {
      received += chunk.toString("latin1");
    });
    socket.on("error", () => {});
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    const ask = async () => {
      const before = received.length;
      socket.write("GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
      const deadline = performance.now() + 5_000;
      while (!received.slice(before).includes('{"ok":true}') && performance.now() < deadline) await Bun.sleep(5);
      return received.slice(before);
    };
    expect(await ask()).toStartWith("HTTP/1.1 200");
    // Half the timeout later the connection still serves.
    await Bun.sleep(500);
    expect(await ask()).toStartWith("HTTP/1.1 200");
    const idleFrom = performance.now();
    await Promise.race([closed, Bun.sleep(12_000)]);
    expect(closedAt).toBeGreaterThan(0);
    const idleMs = closedAt - idleFrom;
    // The setting is a floor on every transport; h1 sweeps once a second, and Bun.serve's timer
    // ticks every 4 s (it is given 4 s more), hence the room above it.
    expect(idleMs).toBeGreaterThanOrEqual(1_000);
    expect(idleMs).toBeLessThan(httpServer === "bun" ? 9_500 : 3_500);
    socket.destroy();
  }, 30_000);
});
