import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase, type StoreKind, storeKinds } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";
import { roomyMailBudgets } from "../helpers/mail-budgets";
import { mailbox } from "../helpers/sign-in";

/** What a browser would follow off the site, or cannot read the way a parser does. */
const REFUSED: [string, string][] = [
  ["a backslash after the slash", "/\\evil.example"],
  ["a backslash and a letter t", "/\\t/evil.example"],
  ["a tab between the slashes", "/\t/evil.example"],
  ["a newline between the slashes", "/\n/evil.example"],
  ["a carriage return between the slashes", "/\r/evil.example"],
  ["a NUL", "/account\u0000"],
  ["a C1 control character", "/account\u0085"],
  ["DEL", "/\u007f/evil.example"],
  ["a protocol-relative URL", "//evil.example/x"],
  ["two backslashes", "\\\\evil.example"],
  ["a backslash in an allowed origin's URL", "https://news.example\\@evil.example/"],
  ["another origin", "https://evil.example/"],
  ["an allowed host on another scheme", "http://news.example/account"],
  ["credentials before an allowed host", "https://user:pw@news.example/account"],
  ["a javascript: URL", "javascript:alert(1)"],
  ["a data: URL", "data:text/html,<script>alert(1)</script>"],
  ["a relative path without a slash", "account"],
];

/** A NUL is refused before any route runs (422: text Postgres cannot store); the rest by the callback rule. */
const refusedStatus = (callbackURL: string) => (callbackURL.includes("\u0000") ? 422 : 400);

const ACCEPTED = ["/account", "/a/b?c=d#e", "/%5Cevil.example", "https://news.example/account", "https://news.example"];

describe.each(storeKinds)(
  "callbackURL is a same-site path or an allowed origin, strictly (%s store)",
  (kind: StoreKind) => {
    let h: Harness;
    let db: Awaited<ReturnType<typeof freshDatabase>>;
    const box = mailbox();
    const site = { "x-svc-site-id": "news" };

    beforeAll(async () => {
      db = await freshDatabase(kind);
      // This file asks for many links from one in-process client: the mail budgets are tested elsewhere.
      h = await startHarness(db, { mailTransport: box.transport, mailBudgets: roomyMailBudgets });
      await seedSite(h, "news", basicDocument());
    }, 60_000);
    afterAll(async () => {
      await h.stop();
      await db.drop();
    }, 60_000);

    const count = async (table: "magic_links" | "mail_outbox") =>
      rowsOf<{ n: number }>(await db.db.execute(sql.raw(`select count(*)::int as n from ${table}`)))[0]!.n;
    let asked = 0;
    const askLink = (callbackURL?: string) =>
      h.request("POST", "/v1/id/sign-in/magic-link", {
        headers: site,
        // A fresh address each time keeps the per-address mail limit out of the way.
        body: { email: `cb${asked++}@example.com`, callbackURL },
      });
    const consume = (token: string, callbackURL?: string) =>
      h.request("POST", "/v1/id/magic-link/consume", { headers: site, body: { token, callbackURL } });

    it.each(REFUSED)("refuses %s on the link request: 400, no link stored, no mail", async (_label, callbackURL) => {
      const [links, mails] = [await count("magic_links"), await count("mail_outbox")];
      const res = await askLink(callbackURL);
      expect(res.status).toBe(refusedStatus(callbackURL));
      const body = await res.json();
      if (res.status === 400) expect(body.error.message).toContain("callbackURL");
      expect(await count("magic_links")).toBe(links);
      expect(await count("mail_outbox")).toBe(mails);
    });

    it.each(REFUSED)("refuses %s on consume without spending the token", async (_label, callbackURL) => {
      expect((await askLink()).status).toBe(200);
      await h.deps.outbox.drain();
      const token = box.lastToken();
      const refused = await consume(token, callbackURL);
      expect(refused.status).toBe(refusedStatus(callbackURL));
      expect(refused.headers.getSetCookie()).toEqual([]);
      // The link is still good: the refusal consumed nothing.
      expect((await consume(token, "/account")).status).toBe(200);
    });

    it.each(REFUSED)("refuses %s on the interstitial page", async (_label, callbackURL) => {
      const query = new URLSearchParams({ token: "t".repeat(43), site: "news", callbackURL });
      const page = await h.request("GET", `/v1/id/magic-link?${query}`);
      expect(page.status).toBe(400);
      expect((await page.json()).error.code).toBe("bad_request");
    });

    it.each(ACCEPTED)("accepts %s and carries it through the mail and the page", async (callbackURL) => {
      const res = await askLink(callbackURL);
      expect(res.status).toBe(200);
      await h.deps.outbox.drain();
      const token = box.lastToken();
      const query = new URLSearchParams({ token, site: "news", callbackURL });
      const page = await h.request("GET", `/svc/v1/id/magic-link?${query}`);
      expect(page.status).toBe(200);
      expect(await page.text()).toContain(JSON.stringify(callbackURL).replace(/</g, "\\u003c"));
      expect((await consume(token, callbackURL)).status).toBe(200);
    });
  },
);
