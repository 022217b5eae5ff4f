import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { basicDocument } from "../fixtures/documents";
import { signedContent } from "../helpers/content";
import { emptyServerDatabase } from "../helpers/databases";
import { OPERATOR_TOKEN } from "../helpers/harness";
import { type ServerProcess, startServerProcess } from "../helpers/process";
import { scratchDir } from "../helpers/scratch-dirs";

/**
 * Two real server processes on one Postgres server, one reader, a seen meter of 3 articles a
 * month (`basicDocument`): however the reader's requests are spread over both at once, exactly 3
 * distinct articles get through.
 */
describe.if(Boolean(process.env.DATABASE_URL))("a seen meter across two server processes (server store)", () => {
  let database: { url: string; drop(): Promise<void> };
  const servers: ServerProcess[] = [];
  let key = "";

  beforeAll(async () => {
    database = await emptyServerDatabase();
    const env = {
      SVC_OPERATOR_TOKEN: OPERATOR_TOKEN,
      SVC_SECRET: "exact-seen-secret-exact-seen-secret-0",
      DATABASE_URL: database.url,
      SVC_SEED_DEMO: "0",
    };
    servers.push(await startServerProcess({ ...env, SVC_DATA_DIR: scratchDir("svc-seen-") }));
    const admin = async (path: string, body: unknown) => {
      const res = await fetch(`${(servers[0] as ServerProcess).url}/admin${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(res.status).toBeLessThan(300);
      return res.json();
    };
    await admin("/tenants", { id: "default", default: true });
    await admin("/tenants/default/sites", { id: "news" });
    await admin("/tenants/default/sites/news/deploy", { document: basicDocument() });
    key = (await admin("/tenants/default/sites/news/keys", { name: "seen test" })).key;
    servers.push(await startServerProcess({ ...env, SVC_DATA_DIR: scratchDir("svc-seen-") }));
  }, 90_000);

  afterAll(async () => {
    for (const server of servers) await server.stop("SIGKILL");
    await database?.drop();
  }, 60_000);

  const decide = async (server: ServerProcess, reader: string, article: string) => {
    const res = await fetch(`${server.url}/v1/decide`, {
      method: "POST",
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${key}`, "content-type": "application/json" },
      body: JSON.stringify({
        features: ["paywall"],
        deviceId: reader,
        content: signedContent({ id: article, section: "news" }),
      }),
    });
    expect(res.status).toBe(200);
    return (await res.json()).decisions.paywall.outcome as string;
  };

  it("lets exactly the allowance through, with twelve new articles spread over both at once", async () => {
    // Both processes hold the reader first (an article each), then the rest arrives at once.
    const a = servers[0] as ServerProcess;
    const b = servers[1] as ServerProcess;
    const first = [await decide(a, "reader", "first-a"), await decide(b, "reader", "first-b")];
    const rest = await Promise.all(
      Array.from({ length: 12 }, (_, i) => decide(i % 2 === 0 ? a : b, "reader", `article-${i}`)),
    );
    expect([...first, ...rest].filter((outcome) => outcome === "metered").length).toBe(3);
    // Articles already let through stay readable on either process; a new one does not.
    expect(await decide(b, "reader", "first-a")).toBe("metered");
    expect(await decide(a, "reader", "first-b")).toBe("metered");
    expect(await decide(a, "reader", "one-more")).not.toBe("metered");
  }, 60_000);
});
