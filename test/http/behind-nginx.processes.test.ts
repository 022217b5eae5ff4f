import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { BROWSER_LIMIT, DECIDE_WINDOW_MS } from "../../src/deps";
import { basicDocument, subscribeJourney } from "../fixtures/documents";
import { emptyServerDatabase } from "../helpers/databases";
import { OPERATOR_TOKEN } from "../helpers/harness";
import { consoleVisit, NGINX_SOURCE, type Nginx, startNginx } from "../helpers/nginx";
import { type ServerProcess, startServerProcess } from "../helpers/process";
import { scratchDir } from "../helpers/scratch-dirs";
import { startSmtpServer } from "../helpers/smtp";
import { until } from "../helpers/wait";
import { HOST, ORIGIN, READER_A, READER_B, READER_C, readersThrough } from "./behind-nginx.fixture";

/**
 * The publisher's way (issue 35, item 5), with real processes: Debian's nginx terminates TLS for
 * news.example and proxies `/svc/` and `/console` to two separate server processes (`bun
 * src/main.ts`) on one Postgres server, taken in turn, configured as docs/deploying.md says; the
 * service trusts exactly nginx's address. Readers connect from their own loopback addresses.
 * Mail goes to a real SMTP server. The clocks are real: a window test starts at a window's start.
 */
describe.if(Boolean(process.env.DATABASE_URL))("behind nginx, two server processes on one Postgres", () => {
  let database: { url: string; drop(): Promise<void> };
  let smtp: Awaited<ReturnType<typeof startSmtpServer>>;
  let nginx: Nginx;
  const servers: ServerProcess[] = [];

  beforeAll(async () => {
    database = await emptyServerDatabase();
    smtp = await startSmtpServer();
    const env = () => ({
      DATABASE_URL: database.url,
      SVC_DATA_DIR: scratchDir("svc-nginx-proc-"),
      SVC_OPERATOR_TOKEN: OPERATOR_TOKEN,
      SVC_SECRET: "nginx-processes-secret-nginx-processes-0",
      SVC_SEED_DEMO: "0",
      SVC_TRUSTED_PROXIES: NGINX_SOURCE,
      SVC_SMTP_URL: smtp.url,
    });
    servers.push(await startServerProcess(env()));
    const admin = async (path: string, body: unknown) => {
      const res = await fetch(`${(servers[0] as ServerProcess).url}/admin${path}`, {
        method: "POST",
        headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      expect(res.status).toBeLessThan(300);
    };
    await admin("/tenants", { id: "default", default: true, hosts: [HOST] });
    await admin("/tenants/default/sites", { id: "news" });
    const doc = basicDocument();
    (doc.features as Record<string, unknown>).subscribe = subscribeJourney();
    await admin("/tenants/default/sites/news/deploy", { document: doc });
    await admin("/tenants/default/console-users", { email: "ada@example.com", role: "admin" });
    servers.push(await startServerProcess(env()));
    nginx = await startNginx(
      servers.map((s) => s.port),
      HOST,
    );
  }, 90_000);
  afterAll(async () => {
    await nginx?.stop();
    for (const server of servers) await server.stop("SIGKILL");
    await smtp?.stop();
    await database?.drop();
  }, 60_000);

  const readers = readersThrough(() => nginx);
  const { send, decide } = readers;
  /** Waits for the next window's start (real clocks), so a burst stays in one window. */
  const nextWindow = async () => {
    const into = Date.now() % DECIDE_WINDOW_MS;
    await Bun.sleep(DECIDE_WINDOW_MS - into + 50);
  };
  /** `n` decide calls of one reader, `concurrency` at a time: how many were admitted and refused. */
  const burst = async (from: string, n: number, headers: (i: number) => Record<string, string> = () => ({})) => {
    let admitted = 0;
    let refused = 0;
    let next = 0;
    const worker = async () => {
      while (next < n) {
        const i = next++;
        const answer = await decide(from, headers(i));
        if (answer.status === 200) admitted++;
        else {
          expect(answer.status).toBe(429);
          expect(Number(answer.headers["retry-after"])).toBeGreaterThan(0);
          refused++;
        }
      }
    };
    await Promise.all(Array.from({ length: 8 }, worker));
    return { admitted, refused };
  };
  const mailTo = async (address: string) => {
    const last = () => smtp.received.filter((m) => m.to.includes(address)).at(-1);
    if (await until(() => last() !== undefined, 5_000, 20)) return (last() as (typeof smtp.received)[number]).text;
    throw new Error(`no mail to ${address}`);
  };

  it("gives each reader exactly their own 200 per 10 s across both processes, whatever X-Forwarded-For they send", async () => {
    await nextWindow();
    const started = Date.now();
    let n = 0;
    const [a, b, c] = await Promise.all([
      burst(READER_A, 260),
      burst(READER_B, 230),
      // A forged X-Forwarded-For from the reader is not trusted: it stays READER_C's window.
      burst(READER_C, 240, () => ({ "x-forwarded-for": `198.51.100.${n++ % 250}` })),
    ]);
    // Only meaningful within one window: the bursts must have ended in the window they began in.
    expect(Math.floor(Date.now() / DECIDE_WINDOW_MS)).toBe(Math.floor(started / DECIDE_WINDOW_MS));
    expect(a).toEqual({ admitted: BROWSER_LIMIT, refused: 60 });
    expect(b).toEqual({ admitted: BROWSER_LIMIT, refused: 30 });
    expect(c).toEqual({ admitted: BROWSER_LIMIT, refused: 40 });
    // nginx took both processes in turn: each answered some of them.
    for (const server of servers) {
      const metrics = await (
        await fetch(`${server.url}/metrics`, { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } })
      ).text();
      const answered = metrics
        .split("\n")
        .filter((l) => l.includes('route="/svc/v1/decide"') && l.includes('status="200"') && !l.startsWith("#"))
        .map((l) => Number(l.split(" ").at(-1)))
        .reduce((x, y) => x + y, 0);
      expect(answered).toBeGreaterThan(100);
    }
  }, 60_000);

  it("mails a reader's sign-in link on the publisher's https origin, and its cookies work there on either process", async () => {
    const jar = await readers.signInByMagicLink(mailTo);
    // nginx takes the processes in turn: two reads land on both.
    for (let i = 0; i < 2; i++) await readers.expectSession(jar);
  }, 60_000);

  it("signs in to the console over HTTPS and accepts its forms, whichever process answers", async () => {
    const browse = consoleVisit((method, path, headers, body) => send(READER_B, method, path, headers, body), ORIGIN);
    expect((await browse("GET", "/console/sign-in")).status).toBe(200);
    expect((await browse("POST", "/console/sign-in", { email: "ada@example.com" })).status).toBe(200);
    const link = new URL(
      (await mailTo("ada@example.com")).match(/https?:\/\/\S+\/console\/auth\?token=[A-Za-z0-9_-]+/)?.[0] ?? "",
    );
    expect(link.origin).toBe(ORIGIN);
    expect((await browse("GET", `${link.pathname}${link.search}`)).status).toBe(200);
    const done = await browse("POST", "/console/auth", { token: link.searchParams.get("token") as string });
    expect(done.status).toBe(303);
    expect(done.headers.location).toBe("/console");
    for (let i = 0; i < 2; i++) expect((await browse("GET", "/console")).status).toBe(200);
    expect((await browse("POST", "/console/sites", { id: "via-nginx" })).status).toBe(201);
    const sites = (await (
      await fetch(`${(servers[1] as ServerProcess).url}/admin/tenants/default/sites`, {
        headers: { authorization: `Bearer ${OPERATOR_TOKEN}` },
      })
    ).json()) as { sites: { id: string }[] };
    expect(sites.sites.map((s) => s.id)).toContain("via-nginx");
  }, 60_000);

  it("redirects forward to the journey's destination", async () => {
    for (let i = 0; i < 2; i++) await readers.expectForward();
  });

  it("answers CORS for the site's own origin only", async () => {
    for (let i = 0; i < 2; i++) await readers.expectPreflightAllowed();
    await readers.expectPreflightRefused();
  });
});
