import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { connect } from "node:net";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { trustedLinkOrigin } from "../../src/identity/link-origin";
import type { Mail } from "../../src/mail/outbox";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase, type StoreKind, storeKinds } from "../helpers/databases";
import { type Harness, OPERATOR_TOKEN, startHarness } from "../helpers/harness";

/** A mail transport that keeps what it is given. */
function keptMail() {
  const mails: Mail[] = [];
  return { mails, transport: { kind: "log" as const, send: async (m: Mail) => void mails.push(m) } };
}

const linkIn = (text: string) => {
  const match = text.match(/(https?:\/\/\S+\/id\/magic-link\?\S+)/);
  if (!match?.[1]) throw new Error(`no link in mail:\n${text}`);
  return new URL(match[1]);
};

/** One raw HTTP/1.1 request over TCP, with whatever Host header the caller forges. */
function rawRequest(port: number, head: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, "127.0.0.1");
    let data = "";
    socket.on("data", (chunk) => {
      data += chunk.toString("utf8");
    });
    socket.on("error", reject);
    socket.on("end", () => {
      const status = Number(data.slice(9, 12));
      resolve({ status, text: data.slice(data.indexOf("\r\n\r\n") + 4) });
    });
    socket.write(`${head}content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
  });
}

describe.each(storeKinds)("links in sign-in mail are built only on trusted origins (%s store)", (kind: StoreKind) => {
  let h: Harness;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  const box = keptMail();

  beforeAll(async () => {
    db = await freshDatabase(kind);
    h = await startHarness(db, { mailTransport: box.transport });
    const admin = async (method: string, path: string, body?: unknown) => {
      const res = await h.admin(method, path, body);
      if (res.status >= 300) throw new Error(`${method} ${path}: ${res.status} ${await res.text()}`);
      return res.json();
    };
    // The default tenant answers every host that is not bound to another tenant; it has no host names.
    await admin("POST", "/admin/tenants", { id: "default", default: true });
    await admin("POST", "/admin/tenants", {
      id: "acme",
      hosts: ["news.acme.example"],
      publicUrl: "https://id.acme.example/",
    });
    await admin("POST", "/admin/tenants", { id: "beta", hosts: ["beta.example", "www.beta.example"] });
    for (const tenant of ["default", "acme", "beta"]) {
      await admin("POST", `/admin/tenants/${tenant}/sites`, { id: "news" });
      await admin("POST", `/admin/tenants/${tenant}/sites/news/deploy`, { document: basicDocument() });
    }
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await db.drop();
  }, 60_000);

  /** Asks for a link as a request that reached `origin` (the Host a browser, or an attacker, sent). */
  const ask = (origin: string, email: string, prefix = "/v1") =>
    h.app.handle(
      new Request(`${origin}${prefix}/id/sign-in/magic-link`, {
        method: "POST",
        headers: { "x-svc-site-id": "news", "content-type": "application/json" },
        body: JSON.stringify({ email }),
      }),
    );
  const linkRows = async () =>
    rowsOf<{ n: number }>(await db.db.execute(sql`select count(*)::int as n from magic_links`))[0]!.n;
  const outboxRows = async () =>
    rowsOf<{ n: number }>(await db.db.execute(sql`select count(*)::int as n from mail_outbox`))[0]!.n;

  async function mailedLink(origin: string, email: string, prefix = "/v1"): Promise<URL> {
    const before = box.mails.length;
    const res = await ask(origin, email, prefix);
    expect(res.status).toBe(200);
    await h.deps.outbox.drain();
    expect(box.mails.length).toBe(before + 1);
    return linkIn(box.mails.at(-1)!.text);
  }

  it("refuses a forged Host on a tenant with no host names and no public URL: 400, nothing written, no mail", async () => {
    const [links, outbox, mails] = [await linkRows(), await outboxRows(), box.mails.length];
    for (const origin of ["http://evil.example", "https://attacker.example:8443", "http://10.0.0.7"]) {
      const res = await ask(origin, "victim@example.com");
      expect(res.status).toBe(400);
      const body = await res.json();
      expect(body.error.code).toBe("bad_request");
      expect(body.error.message).toContain("public URL");
    }
    await h.deps.outbox.drain();
    expect(await linkRows()).toBe(links);
    expect(await outboxRows()).toBe(outbox);
    expect(box.mails.length).toBe(mails);
  });

  it("trusts loopback hosts when the tenant configured nothing (the demo install), keeping the mount", async () => {
    expect((await mailedLink("http://localhost:3000", "dev@example.com")).origin).toBe("http://localhost:3000");
    const svc = await mailedLink("http://127.0.0.1:3000", "dev2@example.com", "/svc/v1");
    expect(svc.origin).toBe("http://127.0.0.1:3000");
    expect(svc.pathname).toBe("/svc/v1/id/magic-link");
    expect((await mailedLink("http://[::1]:3000", "dev3@example.com")).origin).toBe("http://[::1]:3000");
  });

  it("uses the tenant's public URL whatever host the request reached, with the request's mount", async () => {
    const v1 = await mailedLink("http://news.acme.example", "reader@acme.example");
    expect(v1.origin).toBe("https://id.acme.example");
    expect(v1.pathname).toBe("/v1/id/magic-link");
    const svc = await mailedLink("http://news.acme.example:8080", "reader2@acme.example", "/svc/v1");
    expect(`${svc.origin}${svc.pathname}`).toBe("https://id.acme.example/svc/v1/id/magic-link");
  });

  it("uses the request's host only when it is one of the tenant's host names", async () => {
    expect((await mailedLink("https://www.beta.example", "b@beta.example")).origin).toBe("https://www.beta.example");
    expect((await mailedLink("http://BETA.example", "b2@beta.example", "/svc/v1")).origin).toBe("http://beta.example");
    // A host of no tenant reaches the default tenant, whose host names it is not: refused.
    expect((await ask("http://beta.example.evil.example", "b3@beta.example")).status).toBe(400);
    // A trailing-dot spelling is not a configured host name either.
    expect((await ask("http://news.acme.example.", "b4@beta.example")).status).toBe(400);
  });

  it("builds a link on a tenant host name at its scheme's default port, never the port the caller wrote", async () => {
    // acme.test:8081 in Host must not give links to :8081: a host name is configured without a port.
    expect((await mailedLink("http://beta.example:8081", "p1@beta.example")).origin).toBe("http://beta.example");
    const https = await mailedLink("https://www.beta.example:8443", "p2@beta.example", "/svc/v1");
    expect(`${https.origin}${https.pathname}`).toBe("https://www.beta.example/svc/v1/id/magic-link");
    expect((await mailedLink("http://beta.example:80", "p3@beta.example")).origin).toBe("http://beta.example");
  });

  it("sets, stores and clears a tenant's public URL through the admin API", async () => {
    const set = await h.admin("PUT", "/admin/tenants/beta/public-url", { publicUrl: "https://id.beta.example" });
    expect(set.status).toBe(200);
    expect(await set.json()).toEqual({ tenant: "beta", publicUrl: "https://id.beta.example" });
    expect((await mailedLink("http://beta.example", "c@beta.example")).origin).toBe("https://id.beta.example");
    // Stored: a registry loaded afresh from the store sees it.
    const listed = (await (await h.admin("GET", "/admin/tenants")).json()) as {
      tenants: { id: string; publicUrl: string | null }[];
    };
    expect(listed.tenants.find((t) => t.id === "beta")?.publicUrl).toBe("https://id.beta.example");
    const stored = rowsOf<{ public_url: string | null }>(
      await db.db.execute(sql`select public_url from tenants where id = 'beta'`),
    );
    expect(stored[0]?.public_url).toBe("https://id.beta.example");
    const cleared = await h.request("DELETE", "/admin/tenants/beta/public-url", {
      headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-length": "0" },
    });
    expect(cleared.status).toBe(200);
    expect(await cleared.json()).toEqual({ tenant: "beta", publicUrl: null });
    expect((await mailedLink("http://beta.example", "d@beta.example")).origin).toBe("http://beta.example");
  });

  it("refuses a public URL that is not an http(s) origin, and one for an unknown tenant", async () => {
    for (const publicUrl of [
      "https://id.example/path",
      "ftp://id.example",
      "https://user@id.example",
      "https://id.example?x=1",
      "id.example",
      "javascript:alert(1)",
    ]) {
      const res = await h.admin("PUT", "/admin/tenants/beta/public-url", { publicUrl });
      expect(res.status).toBe(422);
      expect((await res.json()).error.code).toBe("validation_failed");
    }
    const created = await h.admin("POST", "/admin/tenants", { id: "gamma", publicUrl: "https://x.example/a" });
    expect(created.status).toBe(422);
    expect((await h.admin("PUT", "/admin/tenants/nobody/public-url", { publicUrl: "https://x.example" })).status).toBe(
      404,
    );
  });

  it("refuses a forged Host sent over a real socket, and mails nothing", async () => {
    const server = h.app.listen({ port: 0, hostname: "127.0.0.1" }).server!;
    try {
      const before = box.mails.length;
      const body = JSON.stringify({ email: "victim@example.com" });
      const forged = await rawRequest(
        server.port!,
        "POST /v1/id/sign-in/magic-link HTTP/1.1\r\nhost: evil.example\r\nx-svc-site-id: news\r\ncontent-type: application/json\r\n",
        body,
      );
      expect(forged.status).toBe(400);
      expect(JSON.parse(forged.text).error.code).toBe("bad_request");
      const loopback = await rawRequest(
        server.port!,
        `POST /v1/id/sign-in/magic-link HTTP/1.1\r\nhost: 127.0.0.1:${server.port}\r\nx-svc-site-id: news\r\ncontent-type: application/json\r\n`,
        JSON.stringify({ email: "local@example.com" }),
      );
      expect(loopback.status).toBe(200);
      await h.deps.outbox.drain();
      expect(box.mails.length).toBe(before + 1);
      expect(linkIn(box.mails.at(-1)!.text).origin).toBe(`http://127.0.0.1:${server.port}`);
      // A tenant's host name with a port the caller chose: the link leaves the port out.
      const ported = await rawRequest(
        server.port!,
        "POST /v1/id/sign-in/magic-link HTTP/1.1\r\nhost: beta.example:8081\r\nx-svc-site-id: news\r\ncontent-type: application/json\r\n",
        JSON.stringify({ email: "ported@beta.example" }),
      );
      expect(ported.status).toBe(200);
      await h.deps.outbox.drain();
      expect(box.mails.length).toBe(before + 2);
      const link = linkIn(box.mails.at(-1)!.text);
      expect(link.origin).toBe("http://beta.example");
      expect(box.mails.at(-1)!.text).not.toContain(":8081");
    } finally {
      await h.app.stop();
    }
  });
});

describe("SVC_PUBLIC_URL, the single-tenant shortcut", () => {
  it("builds links on SVC_PUBLIC_URL for a tenant with nothing configured, whatever the Host", async () => {
    const db = await freshDatabase("embedded");
    const box = keptMail();
    const h = await startHarness(db, {
      mailTransport: box.transport,
      config: { SVC_PUBLIC_URL: "https://id.news.example" },
    });
    try {
      await h.admin("POST", "/admin/tenants", { id: "default", default: true });
      await h.admin("POST", "/admin/tenants/default/sites", { id: "news" });
      await h.admin("POST", "/admin/tenants/default/sites/news/deploy", { document: basicDocument() });
      const res = await h.app.handle(
        new Request("http://evil.example/svc/v1/id/sign-in/magic-link", {
          method: "POST",
          headers: { "x-svc-site-id": "news", "content-type": "application/json" },
          body: JSON.stringify({ email: "x@example.com" }),
        }),
      );
      expect(res.status).toBe(200);
      await h.deps.outbox.drain();
      const link = linkIn(box.mails.at(-1)!.text);
      expect(`${link.origin}${link.pathname}`).toBe("https://id.news.example/svc/v1/id/magic-link");
    } finally {
      await h.stop();
      await db.drop();
    }
  }, 60_000);
});

describe("trustedLinkOrigin, the rule on its own", () => {
  const tenants = (config: { publicUrl?: string; hosts?: readonly string[] } = {}) => ({
    publicUrl: () => config.publicUrl ?? null,
    hasHostsOf: () => (config.hosts ?? []).length > 0,
    isHostOf: (_t: string, hostname: string) => (config.hosts ?? []).includes(hostname),
  });
  it.each([
    [
      "the tenant's public URL first",
      { publicUrl: "https://id.a.example", hosts: ["a.example"] },
      "https://id.example",
      "http://a.example/x",
      "https://id.a.example",
    ],
    [
      "a configured host before SVC_PUBLIC_URL",
      { hosts: ["a.example"] },
      "https://id.example",
      "https://a.example/x",
      "https://a.example",
    ],
    [
      "a configured host on its scheme's default port, not the one the request named",
      { hosts: ["a.example"] },
      undefined,
      "http://a.example:8081/x",
      "http://a.example",
    ],
    [
      "SVC_PUBLIC_URL for an unconfigured host",
      { hosts: ["a.example"] },
      "https://id.example",
      "http://evil.example/x",
      "https://id.example",
    ],
    ["SVC_PUBLIC_URL before loopback", {}, "https://id.example", "http://localhost:3000/x", "https://id.example"],
    ["loopback when nothing is configured", {}, undefined, "http://localhost:3000/x", "http://localhost:3000"],
  ] as const)("takes %s", (_label, config, service, url, expected) => {
    expect(trustedLinkOrigin(tenants(config), service, "t", url)).toBe(expected);
  });
  it.each([
    ["a forged host with nothing configured", {}, "http://evil.example/x"],
    ["loopback once the tenant has host names", { hosts: ["a.example"] }, "http://localhost/x"],
    ["a look-alike host", { hosts: ["a.example"] }, "http://a.example.evil.example/x"],
    ["a bare path (no host at all)", {}, "/v1/id/sign-in/magic-link"],
  ] as const)("refuses %s", (_label, config, url) => {
    expect(() => trustedLinkOrigin(tenants(config), undefined, "t", url)).toThrow("public URL");
  });
});
