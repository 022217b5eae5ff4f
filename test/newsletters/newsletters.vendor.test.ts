import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { SYNC_JOB } from "../../src/newsletters/sync";
import { storeKinds } from "../helpers/databases";
import { mailHeader, type NewsletterWorld, newsletterWorld } from "./fixture";

describe.each(storeKinds)("newsletter delivery vendor (listmonk fake, %s store)", (kind) => {
  let w: NewsletterWorld;
  let ids: { daily: string; weekly: string };

  beforeAll(async () => {
    w = await newsletterWorld(kind);
    ids = await w.lists();
  }, 60_000);
  afterAll(() => w.stop(), 60_000);

  const sync = async () => {
    await w.h.deps.jobs.runDue();
    return w.h.deps.jobs.statsOf(SYNC_JOB);
  };

  it("sends only subscribed addresses: a pending one never reaches the vendor; confirmed and left ones follow", async () => {
    const ann = await w.person("ann@example.com");
    const headers = { cookie: ann.cookie };
    const before = w.smtp.received.length;
    expect((await w.call("PUT", "subscriptions", { headers, body: { subscribed: [ids.daily] } })).status).toBe(202);
    await sync();
    expect(w.listmonk.seenAddresses.has("ann@example.com")).toBe(false);
    expect(w.listmonk.membersOf(ids.daily)).toEqual({});

    const mail = (await w.mails(before + 1)).at(-1)!;
    expect((await w.open("POST", w.confirmLink(mail))).status).toBe(200);
    expect((await sync()).depth).toBe(0);
    expect(w.listmonk.membersOf(ids.daily)).toEqual({ "ann@example.com": "confirmed" });
    const list = w.listmonk.lists.find((l) => l.tags.includes(`svc-${ids.daily}`))!;
    expect(list).toMatchObject({ name: "The Daily", optin: "single" });
    // The vendor's templates get the one-click link of each list.
    const attribs = w.listmonk.subscriber("ann@example.com")!.attribs as { svc_unsubscribe: { daily: string } };
    expect(attribs.svc_unsubscribe.daily).toMatch(/^https:\/\/id\.news\.example\/v1\/newsletters\/unsubscribe\?token=/);
    expect(mailHeader(mail, "List-Unsubscribe")).toStartWith("<https://id.news.example/v1/newsletters/unsubscribe");

    // A one-click unsubscribe through the vendor's link reaches the vendor too.
    expect((await w.open("POST", new URL(attribs.svc_unsubscribe.daily))).status).toBe(200);
    await sync();
    expect(w.listmonk.membersOf(ids.daily)).toEqual({ "ann@example.com": "unsubscribed" });
    // Subscribed again (single opt-in list and daily by confirmation): the same subscriber.
    await w.call("PUT", "subscriptions", { headers, body: { subscribed: [ids.weekly] } });
    await sync();
    expect(w.listmonk.membersOf(ids.weekly)).toEqual({ "ann@example.com": "confirmed" });
    // Updating her attributes rewrote her lists without the one she left: still not subscribed there.
    expect(w.listmonk.membersOf(ids.daily)["ann@example.com"]).not.toBe("confirmed");
    expect(Object.keys(w.listmonk.subscriber("ann@example.com")!.attribs.svc_unsubscribe as object).sort()).toEqual([
      "daily",
      "weekly",
    ]);
  });

  it("a vendor that is down loses nothing: the standing is saved at once and synced once it is back", async () => {
    const bob = await w.person("bob@example.com");
    w.listmonk.state.mode = "down";
    const res = await w.call("PUT", "subscriptions", {
      headers: { cookie: bob.cookie },
      body: { subscribed: [ids.weekly] },
    });
    expect(res.status).toBe(200);
    expect(await w.statuses(await w.call("GET", "subscriptions", { headers: { cookie: bob.cookie } }))).toEqual({
      daily: "unsubscribed",
      weekly: "subscribed",
    });
    let stats = await sync();
    expect(stats.queued).toBe(1);
    expect(w.listmonk.membersOf(ids.weekly)["bob@example.com"]).toBeUndefined();
    // Rate-limited next: its Retry-After (9 s) is honoured.
    w.listmonk.state.mode = "rate_limited";
    w.h.clock.advance(10_000);
    stats = await sync();
    expect(stats.queued).toBe(1);
    // Back up: after the backoff the job runs again and catches up.
    w.listmonk.state.mode = "ok";
    w.h.clock.advance(60_000);
    stats = await sync();
    expect(stats.depth).toBe(0);
    expect(w.listmonk.membersOf(ids.weekly)["bob@example.com"]).toBe("confirmed");
  });

  it("a vendor call that hangs times out and is retried", async () => {
    const cy = await w.person("cy@example.com");
    w.listmonk.state.mode = "slow";
    await w.call("PUT", "subscriptions", { headers: { cookie: cy.cookie }, body: { subscribed: [ids.weekly] } });
    const started = performance.now();
    expect((await sync()).queued).toBe(1);
    expect(performance.now() - started).toBeLessThan(1_900);
    w.listmonk.state.mode = "ok";
    w.h.clock.advance(60_000);
    expect((await sync()).depth).toBe(0);
    expect(w.listmonk.membersOf(ids.weekly)["cy@example.com"]).toBe("confirmed");
  });
});

describe("a tenant with no vendor configured", () => {
  let w: NewsletterWorld;
  beforeAll(async () => {
    w = await newsletterWorld("embedded", { vendor: false });
  }, 60_000);
  afterAll(() => w.stop(), 60_000);

  it("keeps standings and queues no sync", async () => {
    const ids = await w.lists();
    const dee = await w.person("dee@example.com");
    const res = await w.call("PUT", "subscriptions", {
      headers: { cookie: dee.cookie },
      body: { subscribed: [ids.weekly] },
    });
    expect(res.status).toBe(200);
    expect((await w.h.deps.jobs.statsOf(SYNC_JOB)).depth).toBe(0);
    expect(await w.statuses(await w.call("GET", "subscriptions", { headers: { cookie: dee.cookie } }))).toEqual({
      daily: "unsubscribed",
      weekly: "subscribed",
    });
    expect(w.listmonk.state.requests).toBe(0);
  });
});
