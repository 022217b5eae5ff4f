import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { basicDocument } from "../fixtures/documents";
import { consoleMailbox } from "../helpers/console";
import { freshDatabase } from "../helpers/databases";
import { type Harness, seedSite, serveHarness, startHarness } from "../helpers/harness";

/**
 * The service behind a publisher's proxy, over a real socket from 127.0.0.1: what the proxy
 * forwards (X-Forwarded-For, -Proto) counts when 127.0.0.1 is a trusted proxy
 * (SVC_TRUSTED_PROXIES=loopback), and changes nothing when it is not. The requests carry what
 * nginx would send with `proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
 * X-Forwarded-Proto $scheme; Host $host` (docs/deploying.md, "Behind a proxy").
 */
const ORIGIN = "https://news.example";
const HOST = "news.example";
const BROWSER_LIMIT = 200;

interface World {
  h: Harness;
  base: string;
  box: ReturnType<typeof consoleMailbox>;
  stop(): Promise<void>;
}

async function startWorld(config: Record<string, string>): Promise<World> {
  const db = await freshDatabase("embedded");
  const box = consoleMailbox();
  const h = await startHarness(db, { mailTransport: box.transport, config });
  // The publisher's host name belongs to the tenant: links and the console are built on it.
  expect((await h.admin("POST", "/admin/tenants", { id: "default", default: true, hosts: [HOST] })).status).toBe(201);
  await seedSite(h, "news", basicDocument());
  expect(
    (await h.admin("POST", "/admin/tenants/default/console-users", { email: "ada@example.com", role: "admin" })).status,
  ).toBe(200);
  const server = serveHarness(h);
  return {
    h,
    box,
    base: server.base,
    async stop() {
      await server.stop();
      await h.stop();
      await db.drop();
    },
  };
}

/** A browser decide call as the proxy forwards it; `forwardedFor` undefined: no header at all. */
function decide(w: World, forwardedFor: string | undefined, requestId?: string) {
  const headers: Record<string, string> = {
    host: HOST,
    origin: ORIGIN,
    "x-svc-site-id": "news",
    "content-type": "application/json",
  };
  if (forwardedFor !== undefined) headers["x-forwarded-for"] = forwardedFor;
  if (requestId !== undefined) headers["x-request-id"] = requestId;
  return fetch(`${w.base}/svc/v1/decide`, { method: "POST", headers, body: JSON.stringify({ features: [] }) });
}

/** The access log's line for a request id (SVC_ACCESS_LOG=1). */
function accessLogged(w: World, requestId: string): { client?: string } | undefined {
  return w.h.logger.lines
    .map((line) => JSON.parse(line) as { message: string; requestId?: string; client?: string })
    .find((line) => line.message === "request" && line.requestId === requestId);
}

/** Spends a reader's browser window: 200 answered, the next one 429. */
async function spendWindow(w: World, forwardedFor: () => string | undefined): Promise<void> {
  for (let i = 0; i < BROWSER_LIMIT; i++) expect((await decide(w, forwardedFor())).status).toBe(200);
}

/**
 * Drains the outbox until a mail to `address` is sent: a drain the outbox's timer began before
 * the mail was written is shared by the next `drain()` call and does not send it.
 */
async function mailed(w: World, address: string): Promise<void> {
  for (let attempt = 0; attempt < 20; attempt++) {
    await w.h.deps.jobs.runDue();
    await w.h.deps.outbox.drain();
    if (w.box.mails.some((m) => m.to === address)) return;
  }
  throw new Error(`no mail to ${address}`);
}

/** A window of its own for each test (the harness's clock). */
const nextWindow = (h: Harness) => h.clock.set(Math.ceil(h.clock.now() / 10_000) * 10_000 + 10_000 + 1_000);

/** A browser on the console over the socket: keeps cookies, sends what the proxy adds to each request. */
function consoleBrowser(w: World, forwarded: Record<string, string>) {
  const jar = new Map<string, string>();
  let lastHtml = "";
  const send = async (method: string, path: string, form?: Record<string, string>) => {
    const headers: Record<string, string> = { host: HOST, ...forwarded };
    if (jar.size > 0) headers.cookie = [...jar].map(([k, v]) => `${k}=${v}`).join("; ");
    let body: string | undefined;
    if (form !== undefined) {
      body = new URLSearchParams(form).toString();
      headers["content-type"] = "application/x-www-form-urlencoded";
      headers.origin = ORIGIN;
    }
    const res = await fetch(`${w.base}${path}`, { method, headers, body, redirect: "manual" });
    for (const cookie of res.headers.getSetCookie()) {
      const pair = cookie.split(";")[0] as string;
      const eq = pair.indexOf("=");
      if (/Max-Age=0/.test(cookie)) jar.delete(pair.slice(0, eq));
      else jar.set(pair.slice(0, eq), pair.slice(eq + 1));
    }
    const text = await res.text();
    if ((res.headers.get("content-type") ?? "").startsWith("text/html")) lastHtml = text;
    return { status: res.status, headers: res.headers, text };
  };
  const csrf = () => lastHtml.match(/name="_csrf" value="([^"]+)"/)?.[1] ?? "";
  return {
    jar,
    get: (path: string) => send("GET", path),
    post: (path: string, form: Record<string, string> = {}) => send("POST", path, { _csrf: csrf(), ...form }),
  };
}

describe.each(["node", "bun"])("behind a trusted proxy (SVC_HTTP_SERVER=%s)", (transport) => {
  let w: World;

  beforeAll(async () => {
    w = await startWorld({ SVC_TRUSTED_PROXIES: "loopback", SVC_HTTP_SERVER: transport, SVC_ACCESS_LOG: "1" });
  }, 60_000);
  afterAll(async () => {
    await w.stop();
  }, 60_000);

  it("gives each reader X-Forwarded-For names its own browser decide window (200 per 10 s)", async () => {
    nextWindow(w.h);
    await spendWindow(w, () => "203.0.113.1");
    const refused = await decide(w, "203.0.113.1");
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("9");
    // Another reader behind the same proxy still has all of theirs.
    for (let i = 0; i < 5; i++) expect((await decide(w, "203.0.113.2")).status).toBe(200);
    // And the proxy's own requests (no header) are a client of their own.
    expect((await decide(w, undefined)).status).toBe(200);
  });

  it("keeps a reader in their window whatever X-Forwarded-For they send ahead of the proxy's", async () => {
    nextWindow(w.h);
    let n = 0;
    // nginx's $proxy_add_x_forwarded_for appends the reader's address to whatever they sent.
    await spendWindow(w, () => `198.51.100.${n++ % 250}, 203.0.113.7`);
    expect((await decide(w, "10.1.1.1, 203.0.113.7")).status).toBe(429);
    expect((await decide(w, "203.0.113.7")).status).toBe(429);
  });

  it("names the reader the proxy forwards as the access log's client", async () => {
    nextWindow(w.h);
    expect((await decide(w, "198.51.100.1, 203.0.113.30", "proxied-1")).status).toBe(200);
    expect(accessLogged(w, "proxied-1")?.client).toBe("203.0.113.30");
  });

  it("signs in to the console over HTTPS at the proxy: the link, the session and a form", async () => {
    const browser = consoleBrowser(w, { "x-forwarded-proto": "https", "x-forwarded-for": "203.0.113.20" });
    expect((await browser.get("/console/sign-in")).status).toBe(200);
    const sent = await browser.post("/console/sign-in", { email: "ada@example.com" });
    expect(sent.status).toBe(200);
    await mailed(w, "ada@example.com");
    const link = new URL(w.box.lastLink("ada@example.com"));
    // The mailed link is on the origin the reader reached, scheme included.
    expect(link.origin).toBe(ORIGIN);
    expect((await browser.get(`${link.pathname}${link.search}`)).status).toBe(200);
    const done = await browser.post("/console/auth", { token: link.searchParams.get("token") as string });
    expect(done.status).toBe(303);
    expect(done.headers.get("location")).toBe("/console");
    for (const cookie of done.headers.getSetCookie()) expect(cookie).toContain("; Secure");
    expect((await browser.get("/console")).status).toBe(200);
    const created = await browser.post("/console/sites", { id: `behind-${transport}` });
    expect(created.status).toBe(201);
    const sites = (await (await w.h.admin("GET", "/admin/tenants/default/sites")).json()) as {
      sites: { id: string }[];
    };
    expect(sites.sites.map((s) => s.id)).toContain(`behind-${transport}`);
  });

  it("refuses a console form when the proxy does not forward the https the browser used", async () => {
    const browser = consoleBrowser(w, { "x-forwarded-for": "203.0.113.21" });
    expect((await browser.get("/console/sign-in")).status).toBe(200);
    const refused = await browser.post("/console/sign-in", { email: "ada@example.com" });
    expect(refused.status).toBe(403);
    expect(refused.text).toContain("The form did not come from the console.");
  });
});

describe.each(["node", "bun"])("behind no trusted proxy (SVC_HTTP_SERVER=%s)", (transport) => {
  let w: World;

  beforeAll(async () => {
    // Another address is trusted; 127.0.0.1, the peer here, is not.
    w = await startWorld({ SVC_TRUSTED_PROXIES: "10.0.0.0/8", SVC_HTTP_SERVER: transport, SVC_ACCESS_LOG: "1" });
  }, 60_000);
  afterAll(async () => {
    await w.stop();
  }, 60_000);

  it("keys the browser decide window on the peer: a forged X-Forwarded-For does not move it", async () => {
    nextWindow(w.h);
    let n = 0;
    await spendWindow(w, () => `203.0.113.${n++ % 250}`);
    expect((await decide(w, "192.0.2.99")).status).toBe(429);
    expect((await decide(w, undefined)).status).toBe(429);
  });

  it("names the peer as the access log's client, whatever X-Forwarded-For says", async () => {
    nextWindow(w.h);
    expect((await decide(w, "203.0.113.30", "direct-1")).status).toBe(200);
    expect(accessLogged(w, "direct-1")?.client).toBe("127.0.0.1");
  });

  it("refuses a console form whose https is only a forged X-Forwarded-Proto", async () => {
    const browser = consoleBrowser(w, { "x-forwarded-proto": "https", "x-forwarded-host": HOST });
    expect((await browser.get("/console/sign-in")).status).toBe(200);
    const refused = await browser.post("/console/sign-in", { email: "ada@example.com" });
    expect(refused.status).toBe(403);
    expect(refused.text).toContain("The form did not come from the console.");
    await w.h.deps.outbox.drain();
    expect(w.box.mails.length).toBe(0);
  });
});
