import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { buildRequest, RequestPool } from "../../bench/http-conn";
import { answeredLatencies, ensureOpenLoopSender, runOpenLoop } from "../../bench/open-loop";

// The bench's open-loop sender (bench/open-loop.c, built on first use) against real servers on
// 127.0.0.1: what it measures must hold whatever the server does.

const servers: { stop: (force?: boolean) => unknown }[] = [];
afterEach(() => {
  for (const s of servers.splice(0)) s.stop(true);
});

function serve(fetch: (request: Request) => Response | Promise<Response>) {
  const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch });
  servers.push(server);
  return server.port as number;
}

function pool(count: number): RequestPool {
  return RequestPool.from(
    Array.from({ length: count }, (_, i) => buildRequest("/r", { "x-n": String(i) }, JSON.stringify({ n: i }))),
    count,
  );
}

/** `n` sends `stepMs` apart, starting `leadMs` from now, each naming request i % requests. */
function schedule(n: number, stepMs: number, requests: number, leadMs = 600) {
  const start = Date.now() + leadMs;
  return {
    sendAtEpoch: Float64Array.from({ length: n }, (_, i) => start + i * stepMs),
    requestOf: Uint32Array.from({ length: n }, (_, i) => i % requests),
  };
}

describe("open-loop sender", () => {
  test("sends every request once, in order, and reads status and Retry-After of each", async () => {
    const seen: number[] = [];
    const port = serve(async (request) => {
      const n = (JSON.parse(await request.text()) as { n: number }).n;
      seen.push(n);
      if (n % 3 === 0) return new Response("no", { status: 429, headers: { "retry-after": "4" } });
      return Response.json({ n });
    });
    const r = await runOpenLoop({ port, requests: pool(6), ...schedule(30, 2, 6), connections: 4 });
    expect(r.sends).toBe(30);
    expect(r.completed).toBe(30);
    expect(r.connectionErrors).toEqual([]);
    // Each request once. The server sees them across 4 connections, so a busy machine may
    // deliver two sends 2 ms apart out of order; which answer belongs to which send is checked
    // below, per send.
    const sorted = (a: number[]) => [...a].sort((x, y) => x - y);
    expect(sorted(seen)).toEqual(sorted(Array.from({ length: 30 }, (_, i) => i % 6)));
    for (let i = 0; i < 30; i++) {
      expect(r.status[i]).toBe(i % 3 === 0 ? 429 : 200);
      expect(r.retryAfter[i]).toBe(i % 3 === 0 ? 1 : 0);
      expect(r.recvEpoch[i] as number).toBeGreaterThanOrEqual(r.sentEpoch[i] as number);
    }
  });

  test("reads chunked responses whole", async () => {
    const port = serve(() => {
      const body = new ReadableStream({
        start(controller) {
          controller.enqueue(new TextEncoder().encode("first part,"));
          controller.enqueue(new TextEncoder().encode("second part"));
          controller.close();
        },
      });
      return new Response(body, { status: 201 });
    });
    const r = await runOpenLoop({ port, requests: pool(1), ...schedule(10, 3, 1), connections: 1 });
    expect(r.completed).toBe(10);
    expect([...r.status]).toEqual(new Array(10).fill(201));
  });

  test("a stalled server's queue counts in the latency: times run from the intended send (no coordinated omission)", async () => {
    // One connection, and the pool may not grow: while the first answer is held for 300 ms, the
    // nine sends due meanwhile wait for the connection, and each is charged its wait.
    let first = true;
    const port = serve(async () => {
      if (first) {
        first = false;
        await Bun.sleep(300);
      }
      return Response.json({});
    });
    const r = await runOpenLoop({
      port,
      requests: pool(1),
      ...schedule(10, 10, 1),
      connections: 1,
      maxConnections: 1,
    });
    expect(r.completed).toBe(10);
    expect(r.latencyMs[0] as number).toBeGreaterThanOrEqual(290);
    // The last send was due 90 ms after the first, so it waited at least 200 ms for the connection.
    expect(r.latencyMs[9] as number).toBeGreaterThanOrEqual(200);
    expect(r.writeDelayMs[9] as number).toBeGreaterThanOrEqual(200);
    // The sender itself was on time: the wait was the server's.
    expect(r.sendLagMs[9] as number).toBeLessThan(50);
    expect(answeredLatencies(r).length).toBe(10);
  });

  test("the pool grows while every connection is busy", async () => {
    const port = serve(async () => {
      await Bun.sleep(50);
      return Response.json({});
    });
    const r = await runOpenLoop({ port, requests: pool(1), ...schedule(20, 5, 1), connections: 1, maxConnections: 8 });
    expect(r.completed).toBe(20);
    expect(r.connectionsUsed).toBeGreaterThan(1);
    expect(r.connectionsUsed).toBeLessThanOrEqual(8);
  });

  test("a connection idle longer than the plan allows is closed, not written on", async () => {
    // The client port each request came from: one per connection.
    let server: ReturnType<typeof Bun.serve> | undefined;
    const ports: number[] = [];
    server = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(request) {
        ports.push(server?.requestIP(request)?.port ?? -1);
        return Response.json({});
      },
    });
    servers.push(server);
    // Two sends 50 ms apart on the one connection (opened 400 ms before the first), then one
    // after 1,050 ms of quiet.
    const start = Date.now() + 600;
    const r = await runOpenLoop({
      port: server.port as number,
      requests: pool(1),
      sendAtEpoch: Float64Array.from([start, start + 50, start + 1_100]),
      requestOf: new Uint32Array(3),
      connections: 1,
      idleReuseMs: 600,
    });
    expect(r.completed).toBe(3);
    expect(r.connectionErrors).toEqual([]);
    expect(r.connectionsRetired).toBe(1);
    expect(r.connectionsUsed).toBe(2);
    expect(ports[0]).toBeGreaterThan(0);
    expect(ports[1]).toBe(ports[0] as number);
    expect(ports[2]).not.toBe(ports[0] as number);
  });

  test("connections busy or idle for less than the limit are reused, none retired", async () => {
    const port = serve(() => Response.json({}));
    const r = await runOpenLoop({ port, requests: pool(1), ...schedule(10, 40, 1), connections: 1, idleReuseMs: 600 });
    expect(r.completed).toBe(10);
    expect(r.connectionsRetired).toBe(0);
    expect(r.connectionsUsed).toBe(1);
  });

  test("a connection the server drops is reported, and its request has no response", async () => {
    const listener = Bun.listen({
      hostname: "127.0.0.1",
      port: 0,
      socket: {
        data: (socket) => {
          socket.end();
        },
      },
    });
    servers.push(listener);
    const r = await runOpenLoop({
      port: listener.port,
      requests: pool(1),
      ...schedule(2, 5, 1),
      connections: 2,
      maxConnections: 2,
      drainTimeoutMs: 500,
    });
    expect(r.completed).toBe(0);
    expect([...r.status]).toEqual([0, 0]);
    expect(Number.isNaN(r.latencyMs[0] as number)).toBe(true);
    expect(r.connectionErrors.length).toBeGreaterThanOrEqual(2);
    expect(r.connectionErrors[0]).toContain("closed by the server");
  });

  test("a send whose write fails as a new connection takes it from the backlog stays first in line, and is sent", async () => {
    // One connection up front and four sends at once: the first goes out, the other three wait
    // in the backlog while the pool grows. The first connection to come up takes the oldest
    // waiting send (request 1) and its write fails (the plan's test hook, as on a reset
    // connection): that send must stay first in line for the next connection, not be dropped.
    const seen: number[] = [];
    const port = serve(async (request) => {
      seen.push((JSON.parse(await request.text()) as { n: number }).n);
      await Bun.sleep(30);
      return Response.json({});
    });
    const r = await runOpenLoop({
      port,
      requests: pool(4),
      ...schedule(4, 0, 4),
      connections: 1,
      maxConnections: 4,
      failWriteAt: 2,
    });
    expect(r.connectionErrors).toEqual(["injected write failure (the plan's fail_write_at)"]);
    expect(r.sends).toBe(4);
    expect(r.completed).toBe(4);
    expect([...r.status]).toEqual([200, 200, 200, 200]);
    expect(seen.sort()).toEqual([0, 1, 2, 3]);
    // Requests 2 and 3 were still waiting when request 1 went out: the backlog kept its order.
    expect(r.sentEpoch[1] as number).toBeLessThanOrEqual(r.sentEpoch[2] as number);
    expect(r.sentEpoch[2] as number).toBeLessThanOrEqual(r.sentEpoch[3] as number);
  });

  test("a plan whose times and requests differ in length is refused before anything is sent", async () => {
    await expect(
      runOpenLoop({
        port: 1,
        requests: pool(1),
        sendAtEpoch: new Float64Array(2),
        requestOf: new Uint32Array(1),
        connections: 1,
      }),
    ).rejects.toThrow("differ in length");
  });

  test("the sender itself refuses a malformed plan file, sends nothing and writes no results", async () => {
    const binary = await ensureOpenLoopSender();
    const dir = mkdtempSync(join(tmpdir(), "open-loop-test-"));
    try {
      // One send of request 0; header: magic, port, connections, max, drain ms, requests, sends, the
      // write to fail (0), idle reuse ms, 0.
      const plan = (magic: number, offsets: number[], requestOf: number) => {
        const head = new Uint32Array([magic, 1, 1, 1, 100, offsets.length - 1, 1, 0, 5_000, 0]);
        const parts = [head, new Float64Array([Date.now()]), new Uint32Array([requestOf]), new Uint32Array(offsets)];
        return Buffer.concat([...parts.map((p) => Buffer.from(p.buffer)), Buffer.from("GET / HTTP/1.1\r\n\r\n")]);
      };
      const cases: [string, Buffer, string][] = [
        ["wrong magic", plan(0x12345678, [0, 18], 0), "malformed plan"],
        ["the layout before idle reuse (OLP1)", plan(0x31504c4f, [0, 18], 0), "malformed plan"],
        ["cut short", plan(0x32504c4f, [0, 18], 0).subarray(0, 40), "malformed plan"],
        ["offsets going backwards", plan(0x32504c4f, [0, 18, 4], 0), "offsets go backwards"],
        ["a send naming a request that is not there", plan(0x32504c4f, [0, 18], 5), "names request 5 of 1"],
      ];
      for (const [name, bytes, message] of cases) {
        const planPath = join(dir, "plan");
        const resultsPath = join(dir, `results-${name.replaceAll(" ", "-")}`);
        writeFileSync(planPath, bytes);
        const run = Bun.spawnSync([binary, planPath, resultsPath], { stderr: "pipe" });
        expect({ name, code: run.exitCode }).toEqual({ name, code: 2 });
        expect(run.stderr.toString()).toContain(message);
        expect(await Bun.file(resultsPath).exists()).toBe(false);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
