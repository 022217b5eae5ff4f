import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { emptyServerDatabase, storeKinds } from "../helpers/databases";
import { OPERATOR_TOKEN } from "../helpers/harness";
import { runBun, type ServerProcess, startServerProcess } from "../helpers/process";
import { scratchDir } from "../helpers/scratch-dirs";
import { within } from "../helpers/second-process";

const SECRETS = {
  SVC_OPERATOR_TOKEN: OPERATOR_TOKEN,
  SVC_SECRET: "cluster-test-secret-cluster-test-secret",
};

describe("SVC_WORKERS on the embedded store", () => {
  it("refuses to start, naming the variable and DATABASE_URL", async () => {
    const result = await runBun(["src/main.ts"], {
      PATH: process.env.PATH ?? "",
      PORT: "0",
      SVC_WORKERS: "2",
      SVC_DATA_DIR: scratchDir("svc-cluster-"),
      ...SECRETS,
    });
    expect(result.code).toBe(1);
    expect(result.stderr).toContain("SVC_WORKERS above 1 needs DATABASE_URL");
  });
});

/** The worker index, pid and port of each `listening` line so far. */
function listening(output: string): { worker: number; pid: number; port: number }[] {
  const found: { worker: number; pid: number; port: number }[] = [];
  for (const line of output.split("\n")) {
    if (!line.includes('"message":"listening"')) continue;
    const parsed = JSON.parse(line) as { worker: number; pid: number; port: number };
    found.push({ worker: parsed.worker, pid: parsed.pid, port: parsed.port });
  }
  return found;
}

/** Each transport, and h1 served by the decide thread (src/decide-thread), whose listener shares the port too. */
const transports = storeKinds.includes("server") ? (["h1", "node", "bun", "h1 SVC_DECIDE_THREAD=on"] as const) : [];

describe.each(transports)("SVC_WORKERS=2 on the server store (SVC_HTTP_SERVER=%s)", (transport) => {
  let database: { url: string; drop(): Promise<void> };
  let server: ServerProcess;
  let key = "";

  beforeAll(async () => {
    database = await emptyServerDatabase();
    server = await startServerProcess(
      {
        ...SECRETS,
        DATABASE_URL: database.url,
        SVC_WORKERS: "2",
        SVC_HTTP_SERVER: transport.split(" ")[0] as string,
        SVC_DECIDE_THREAD: transport.includes("SVC_DECIDE_THREAD=on") ? "on" : "off",
        SVC_SEED_DEMO: "1",
        SVC_ACCESS_LOG: "1",
        SVC_DATA_DIR: scratchDir("svc-cluster-"),
      },
      { startTimeoutMs: 60_000 },
    );
    await within(
      60_000,
      async () => listening(server.output()).length >= 2 && /Bearer (svc_\S+)'/.test(server.output()),
    );
    key = (server.output().match(/Bearer (svc_[^']+)'/) as RegExpMatchArray)[1] as string;
  }, 90_000);

  afterAll(async () => {
    await server?.stop("SIGKILL");
    await database?.drop();
  }, 60_000);

  const decide = (): Promise<Response> =>
    fetch(`${server.url}/v1/decide`, {
      method: "POST",
      // A new connection per request, so the kernel picks a worker for each.
      keepalive: false,
      headers: {
        connection: "close",
        "x-svc-site-id": "demo",
        authorization: `Bearer ${key}`,
        "content-type": "application/json",
      },
      body: JSON.stringify({ features: ["paywall"], deviceId: "device-cluster" }),
    });

  it("starts two workers on one port, each seeding nothing but the first", async () => {
    const workers = listening(server.output());
    expect(new Set(workers.map((w) => w.worker))).toEqual(new Set([0, 1]));
    expect(workers.map((w) => w.port)).toEqual([server.port, server.port]);
    expect(server.output().match(/Demo data created/g)?.length).toBe(1);
  });

  it("spreads new connections over both workers", async () => {
    const served = new Set<number>();
    await within(30_000, async () => {
      const response = await decide();
      await response.text();
      // A worker that started before the first one seeded the demo learns of its site and key
      // from the change feed: until then it answers 404 (unknown site) or 401 (unknown key), so
      // this waits for both to decide.
      if (response.status === 404 || response.status === 401) return false;
      expect(response.status).toBe(200);
      for (const line of server.output().split("\n")) {
        if (line.includes('"route":"/v1/decide"')) served.add((JSON.parse(line) as { worker: number }).worker);
      }
      return served.size === 2;
    });
    expect([...served].sort()).toEqual([0, 1]);
  }, 40_000);

  it("restarts a worker that dies, and keeps answering meanwhile", async () => {
    const victim = listening(server.output()).find((w) => w.worker === 1) as { pid: number };
    process.kill(victim.pid, "SIGKILL");
    // What the dead worker had accepted or had queued is lost with it (clients retry); once it
    // is gone its socket leaves the port's group, and the other worker takes every connection.
    await within(10_000, async () => {
      try {
        process.kill(victim.pid, 0);
        return false;
      } catch {
        return true;
      }
    });
    for (let i = 0; i < 5; i++) expect((await decide()).status).toBe(200);
    await within(30_000, async () => listening(server.output()).filter((w) => w.worker === 1).length >= 2);
    expect(server.output()).toContain('"message":"worker exited; restarting it"');
    const fresh = listening(server.output()).filter((w) => w.worker === 1);
    expect(fresh.at(-1)?.pid).not.toBe(victim.pid);
  }, 40_000);

  it("stops every worker gracefully on SIGTERM and exits 0", async () => {
    const pids = listening(server.output()).map((w) => w.pid);
    const code = await server.stop("SIGTERM");
    if (code !== 0) console.log("CLUSTER-OUT", server.output().slice(-3000));
    expect(code).toBe(0);
    expect(server.output()).toContain('"message":"workers stopped","clean":true');
    for (const pid of pids) expect(() => process.kill(pid, 0)).toThrow();
  }, 60_000);
});
