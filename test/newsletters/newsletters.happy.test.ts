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
    w = await newsletterWorld(kind);
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
});
