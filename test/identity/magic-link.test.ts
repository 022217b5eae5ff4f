import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { logTransport, smtpTransport } from "../../src/mail/outbox";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";
import { startSmtpServer } from "../helpers/smtp";

type Smtp = Awaited<ReturnType<typeof startSmtpServer>>;

describe("magic-link sign-in over a real SMTP server", () => {
  let h: Harness;
  let smtp: Smtp;
  let drop: () => Promise<void>;
  let db: Awaited<ReturnType<typeof freshDatabase>>;

  beforeAll(async () => {
    smtp = await startSmtpServer();
    db = await freshDatabase("embedded");
    drop = db.drop;
    h = await startHarness(db, { mailTransport: smtpTransport(smtp.url, "News <news@example.com>") });
    await seedSite(h, "news", basicDocument());
    await seedSite(h, "closed", basicDocument({ identity: { mode: "external_only" } }));
    await seedSite(
      h,
      "dual",
      basicDocument({ identity: { mode: "dual", upstream: { signOutUrl: "https://login.example/out" } } }),
    );
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await smtp.stop();
    await drop();
  }, 60_000);

  const site = { "x-svc-site-id": "news" };
  const linkOf = (text: string) => {
    const match = text.match(/(http:\/\/localhost\S+\/id\/magic-link\?\S+)/);
    if (!match?.[1]) throw new Error(`no link in mail:\n${text}`);
    return new URL(match[1]);
  };
  async function requestLink(email: string, prefix = "/v1", callbackURL?: string): Promise<URL> {
    const before = smtp.received.length;
    const res = await h.request("POST", `${prefix}/id/sign-in/magic-link`, {
      headers: site,
      body: { email, callbackURL },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ success: true });
    const mails = await smtp.waitFor(before + 1);
    const mail = mails[before]!;
    expect(mail.to).toEqual([email.toLowerCase()]);
    return linkOf(mail.text);
  }
  const consume = (token: string, prefix = "/v1", callbackURL?: string) =>
    h.request("POST", `${prefix}/id/magic-link/consume`, { headers: site, body: { token, callbackURL } });

  it("mails a link carrying the prefix of the request and the token in a `token` query parameter", async () => {
    const v1 = await requestLink("ada@example.com", "/v1");
    expect(v1.pathname).toBe("/v1/id/magic-link");
    expect(v1.searchParams.get("token")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(v1.searchParams.get("site")).toBe("news");
    const svc = await requestLink("ada@example.com", "/svc/v1");
    expect(svc.pathname).toBe("/svc/v1/id/magic-link");
  });

  it("stores only a hash of the token and blanks the mail body once sent", async () => {
    const link = await requestLink("hash@example.com");
    const token = link.searchParams.get("token")!;
    const links = rowsOf<{ token_hash: string }>(await db.db.execute(sql`select token_hash from magic_links`));
    expect(links.every((r) => r.token_hash !== token && /^[0-9a-f]{64}$/.test(r.token_hash))).toBe(true);
    await h.deps.outbox.drain();
    const outbox = rowsOf<{ status: string; text: string }>(
      await db.db.execute(sql`select status, text from mail_outbox`),
    );
    expect(outbox.every((r) => r.status === "sent" && r.text === "")).toBe(true);
    expect(JSON.stringify(outbox)).not.toContain(token);
  });

  it("opens an interstitial page on GET that consumes nothing (mail scanners)", async () => {
    const link = await requestLink("scanner@example.com");
    const page = await h.request("GET", `${link.pathname}${link.search}`);
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toContain("text/html");
    const html = await page.text();
    expect(html).toContain("/id/magic-link/consume");
    expect(html).not.toContain("</script><script");
    const again = await h.request("GET", `${link.pathname}${link.search}`);
    expect(again.status).toBe(200);
    expect((await consume(link.searchParams.get("token")!)).status).toBe(200);
  });

  it("signs in on consume: user, session, cookies with the right attributes and set-auth-token", async () => {
    const link = await requestLink("Grace@Example.com");
    const res = await consume(link.searchParams.get("token")!);
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.user).toMatchObject({
      email: "grace@example.com",
      emailVerified: true,
      name: null,
      firstName: null,
      lastName: null,
      image: null,
    });
    expect(body.user.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(body.session.kind).toBe("svc");
    expect(Date.parse(body.session.expiresAt)).toBeGreaterThan(h.clock.now());
    const token = res.headers.get("set-auth-token");
    expect(token).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const cookies = res.headers.getSetCookie();
    const session = cookies.find((c) => c.startsWith("svc.session_token="))!;
    expect(session).toContain(`svc.session_token=${token}`);
    for (const attribute of ["Path=/", "HttpOnly", "Secure", "SameSite=Lax"]) expect(session).toContain(attribute);
    expect(session).not.toContain("Domain=");
    const access = cookies.find((c) => c.startsWith("svc.access="))!;
    expect(access).toContain("Max-Age=900");
    // The same user comes back on the next sign-in with that address.
    const second = await consume((await requestLink("grace@example.com")).searchParams.get("token")!);
    expect((await second.json()).user.id).toBe(body.user.id);
  });

  it("refuses a second consume of the same link", async () => {
    const token = (await requestLink("twice@example.com")).searchParams.get("token")!;
    expect((await consume(token)).status).toBe(200);
    const retry = await consume(token);
    expect(retry.status).toBe(403);
    expect((await retry.json()).error.message).toBe("That sign-in link is invalid, already used or expired.");
  });

  it("lets exactly one of many concurrent consumers through", async () => {
    const token = (await requestLink("race@example.com")).searchParams.get("token")!;
    const results = await Promise.all(Array.from({ length: 12 }, () => consume(token)));
    const statuses = results.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 403)).toHaveLength(11);
  });

  it("refuses a link after 15 minutes", async () => {
    const token = (await requestLink("late@example.com")).searchParams.get("token")!;
    h.clock.advance(15 * 60_000 + 1);
    expect((await consume(token)).status).toBe(403);
  });

  it("refuses a callbackURL that is not a path or on an allowed origin, and sends nothing", async () => {
    const before = smtp.received.length;
    for (const callbackURL of ["https://evil.example/", "//evil.example/x", "javascript:alert(1)"]) {
      const res = await h.request("POST", "/v1/id/sign-in/magic-link", {
        headers: site,
        body: { email: "cb@example.com", callbackURL },
      });
      expect(res.status).toBe(400);
    }
    const ok = await requestLink("cb@example.com", "/v1", "https://news.example/account");
    expect(ok.searchParams.get("callbackURL")).toBe("https://news.example/account");
    expect(smtp.received.length).toBe(before + 1);
  });

  it("answers 404 at an external_only site and in dual unless sign-in is enabled", async () => {
    for (const s of ["closed", "dual"]) {
      const res = await h.request("POST", "/v1/id/sign-in/magic-link", {
        headers: { "x-svc-site-id": s },
        body: { email: "x@example.com" },
      });
      expect(res.status).toBe(404);
      const consumed = await h.request("POST", "/v1/id/magic-link/consume", {
        headers: { "x-svc-site-id": s },
        body: { token: "abc" },
      });
      expect(consumed.status).toBe(404);
    }
  });

  it("validates the body: 422 for a bad address or an overlong token", async () => {
    expect(
      (await h.request("POST", "/v1/id/sign-in/magic-link", { headers: site, body: { email: "not-an-email" } })).status,
    ).toBe(422);
    expect((await consume("x".repeat(513))).status).toBe(422);
    expect((await consume("")).status).toBe(422);
  });
});

describe("magic links without SMTP (development)", () => {
  it("prints the whole link on stdout, as one JSON log line (the embedded development store)", async () => {
    const lines: string[] = [];
    const db = await freshDatabase("embedded");
    const h = await startHarness(db, { mailTransport: logTransport((l) => lines.push(l)) });
    try {
      await seedSite(h, "news", basicDocument());
      await h.request("POST", "/v1/id/sign-in/magic-link", {
        headers: { "x-svc-site-id": "news" },
        body: { email: "dev@example.com" },
      });
      await h.deps.outbox.drain();
      expect(lines).toHaveLength(1);
      const line = JSON.parse(lines[0] as string) as { level: string; to: string; text: string };
      expect(line.level).toBe("info");
      expect(line.to).toBe("dev@example.com");
      expect(line.text).toMatch(/http:\/\/localhost\/v1\/id\/magic-link\?token=[A-Za-z0-9_-]{43}&site=news/);
    } finally {
      await h.stop();
      await db.drop();
    }
  }, 60_000);
});
