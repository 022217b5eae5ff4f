import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { signArticles } from "../../bench/workload";

// The bench's minimal hand-written decide (bench/minimal-decide.ts) as its own process, as the
// pinned bench and bench/tail-variants.ts run it: plain, holding svc's modules unused
// (`MINIMAL_IMPORT=src/app.ts,src/deps.ts`), and beside a started svc (`MINIMAL_BESIDE_SVC`). All
// must answer the same decide.

const ROOT = join(import.meta.dir, "..", "..");
const work = mkdtempSync(join(tmpdir(), "minimal-decide-"));
const keysFile = join(work, "keys");
writeFileSync(keysFile, "key-a\nkey-b\n");
const children: Bun.Subprocess[] = [];
afterAll(() => {
  for (const child of children) child.kill();
  rmSync(work, { recursive: true, force: true });
});

/** Starts it and returns its listening line (`{"message":"listening",...}`). */
async function start(env: Record<string, string>): Promise<{
  port: number;
  holds: string[];
  executables: number;
  besideStarted?: boolean;
  mainExecutables?: number;
}> {
  const child = Bun.spawn([process.execPath, "bench/minimal-decide.ts"], {
    cwd: ROOT,
    env: { PATH: process.env.PATH ?? "", PORT: "0", MINIMAL_KEYS_FILE: keysFile, ...env },
    stdout: "pipe",
    stderr: "inherit",
  });
  children.push(child);
  const reader = child.stdout.getReader();
  let out = "";
  while (!out.includes("\n")) {
    const chunk = await reader.read();
    if (chunk.done) throw new Error(`minimal decide exited: ${out}`);
    out += new TextDecoder().decode(chunk.value);
  }
  reader.releaseLock();
  return JSON.parse(out.slice(0, out.indexOf("\n")));
}

const [article] = signArticles(1, Date.now());

async function decide(port: number, key: string) {
  const response = await fetch(`http://127.0.0.1:${port}/v1/decide`, {
    method: "POST",
    headers: { "x-api-key": key, "x-svc-site-id": "bench", "content-type": "application/json" },
    body: JSON.stringify({ features: ["paywall", "recirculation"], deviceId: "d-1", content: article?.content }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

describe("the minimal decide", () => {
  for (const [name, env, holds] of [
    ["plain", {}, []],
    ["holding svc's modules", { MINIMAL_IMPORT: "src/app.ts,src/deps.ts" }, ["src/app.ts", "src/deps.ts"]],
  ] as const) {
    test(`${name}: answers a keyed decide and refuses an unknown key`, async () => {
      const listening = await start(env);
      expect(listening.holds).toEqual([...holds]);
      const answer = await decide(listening.port, "key-a");
      expect(answer.status).toBe(200);
      expect(Object.keys(answer.body.decisions as object)).toEqual(["paywall", "recirculation"]);
      expect((await decide(listening.port, "not-a-key")).status).toBe(401);
    });
  }
  for (const [name, env, started] of [
    ["beside a started svc", { MINIMAL_BESIDE_SVC: "200" }, true],
    ["beside a stopped svc", { MINIMAL_BESIDE_SVC: "200", MINIMAL_BESIDE_STOPPED: "1" }, false],
  ] as const) {
    test(`${name}: svc answered its warm-up in the same process, and this one still answers`, async () => {
      // The port it is asked for, though the svc beside it sets PORT for its own listener.
      const free = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
      const asked = free.port;
      free.stop(true);
      const listening = await start({ ...env, PORT: String(asked) });
      expect(listening.port).toBe(asked);
      expect(listening.besideStarted).toBe(started);
      expect(listening.executables).toBeGreaterThan(6_000);
      const answer = await decide(listening.port, "key-b");
      expect(answer.status).toBe(200);
      expect(Object.keys(answer.body.decisions as object)).toEqual(["paywall", "recirculation"]);
    }, 30_000);
  }
  test("in a thread of its own beside a started svc: its heap holds only the decide's functions, and it answers", async () => {
    const free = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const asked = free.port;
    free.stop(true);
    const listening = await start({ MINIMAL_BESIDE_SVC: "200", MINIMAL_IN_WORKER: "1", PORT: String(asked) });
    expect(listening.port).toBe(asked);
    expect(listening.besideStarted).toBe(true);
    // svc's functions are in the main thread's heap; the worker's holds about the plain decide's.
    expect(listening.mainExecutables).toBeGreaterThan(6_000);
    expect(listening.executables).toBeLessThan(2_000);
    const answer = await decide(listening.port, "key-a");
    expect(answer.status).toBe(200);
    expect(Object.keys(answer.body.decisions as object)).toEqual(["paywall", "recirculation"]);
    expect((await decide(listening.port, "not-a-key")).status).toBe(401);
  }, 60_000);
  test("in a thread of its own on a port already taken, it stops instead of waiting", async () => {
    const taken = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    try {
      await expect(start({ MINIMAL_IN_WORKER: "1", PORT: String(taken.port) })).rejects.toThrow(
        "minimal decide exited",
      );
    } finally {
      taken.stop(true);
    }
  }, 30_000);
  test("a module that is not there, or a count that is not one, stops it before it serves", async () => {
    await expect(start({ MINIMAL_IMPORT: "src/no-such-module.ts" })).rejects.toThrow("minimal decide exited");
    await expect(start({ MINIMAL_BESIDE_SVC: "many" })).rejects.toThrow("minimal decide exited");
  });
  test("holding svc's modules means holding thousands more functions", async () => {
    const plain = (await start({})).executables;
    const holding = (await start({ MINIMAL_IMPORT: "src/app.ts,src/deps.ts" })).executables;
    expect(plain).toBeGreaterThan(0);
    expect(holding).toBeGreaterThan(plain + 3_000);
  });
});
