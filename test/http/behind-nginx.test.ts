import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { listen } from "../../src/app";
import { basicDocument, subscribeJourney } from "../fixtures/documents";
import { consoleMailbox } from "../helpers/console";
import { freshDatabase } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";
import { type Answer, NGINX_SOURCE, type Nginx, startNginx, throughNginx } from "../helpers/nginx";

/**
 * The publisher's way (issue 35, item 5): Debian's nginx terminates TLS for news.example and
 * proxies `/svc/` and `/console/` to the service, configured as docs/deploying.md says; the
 * service trusts exactly nginx's address. Readers connect from their own loopback addresses.
 * One server process: the browser windows are per process (docs/known-limits.md).
 */
const HOST = "news.example";
const ORIGIN = `https://${HOST}`;
const READER_A = "127.0.0.2";
const READER_B = "127.0.0.3";
const READER_C = "127.0.0.4";

describe("behind nginx terminating TLS", () => {
  let h: Harness;
  let nginx: Nginx;
  let server: { port: number; stop(force?: boolean): Promise<void> | void };
  let drop: () => Promise<void>;
  const box = consoleMailbox();

  beforeAll(async () => {
    const db = await freshDatabase("embedded");
    drop = db.drop;
    h = await startHarness(db, { mailTransport: box.transport, config: { SVC_TRUSTED_PROXIES: NGINX_SOURCE } });
    expect((await h.admin("POST", "/admin/tenants", { id: "default", default: true, hosts: [HOST] })).status).toBe(201);
    const doc = basicDocument();
    (doc.features as Record<string, unknown>).subscribe = subscribeJourney();
    await seedSite(h, "news", doc);
    expect(
      (await h.admin("POST", "/admin/tenants/default/console-users", { email: "ada@example.com", role: "admin" }))
        .status,
    ).toBe(200);
    const app = listen(h.app, h.deps, 0);
    server = app.server as unknown as typeof server;
    nginx = await startNginx(server.port, HOST);
  }, 60_000);
  afterAll(async () => {
    await nginx?.stop();
    await server?.stop(true);
    await h?.stop();
    await drop?.();
  }, 60_000);

  const send = (from: string, method: string, path: string, headers: Record<string, string> = {}, body?: string) =>
    throughNginx(nginx, HOST, from, method, path, headers, body);
  const decide = (from: string, headers: Record<string, string> = {}) =>
    send(
      from,
      "POST",
      "/svc/v1/decide",
      { origin: ORIGIN, "x-svc-site-id": "news", "content-type": "application/json", ...headers },
      JSON.stringify({ features: [] }),
    );
  const nextWindow = () => h.clock.set(Math.ceil(h.clock.now() / 10_000) * 10_000 + 10_000 + 1_000);
  const cookiesOf = (answer: Answer) => (answer.headers["set-cookie"] ?? []) as string[];
  /**
   * The mail to `address`, drained until it is sent: a drain the outbox's timer began before the
   * mail was written is shared by the next `drain()` call and does not send it.
   */
  const mailTo = async (address: string) => {
    for (let attempt = 0; attempt < 20; attempt++) {
      await h.deps.outbox.drain();
      const mail = box.mails.filter((m) => m.to === address).at(-1);
      if (mail !== undefined) return mail;
    }
    throw new Error(`no mail to ${address}`);
  };

  it("gives two readers from two addresses their own browser window (200 per 10 s)", async () => {
    nextWindow();
    for (let i = 0; i < 200; i++) expect((await decide(READER_A)).status).toBe(200);
    const refused = await decide(READER_A);
    expect(refused.status).toBe(429);
    expect(refused.headers["retry-after"]).toBe("9");
    for (let i = 0; i < 10; i++) expect((await decide(READER_B)).status).toBe(200);
  });

  it("keeps a reader in their window whatever X-Forwarded-For they send", async () => {
    nextWindow();
    for (let i = 0; i < 200; i++) {
      expect((await decide(READER_C, { "x-forwarded-for": `198.51.100.${i % 250}` })).status).toBe(200);
    }
    expect((await decide(READER_C, { "x-forwarded-for": "203.0.113.77" })).status).toBe(429);
    expect((await decide(READER_C, { "x-forwarded-for": NGINX_SOURCE })).status).toBe(429);
  });

  it("mails a reader's sign-in link on the publisher's https origin, and its cookies work there", async () => {
    const json = { origin: ORIGIN, "x-svc-site-id": "news", "content-type": "application/json" };
    const asked = await send(
      READER_A,
      "POST",
      "/svc/v1/id/sign-in/magic-link",
      json,
      JSON.stringify({ email: "reader@example.com" }),
    );
    expect(asked.status).toBe(200);
    const mailed = (await mailTo("reader@example.com")).text;
    const link = mailed.match(/https?:\/\/\S+\/id\/magic-link\?\S+/)?.[0] ?? "";
    expect(link).toStartWith(`${ORIGIN}/svc/v1/id/magic-link?`);
    const token = new URL(link).searchParams.get("token") as string;
    const consumed = await send(READER_A, "POST", "/svc/v1/id/magic-link/consume", json, JSON.stringify({ token }));
    expect(consumed.status).toBe(200);
    const cookies = cookiesOf(consumed);
    for (const name of ["svc.session_token", "svc.access"]) {
      const cookie = cookies.find((c) => c.startsWith(`${name}=`)) ?? "";
      expect(cookie).toContain("Secure");
      expect(cookie.toLowerCase()).not.toContain("domain=");
    }
    const jar = cookies.map((c) => c.split(";")[0]).join("; ");
    const session = await send(READER_A, "GET", "/svc/v1/id/get-session", {
      origin: ORIGIN,
      "x-svc-site-id": "news",
      cookie: jar,
    });
    expect(session.status).toBe(200);
    expect(JSON.parse(session.text).user.email).toBe("reader@example.com");
    expect(session.headers["access-control-allow-origin"]).toBe(ORIGIN);
  });

  it("signs in to the console over HTTPS and accepts its forms", async () => {
    const jar = new Map<string, string>();
    let page = "";
    const browse = async (method: string, path: string, form?: Record<string, string>) => {
      const headers: Record<string, string> = {};
      if (jar.size > 0) headers.cookie = [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
      let body: string | undefined;
      if (form !== undefined) {
        const csrf = page.match(/name="_csrf" value="([^"]+)"/)?.[1] ?? "";
        body = new URLSearchParams({ _csrf: csrf, ...form }).toString();
        headers["content-type"] = "application/x-www-form-urlencoded";
        headers.origin = ORIGIN;
      }
      const answer = await send(READER_B, method, path, headers, body);
      for (const cookie of cookiesOf(answer)) {
        expect(cookie).toContain("Secure");
        const pair = cookie.split(";")[0] as string;
        const eq = pair.indexOf("=");
        if (/Max-Age=0/.test(cookie)) jar.delete(pair.slice(0, eq));
        else jar.set(pair.slice(0, eq), pair.slice(eq + 1));
      }
      if (String(answer.headers["content-type"] ?? "").startsWith("text/html")) page = answer.text;
      return answer;
    };
    expect((await browse("GET", "/console/sign-in")).status).toBe(200);
    expect((await browse("POST", "/console/sign-in", { email: "ada@example.com" })).status).toBe(200);
    await mailTo("ada@example.com");
    const link = new URL(box.lastLink("ada@example.com"));
    expect(link.origin).toBe(ORIGIN);
    expect((await browse("GET", `${link.pathname}${link.search}`)).status).toBe(200);
    const done = await browse("POST", "/console/auth", { token: link.searchParams.get("token") as string });
    expect(done.status).toBe(303);
    expect(done.headers.location).toBe("/console");
    expect((await browse("GET", "/console")).status).toBe(200);
    expect((await browse("POST", "/console/sites", { id: "via-nginx" })).status).toBe(201);
    const sites = (await (await h.admin("GET", "/admin/tenants/default/sites")).json()) as { sites: { id: string }[] };
    expect(sites.sites.map((s) => s.id)).toContain("via-nginx");
  });

  it("redirects forward to the journey's destination", async () => {
    const res = await send(READER_A, "GET", "/svc/v1/decide/forward?feature=subscribe&site=news&offer=annual");
    expect(res.status).toBe(302);
    expect(res.headers.location).toBe("https://shop.example/checkout?offer=annual");
  });

  it("answers CORS for the site's own origin only", async () => {
    const preflight = (origin: string) =>
      send(READER_A, "OPTIONS", "/svc/v1/decide", {
        origin,
        "access-control-request-method": "POST",
        "access-control-request-headers": "content-type, x-svc-site-id",
      });
    const allowed = await preflight(ORIGIN);
    expect(allowed.status).toBe(204);
    expect(allowed.headers["access-control-allow-origin"]).toBe(ORIGIN);
    expect(allowed.headers["access-control-allow-credentials"]).toBe("true");
    const refused = await preflight("https://evil.example");
    expect(refused.status).toBe(403);
    expect(refused.headers["access-control-allow-origin"]).toBeUndefined();
  });
});
