import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { storeKinds } from "../helpers/databases";
import {
  MOUNTS,
  mailHeader,
  type NewsletterWorld,
  newsletterDocument,
  newsletterWorld,
  ORIGIN,
  PUBLIC_URL,
} from "./fixture";

const UUID_V7 = /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe.each(storeKinds)("newsletters, happy paths (%s store)", (kind) => {
  let w: NewsletterWorld;
  let ids: { daily: string; weekly: string };

  beforeAll(async () => {
    // No impact sampling: its replay of an earlier request that named a newsletter feature reads
    // that standing in the background, which the read-counting test below would count as its own.
    w = await newsletterWorld(kind, { config: { SVC_IMPACT_SAMPLE_EVERY: "0" } });
    ids = await w.lists();
  }, 60_000);
  afterAll(() => w.stop(), 60_000);

  it("lists the site's deployed lists on both mounts, with CORS and uuid v7 ids", async () => {
    for (const mount of MOUNTS) {
      const res = await w.call("GET", "lists", { mount, headers: { origin: ORIGIN } });
      expect(res.status).toBe(200);
      expect(res.headers.get("access-control-allow-origin")).toBe(ORIGIN);
      const body = await res.json();
      expect(body).toEqual({
        lists: [
          { id: ids.daily, slug: "daily", label: "The Daily", description: "Five stories at 7am.", doubleOptIn: true },
          { id: ids.weekly, slug: "weekly", label: "The Weekly", description: null, doubleOptIn: false },
        ],
      });
    }
    expect(ids.daily).toMatch(UUID_V7);
    // Each site has its own lists (slugs are unique per site, not per tenant).
    const dual = await w.lists("dual");
    expect(dual.daily).not.toBe(ids.daily);
    const preflight = await w.h.request("OPTIONS", "/svc/v1/newsletters/subscriptions", {
      headers: { origin: ORIGIN, "access-control-request-method": "PUT" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-methods")).toContain("PUT");
  });

  it("walks the state table under a session: pending with a mail (202), confirm, unsubscribe by omission", async () => {
    const ann = await w.person("ann@example.com");
    const headers = { cookie: ann.cookie };
    const first = await w.call("PUT", "subscriptions", { headers, body: { subscribed: [ids.daily, ids.weekly] } });
    expect(first.status).toBe(202);
    expect(await w.statuses(first)).toEqual({ daily: "pending", weekly: "subscribed" });
    const mails = await w.mails(1);
    const mail = mails.at(-1)!;
    expect(mail.to).toEqual(["ann@example.com"]);
    expect(mail.text).toContain("Subject: Confirm your subscription to The Daily");
    expect(mailHeader(mail, "List-Unsubscribe")).toMatch(
      /^<https:\/\/id\.news\.example\/v1\/newsletters\/unsubscribe\?token=[\w.-]+>$/,
    );
    expect(mailHeader(mail, "List-Unsubscribe-Post")).toBe("List-Unsubscribe=One-Click");
    const link = w.confirmLink(mail);
    expect(link.origin).toBe(PUBLIC_URL);

    // A scanner's GET changes nothing.
    const page = await w.open("GET", link);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<form method="post"');
    expect(await w.statuses(await w.call("GET", "subscriptions", { headers }))).toEqual({
      daily: "pending",
      weekly: "subscribed",
    });

    const confirmed = await w.open("POST", link, {
      headers: { "content-type": "application/x-www-form-urlencoded" },
      rawBody: "",
    });
    expect(confirmed.status).toBe(200);
    expect(await confirmed.text()).toContain("You are subscribed to The Daily.");
    const again = await w.open("POST", link);
    expect(again.status).toBe(200);
    for (const mount of MOUNTS) {
      expect(await w.statuses(await w.call("GET", "subscriptions", { headers, mount }))).toEqual({
        daily: "subscribed",
        weekly: "subscribed",
      });
    }
    // Named again while subscribed: stays subscribed, no mail; weekly omitted: unsubscribed.
    const repeat = await w.call("PUT", "subscriptions", { headers, body: { subscribed: [ids.daily] } });
    expect(repeat.status).toBe(200);
    expect(await w.statuses(repeat)).toEqual({ daily: "subscribed", weekly: "unsubscribed" });
    // An empty array is a complete unsubscribe.
    const none = await w.call("PUT", "subscriptions", { headers, body: { subscribed: [] } });
    expect(await w.statuses(none)).toEqual({ daily: "unsubscribed", weekly: "unsubscribed" });
    expect(w.smtp.received.length).toBe(1);
  });

  it("keeps a pending list pending whether named or omitted, re-sending a fresh link each time", async () => {
    const bob = await w.person("bob@example.com");
    const headers = { cookie: bob.cookie };
    const before = w.smtp.received.length;
    const put = (subscribed: string[]) => w.call("PUT", "subscriptions", { headers, body: { subscribed } });
    const a = await put([ids.daily]);
    expect(a.status).toBe(202);
    const b = await put([]);
    expect(b.status).toBe(202);
    expect(await w.statuses(b)).toEqual({ daily: "pending", weekly: "unsubscribed" });
    const c = await put([ids.daily]);
    expect(c.status).toBe(202);
    const mails = (await w.mails(before + 3)).slice(before).filter((m) => m.to.includes("bob@example.com"));
    expect(mails.length).toBe(3);
    const links = mails.map((m) => w.confirmLink(m).href);
    expect(new Set(links).size).toBe(3);
    // An earlier link of the same standing still confirms (each lives 7 days).
    expect((await w.open("POST", new URL(links[0]!))).status).toBe(200);
    expect(await w.statuses(await w.call("GET", "subscriptions", { headers }))).toEqual({
      daily: "subscribed",
      weekly: "unsubscribed",
    });
  });

  it("the anonymous path only adds, and echoes what a never-seen address would get", async () => {
    const carol = await w.person("carol@example.com");
    const headers = { cookie: carol.cookie };
    expect((await w.call("PUT", "subscriptions", { headers, body: { subscribed: [ids.weekly] } })).status).toBe(200);
    const before = w.smtp.received.length;
    // Carol holds weekly; an anonymous caller names daily with her address.
    const anon = await w.call("PUT", "subscriptions", {
      body: { subscribed: [ids.daily], email: "Carol@Example.com" },
    });
    expect(anon.status).toBe(202);
    expect(await w.statuses(anon)).toEqual({ daily: "pending", weekly: "unknown" });
    // Omitted lists keep their state; the named one is pending with a mail to the address.
    expect(await w.statuses(await w.call("GET", "subscriptions", { headers }))).toEqual({
      daily: "pending",
      weekly: "subscribed",
    });
    const mail = (await w.mails(before + 1)).at(-1)!;
    expect(mail.to).toEqual(["carol@example.com"]);
    expect((await w.open("POST", w.confirmLink(mail))).status).toBe(200);
    // Naming a list she already holds: the echo is still what a stranger would get; nothing lowered or mailed.
    const again = await w.call("PUT", "subscriptions", {
      body: { subscribed: [ids.daily, ids.weekly], email: "carol@example.com" },
    });
    expect(again.status).toBe(202);
    expect(await w.statuses(again)).toEqual({ daily: "pending", weekly: "subscribed" });
    expect(await w.statuses(await w.call("GET", "subscriptions", { headers }))).toEqual({
      daily: "subscribed",
      weekly: "subscribed",
    });
    expect(w.smtp.received.length).toBe(before + 1);
    // A never-seen address becomes a user; a single opt-in list answers 200.
    const fresh = await w.call("PUT", "subscriptions", {
      body: { subscribed: [ids.weekly], email: "dave@example.com" },
    });
    expect(fresh.status).toBe(200);
    expect(await w.statuses(fresh)).toEqual({ daily: "unknown", weekly: "subscribed" });
    const dave = await w.h.deps.identityDeps.identity.userByEmail("default", "dave@example.com");
    expect(dave?.emailVerified).toBe(false);
    // An anonymous GET names nobody: unknown throughout, not a refusal.
    expect(await w.statuses(await w.call("GET", "subscriptions"))).toEqual({ daily: "unknown", weekly: "unknown" });
  });

  it("an unconfirmed standing goes back to unknown when its last link expires (7 days, injected clock)", async () => {
    const erin = await w.person("erin@example.com");
    const headers = { cookie: erin.cookie };
    const before = w.smtp.received.length;
    expect((await w.call("PUT", "subscriptions", { headers, body: { subscribed: [ids.daily] } })).status).toBe(202);
    const link = w.confirmLink((await w.mails(before + 1)).at(-1)!);
    w.h.clock.advance(7 * 86_400_000);
    expect(await w.statuses(await w.call("GET", "subscriptions", { headers }))).toEqual({
      daily: "unknown",
      weekly: "unsubscribed",
    });
    const expired = await w.open("POST", link);
    expect(expired.status).toBe(410);
    expect(await expired.text()).toContain("expired");
    expect((await w.open("GET", link)).status).toBe(410);
    // Asked again: pending again, with a new mail.
    expect((await w.call("PUT", "subscriptions", { headers, body: { subscribed: [ids.daily] } })).status).toBe(202);
    expect((await w.mails(before + 2)).at(-1)!.to).toEqual(["erin@example.com"]);
  });

  it("an API key names the user with userId; without it, GET answers unknown throughout", async () => {
    const fay = await w.person("fay@example.com");
    const key = { "x-api-key": w.key };
    const put = await w.call("PUT", "subscriptions", {
      headers: { authorization: `Bearer ${w.key}` },
      body: { subscribed: [ids.weekly], userId: fay.userId },
    });
    expect(put.status).toBe(200);
    expect(await w.statuses(put)).toEqual({ daily: "unsubscribed", weekly: "subscribed" });
    const got = await w.call("GET", "subscriptions", { headers: key, query: `?userId=${fay.userId}` });
    expect(await w.statuses(got)).toEqual({ daily: "unsubscribed", weekly: "subscribed" });
    expect(await w.statuses(await w.call("GET", "subscriptions", { headers: key }))).toEqual({
      daily: "unknown",
      weekly: "unknown",
    });
  });

  it("a verified upstream credential names the user in dual (cookie) and external_only (bearer)", async () => {
    const dual = await w.lists("dual");
    const credential = await w.idp.token(
      { sub: "up-gus", email: "gus@example.com", email_verified: true },
      { nowMs: w.h.clock.now() },
    );
    const put = await w.call("PUT", "subscriptions", {
      site: "dual",
      headers: { cookie: `idp_token=${credential}` },
      body: { subscribed: [dual.weekly] },
    });
    expect(put.status).toBe(200);
    expect(await w.statuses(put)).toEqual({ daily: "unsubscribed", weekly: "subscribed" });
    const outside = await w.lists("outside");
    for (const mount of MOUNTS) {
      const res = await w.call("PUT", "subscriptions", {
        site: "outside",
        mount,
        headers: { authorization: `Bearer ${credential}` },
        body: { subscribed: [outside.weekly] },
      });
      expect(res.status).toBe(200);
    }
    const got = await w.call("GET", "subscriptions", {
      site: "outside",
      headers: { authorization: `Bearer ${credential}` },
    });
    expect(await w.statuses(got)).toEqual({ daily: "unsubscribed", weekly: "subscribed" });
    // One user across sites and credentials.
    const gus = await w.h.deps.identityDeps.identity.userByEmail("default", "gus@example.com");
    const byKey = await w.call("GET", "subscriptions", {
      site: "outside",
      headers: { "x-api-key": w.outsideKey },
      query: `?userId=${gus?.id}`,
    });
    expect(await w.statuses(byKey)).toEqual({ daily: "unsubscribed", weekly: "subscribed" });
  });

  it("one-click unsubscribe: a POST to the mailed List-Unsubscribe URL leaves that list at once; GET shows a button", async () => {
    const hal = await w.person("hal@example.com");
    const headers = { cookie: hal.cookie };
    const before = w.smtp.received.length;
    await w.call("PUT", "subscriptions", { headers, body: { subscribed: [ids.daily, ids.weekly] } });
    const mail = (await w.mails(before + 1)).at(-1)!;
    await w.open("POST", w.confirmLink(mail));
    const url = new URL(mailHeader(mail, "List-Unsubscribe")!.slice(1, -1));
    expect(url.origin).toBe(PUBLIC_URL);
    expect(url.pathname).toBe("/v1/newsletters/unsubscribe");
    const page = await w.open("GET", url);
    expect(page.status).toBe(200);
    expect(await page.text()).toContain('<button type="submit">Unsubscribe</button>');
    expect(await w.statuses(await w.call("GET", "subscriptions", { headers }))).toEqual({
      daily: "subscribed",
      weekly: "subscribed",
    });
    // As a mail client sends it (RFC 8058): a form body, no cookie, no site header.
    const res = await w.open("POST", url, {
      headers: { "content-type": "application/x-www-form-urlencoded" },
      rawBody: "List-Unsubscribe=One-Click",
    });
    expect(res.status).toBe(200);
    expect(await w.statuses(await w.call("GET", "subscriptions", { headers }))).toEqual({
      daily: "unsubscribed",
      weekly: "subscribed",
    });
    // Again: harmless. Emailed links are served on /v1 only.
    expect((await w.open("POST", url)).status).toBe(200);
    expect((await w.h.request("POST", `/svc${url.pathname}${url.search}`)).status).toBe(404);
  });

  it("decisions read newsletters.<slug>: the prompt stops showing once pending or subscribed", async () => {
    const ivy = await w.person("ivy@example.com");
    const prompt = async (userId?: string) => {
      const res = await w.h.request("POST", "/v1/decide", {
        headers: { "x-svc-site-id": "news", "x-api-key": w.key },
        body: { features: ["prompt", "teaser"], ...(userId ? { userId } : {}) },
      });
      expect(res.status).toBe(200);
      return (await res.json()).decisions.prompt.outcome as string;
    };
    expect(await prompt(ivy.userId)).toBe("show");
    expect(await prompt()).toBe("show");
    const before = w.smtp.received.length;
    await w.call("PUT", "subscriptions", { headers: { cookie: ivy.cookie }, body: { subscribed: [ids.daily] } });
    expect(await prompt(ivy.userId)).toBe("hide");
    await w.open("POST", w.confirmLink((await w.mails(before + 1)).at(-1)!));
    expect(await prompt(ivy.userId)).toBe("hide");
    await w.call("PUT", "subscriptions", { headers: { cookie: ivy.cookie }, body: { subscribed: [] } });
    expect(await prompt(ivy.userId)).toBe("show");
  });

  it("a decide request naming no feature that reads newsletters.* reads no standing", async () => {
    const facts = w.h.deps.newsletters.facts;
    const original = facts.get.bind(facts);
    let reads = 0;
    facts.get = (tenantId, userId) => {
      reads++;
      return original(tenantId, userId);
    };
    try {
      const ivy = await w.h.deps.identityDeps.identity.userByEmail("default", "ivy@example.com");
      const res = await w.h.request("POST", "/v1/decide", {
        headers: { "x-svc-site-id": "news", "x-api-key": w.key },
        body: { features: ["teaser", "paywall"], userId: ivy?.id },
      });
      expect(res.status).toBe(200);
      expect(reads).toBe(0);
      await w.h.request("POST", "/v1/decide", {
        headers: { "x-svc-site-id": "news", "x-api-key": w.key },
        body: { features: ["teaser", "prompt"], userId: ivy?.id },
      });
      expect(reads).toBe(1);
    } finally {
      facts.get = original;
    }
  });

  it("list ids are stable across deploys; a dropped list keeps its standings and comes back with them", async () => {
    const jo = await w.person("jo@example.com");
    const headers = { cookie: jo.cookie };
    await w.call("PUT", "subscriptions", { headers, body: { subscribed: [ids.weekly] } });
    const deploy = (document: unknown) => w.h.admin("POST", "/admin/tenants/default/sites/news/deploy", { document });
    const only = newsletterDocument({ newsletters: [{ slug: "daily", label: "The Daily (new name)" }] });
    (only.features as Record<string, unknown>).prompt = undefined;
    expect((await deploy(JSON.parse(JSON.stringify(only)))).status).toBe(200);
    const lists = await (await w.call("GET", "lists")).json();
    expect(lists.lists.map((l: { id: string }) => l.id)).toEqual([ids.daily]);
    expect(await w.statuses(await w.call("GET", "subscriptions", { headers }))).toEqual({ daily: "unsubscribed" });
    expect((await deploy(newsletterDocument())).status).toBe(200);
    expect(await w.lists()).toEqual(ids);
    expect(await w.statuses(await w.call("GET", "subscriptions", { headers }))).toEqual({
      daily: "unsubscribed",
      weekly: "subscribed",
    });
    // A document may carry the ids it was given; another id for a known slug is refused.
    const named = newsletterDocument({
      newsletters: [
        { id: ids.daily, slug: "daily", label: "The Daily" },
        { id: ids.daily, slug: "weekly", label: "W" },
      ],
    });
    const refused = await deploy(named);
    expect(refused.status).toBe(422);
    const wrong = newsletterDocument({
      newsletters: [
        { id: ids.weekly, slug: "daily", label: "The Daily" },
        { slug: "weekly", label: "W" },
      ],
    });
    const wrongRes = await deploy(wrong);
    expect(wrongRes.status).toBe(422);
    expect(JSON.stringify(await wrongRes.json())).toContain("/newsletters/0/id");
    expect(await w.lists()).toEqual(ids);
  });
});
