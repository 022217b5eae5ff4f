import { describe, expect, it } from "bun:test";
import { randomBytes } from "node:crypto";
import { createServer } from "node:net";
import { join } from "node:path";
import { DatabaseUnreachable, maskDatabaseUrl, openDatabaseRetrying, openFailureMessage } from "../../db/open-retrying";
import { basicDocument } from "../fixtures/documents";
import { emptyServerDatabase } from "../helpers/databases";
import { OPERATOR_TOKEN } from "../helpers/harness";
import { runBun, startServerProcess, tempDir } from "../helpers/process";
import { mailbox, signIn } from "../helpers/sign-in";
import { startTcpProxy } from "../helpers/tcp-proxy";
import { until } from "../helpers/wait";
import { outageWorld } from "./outage-world";

const serverUrl = process.env.DATABASE_URL;

/** A port on 127.0.0.1 that nothing listens on (connections are refused at once). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

const serverEnv = () => ({
  SVC_DATA_DIR: tempDir(),
  SVC_OPERATOR_TOKEN: OPERATOR_TOKEN,
  SVC_SECRET: "test-secret-test-secret-test-secret-0123",
  SVC_SEED_DEMO: "0",
  SVC_RUNTIME_THREADS: "normal",
});

describe("the database URL in messages", () => {
  it("masks the password and keeps the rest", () => {
    expect(maskDatabaseUrl("postgres://svc:s3cret@127.0.0.1:5432/news")).toBe("postgres://svc:***@127.0.0.1:5432/news");
    expect(maskDatabaseUrl("postgresql://svc:p%40ss@db.internal/news?sslmode=require")).toBe(
      "postgresql://svc:***@db.internal/news?sslmode=require",
    );
    expect(maskDatabaseUrl("postgres://svc:pa@ss@127.0.0.1/news")).toBe("postgres://svc:***@127.0.0.1/news");
    expect(maskDatabaseUrl("postgres://svc@127.0.0.1/news")).toBe("postgres://svc@127.0.0.1/news");
  });

  it("says why the store could not be opened in one line, from the innermost cause", () => {
    const cause = new Error('password authentication failed for user "svc"\nDETAIL: more');
    const wrapped = Object.assign(new Error("Failed query: create schema\nparams: "), { cause });
    const message = openFailureMessage("postgres://svc:s3cret@127.0.0.1/news", wrapped);
    expect(message).toBe(
      'Could not open Postgres at DATABASE_URL postgres://svc:***@127.0.0.1/news: password authentication failed for user "svc"',
    );
  });
});

describe("starting while Postgres cannot be reached", () => {
  it("retries for the configured time, warning once, then gives up with DatabaseUnreachable", async () => {
    const url = `postgres://svc:s3cret@127.0.0.1:${await closedPort()}/news`;
    const waiting: string[] = [];
    const started = performance.now();
    const error = await openDatabaseRetrying(url, { retryMs: 1200, onWaiting: (m) => waiting.push(m) }).catch(
      (e: unknown) => e,
    );
    expect(performance.now() - started).toBeGreaterThanOrEqual(1100);
    expect(error).toBeInstanceOf(DatabaseUnreachable);
    expect((error as Error).message).toMatch(
      /^Could not reach Postgres at DATABASE_URL postgres:\/\/svc:\*\*\*@127\.0\.0\.1:\d+\/news within 1200 ms \(SVC_START_RETRY_MS\): ECONNREFUSED$/,
    );
    expect(waiting).toEqual([url.replace("s3cret", "***")]);
  });

  it("exits non-zero with one line naming DATABASE_URL, no password and no stack trace", async () => {
    const url = `postgres://svc:s3cret-pw@127.0.0.1:${await closedPort()}/news`;
    const result = await runBun(["src/main.ts"], {
      PATH: process.env.PATH ?? "",
      PORT: "0",
      HOST: "127.0.0.1",
      DATABASE_URL: url,
      SVC_START_RETRY_MS: "1000",
      ...serverEnv(),
    });
    expect(result.code).not.toBe(0);
    const all = result.stdout + result.stderr;
    expect(all).not.toContain("s3cret-pw");
    expect(all).not.toMatch(/^\s+at /m);
    const errorLines = result.stderr.trim().split("\n");
    expect(errorLines).toHaveLength(1);
    expect(errorLines[0]).toContain(`DATABASE_URL ${url.replace("s3cret-pw", "***")}`);
    // One warning while it waited, naming the URL (masked).
    const waiting = result.stdout.split("\n").filter((l) => l.includes("waiting for Postgres"));
    expect(waiting).toHaveLength(1);
    expect(JSON.parse(waiting[0] as string)).toMatchObject({ level: "warn" });
    expect(waiting[0]).toContain(`DATABASE_URL ${url.replace("s3cret-pw", "***")}`);
  }, 30_000);

  it("stops on SIGTERM while it waits for Postgres, with exit 0 (not after SVC_START_RETRY_MS)", async () => {
    const url = `postgres://svc:pw@127.0.0.1:${await closedPort()}/news`;
    const child = Bun.spawn([process.execPath, "src/main.ts"], {
      cwd: join(import.meta.dir, "../.."),
      env: {
        PATH: process.env.PATH ?? "",
        PORT: "0",
        HOST: "127.0.0.1",
        DATABASE_URL: url,
        SVC_START_RETRY_MS: "60000",
        ...serverEnv(),
      },
      stdout: "pipe",
      stderr: "ignore",
    });
    // The signal comes once it says it waits (its handlers exist by then); it would wait 60 s
    // (SVC_START_RETRY_MS below), twice this test's time limit.
    let seen = "";
    const decoder = new TextDecoder();
    for await (const chunk of child.stdout) {
      seen += decoder.decode(chunk);
      if (seen.includes("waiting for Postgres")) break;
    }
    child.kill("SIGTERM");
    expect(await child.exited).toBe(0);
  }, 30_000);
});

describe.skipIf(!serverUrl)("a Postgres outage (server store, through a proxy that fails on demand)", () => {
  let session: Awaited<ReturnType<typeof signIn>>;
  const box = mailbox();
  const BOUND_MS = 5_000;
  const w = outageWorld({
    document: basicDocument(),
    config: { SVC_READ_DEADLINE_MS: "500" },
    mailTransport: box.transport,
    prepare: async ({ h }) => {
      session = await signIn(h, box, "outage@example.com");
    },
  });

  const decide = async (deviceId: string, bearer = w.key) => {
    const started = performance.now();
    const res = await w.h.request("POST", "/v1/decide", {
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${bearer}` },
      body: { features: ["teaser"], deviceId },
    });
    return { res, ms: performance.now() - started };
  };
  const getSession = async () => {
    const started = performance.now();
    const res = await w.h.request("GET", "/v1/id/get-session", {
      headers: { "x-svc-site-id": "news", cookie: session.cookie },
    });
    return { res, ms: performance.now() - started };
  };
  const expectUnavailable = async ({ res, ms }: { res: Response; ms: number }) => {
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBe("2");
    expect((await res.json()).error.code).toBe("service_unavailable");
    expect(ms).toBeLessThan(BOUND_MS);
  };
  const newKey = () => `svc_${randomBytes(24).toString("hex")}`;

  it("serves readers held in memory, and answers 503 with Retry-After to new ones, when connections are refused", async () => {
    expect((await decide("held")).res.status).toBe(200);
    await w.proxy.set("cut");
    for (let i = 0; i < 6; i++) {
      const held = await decide("held");
      expect(held.res.status).toBe(200);
      await expectUnavailable(await decide(`new-cut-${i}`));
    }
    await expectUnavailable(await decide("new-key", newKey()));
    await expectUnavailable(await getSession());
  }, 60_000);

  it("answers 503 with Retry-After within the deadline when Postgres hangs (accepts, never answers)", async () => {
    await w.proxy.set("black-hole");
    for (let i = 0; i < 3; i++) {
      expect((await decide("held")).res.status).toBe(200);
      await expectUnavailable(await decide(`new-hung-${i}`));
    }
    await expectUnavailable(await decide("new-key-hung", newKey()));
    await expectUnavailable(await getSession());
  }, 60_000);

  it("answers new readers again once Postgres is back", async () => {
    await w.proxy.set("forward");
    let status = 0;
    await until(
      async () => {
        status = (await decide(`back-${performance.now()}`)).res.status;
        return status === 200;
      },
      20_000,
      200,
    );
    expect(status).toBe(200);
    expect((await getSession()).res.status).toBe(200);
  }, 60_000);

  it("logs the outage without the database URL or its password", () => {
    const warnings = w.h.logger.lines.filter((l) => l.includes('"store unavailable"'));
    expect(warnings.length).toBeGreaterThan(0);
    for (const line of w.h.logger.lines) {
      expect(line).not.toContain("postgres://");
      const password = new URL(serverUrl as string).password;
      if (password) expect(line).not.toContain(password);
    }
  });
});

describe.skipIf(!serverUrl)("connections opened during an outage (server store)", () => {
  // postgres.js reads the array types on every new connection, in a promise nothing awaits: a
  // connection dropped during that read was an unhandled rejection, which ends a Bun process.
  it("do not read the types again once the store is open, so a drop there cannot crash the process", async () => {
    const scratch = await emptyServerDatabase();
    let open = false;
    let typeReadsAfterOpen = 0;
    const proxy = await startTcpProxy("127.0.0.1", Number(new URL(scratch.url).port || 5432), {
      dropWhen: (chunk) => {
        const readsTypes = open && chunk.includes("pg_catalog.pg_type");
        if (readsTypes) typeReadsAfterOpen++;
        return readsTypes;
      },
    });
    const { openDatabase } = await import("../../db/client");
    const database = await openDatabase({ url: proxy.url(scratch.url) });
    try {
      open = true;
      // Every connection is dropped, then ten at once are opened again.
      await proxy.set("cut");
      await proxy.set("forward");
      const { sql } = await import("drizzle-orm");
      const reads = Array.from({ length: 10 }, () =>
        database.db.execute(sql`select pg_sleep(0.05), ${["a", "b"]}::text[] as list`),
      );
      const settled = await Promise.race([Promise.allSettled(reads), Bun.sleep(10_000).then(() => null)]);
      expect(settled).not.toBeNull();
      expect(typeReadsAfterOpen).toBe(0);
    } finally {
      await proxy.set("forward");
      await database.close();
      await proxy.close();
      await scratch.drop();
    }
  }, 60_000);
});

describe.skipIf(!serverUrl)("starting while the server store is down, then up", () => {
  it("waits for Postgres during SVC_START_RETRY_MS and starts once it answers", async () => {
    const scratch = await emptyServerDatabase();
    const proxy = await startTcpProxy("127.0.0.1", Number(new URL(scratch.url).port || 5432));
    await proxy.set("cut");
    try {
      // Postgres comes back only once the server has said it is waiting (however slow its start).
      const { promise: waiting, resolve } = Promise.withResolvers<void>();
      const starting = startServerProcess(
        { DATABASE_URL: proxy.url(scratch.url), SVC_START_RETRY_MS: "30000", ...serverEnv() },
        { onOutput: (out) => out.includes("waiting for Postgres") && resolve() },
      );
      await Promise.race([waiting, starting]);
      await proxy.set("forward");
      const server = await starting;
      try {
        const res = await fetch(`${server.url}/health`);
        expect(res.status).toBe(200);
        expect(
          server
            .output()
            .split("\n")
            .filter((l) => l.includes("waiting for Postgres")),
        ).toHaveLength(1);
      } finally {
        expect(await server.stop()).toBe(0);
      }
    } finally {
      await proxy.close();
      await scratch.drop();
    }
  }, 60_000);
});
