import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { noMailTransport } from "../../src/mail/outbox";
import { storeKinds } from "../helpers/databases";
import { type NewsletterWorld, newsletterSuiteWorld, newsletterWorld, type Person } from "./fixture";

const HOUR = 3_600_000;

describe.each(storeKinds)("newsletters, bad input and limits (%s store)", (kind) => {
  const w = newsletterSuiteWorld(kind);
  let ann: Person;

  beforeAll(async () => {
    ann = await w.person("ann@example.com");
  }, 60_000);

  /** Nothing stored or mailed: Ann's standings and the mail count are as before. */
  async function unchanged(mailsBefore: number) {
    expect(await w.statuses(await w.call("GET", "subscriptions", { headers: { cookie: ann.cookie } }))).toEqual({
      daily: "unknown",
      weekly: "unknown",
    });
    await w.h.deps.outbox.drain();
    expect(w.smtp.received.length).toBe(mailsBefore);
  }

  const UNKNOWN = "0190a5f2-9c3e-7bbb-8123-0123456789ab";

  it.each([
    ["an unknown list id", () => ({ subscribed: [w.ids.daily, UNKNOWN] }), UNKNOWN],
    ["a list id that is not a uuid", () => ({ subscribed: ["daily"] }), "/subscribed/0"],
    ["more than 100 ids", () => ({ subscribed: Array.from({ length: 101 }, () => w.ids.daily) }), "/subscribed"],
    ["no subscribed member", () => ({}), "/subscribed"],
    ["subscribed that is not an array", () => ({ subscribed: w.ids.daily }), "/subscribed"],
  ])("answers 422 for %s, naming it, and stores nothing", async (_label, body, named) => {
    const before = w.smtp.received.length;
    const res = await w.call("PUT", "subscriptions", { headers: { cookie: ann.cookie }, body: body() });
    expect(res.status).toBe(422);
    const error = (await res.json()).error;
    expect(error.code).toBe("validation_failed");
    expect(JSON.stringify(error.details)).toContain(named);
    await unchanged(before);
  });

  it.each([
    ["an email that is not one", "not-an-address"],
    ["an email over 254 characters", `${"a".repeat(250)}@example.com`],
  ])("answers 422 for %s on the anonymous path, creating no user", async (_label, email) => {
    const res = await w.call("PUT", "subscriptions", { body: { subscribed: [w.ids.daily], email } });
    expect(res.status).toBe(422);
    expect(await w.h.deps.identityDeps.identity.userByEmail("default", email)).toBeUndefined();
  });

  it("answers 400 for userId or email under a credential that forbids them, 401 with nobody named", async () => {
    const before = w.smtp.received.length;
    const session = { cookie: ann.cookie };
    const cases: [Record<string, string>, Record<string, unknown>, number][] = [
      [session, { subscribed: [w.ids.daily], userId: ann.userId }, 400],
      [session, { subscribed: [w.ids.daily], email: "other@example.com" }, 400],
      [{ "x-api-key": w.key }, { subscribed: [w.ids.daily] }, 400],
      [{ "x-api-key": w.key }, { subscribed: [w.ids.daily], userId: ann.userId, email: "ann@example.com" }, 400],
      [{}, { subscribed: [w.ids.daily], userId: ann.userId }, 400],
      [{}, { subscribed: [w.ids.daily] }, 401],
    ];
    for (const [headers, body, status] of cases) {
      const res = await w.call("PUT", "subscriptions", { headers, body });
      expect(res.status).toBe(status);
      expect((await res.json()).error.code).toBe(status === 400 ? "bad_request" : "unauthorized");
    }
    const query = await w.call("GET", "subscriptions", { headers: session, query: `?userId=${ann.userId}` });
    expect(query.status).toBe(400);
    await unchanged(before);
  });

  it("answers 404 for a userId that names no user, 400 without a site, 404 for an unknown site", async () => {
    const res = await w.call("GET", "subscriptions", {
      headers: { "x-api-key": w.key },
      query: "?userId=0190a5f2-9c3e-7bbb-8123-000000000000",
    });
    expect(res.status).toBe(404);
    const noSite = await w.h.request("GET", "/v1/newsletters/lists");
    expect(noSite.status).toBe(400);
    expect((await w.call("GET", "lists", { site: "nowhere" })).status).toBe(404);
    const bad = await w.h.request("PUT", "/v1/newsletters/subscriptions", {
      headers: { "x-svc-site-id": "news", cookie: ann.cookie },
      rawBody: "{nope",
    });
    expect(bad.status).toBe(400);
  });

  /** Moves the clock to the start of the next window of `ms` (the budgets' windows are fixed). */
  const startOfWindow = (ms: number) => w.h.clock.advance(ms - (w.h.clock.now() % ms));

  it("caps confirmation mail per address (5 per list per hour): 429 with Retry-After, nothing changed", async () => {
    startOfWindow(HOUR);
    const cap = await w.person("cap@example.com");
    const headers = { cookie: cap.cookie };
    const before = w.smtp.received.length;
    for (let i = 0; i < 5; i++) {
      expect((await w.call("PUT", "subscriptions", { headers, body: { subscribed: [w.ids.daily] } })).status).toBe(202);
      w.h.clock.advance(60_000);
    }
    const refused = await w.call("PUT", "subscriptions", {
      headers,
      body: { subscribed: [w.ids.daily, w.ids.weekly] },
    });
    expect(refused.status).toBe(429);
    // The hour's budget comes back when the clock hour ends: 55 minutes from now.
    expect(refused.headers.get("retry-after")).toBe(String(55 * 60));
    expect((await refused.json()).error.code).toBe("rate_limited");
    expect(await w.statuses(await w.call("GET", "subscriptions", { headers }))).toEqual({
      daily: "pending",
      weekly: "unsubscribed",
    });
    await w.h.deps.outbox.drain();
    await w.smtp.waitFor(before + 5);
    expect(w.smtp.received.length).toBe(before + 5);
    // Once the hour has passed, one more goes out.
    w.h.clock.advance(55 * 60_000);
    expect((await w.call("PUT", "subscriptions", { headers, body: { subscribed: [w.ids.daily] } })).status).toBe(202);
  });

  it("caps confirmation mail per address at 20 a day across lists, on the anonymous path too", async () => {
    startOfWindow(24 * HOUR);
    let sent = 0;
    let refused: Response | null = null;
    for (let i = 0; i < 30 && refused === null; i++) {
      const res = await w.call("PUT", "subscriptions", {
        body: { subscribed: [w.ids.daily], email: "daily-cap@example.com" },
      });
      if (res.status === 429) refused = res;
      else sent++;
      // Past each hour's cap, so only the daily one binds.
      w.h.clock.advance(13 * 60_000);
    }
    expect(sent).toBe(20);
    expect(Number(refused?.headers.get("retry-after"))).toBeGreaterThan(0);
  }, 120_000);

  it("caps anonymous confirmation mail at 40 per hour per client, whatever the addresses", async () => {
    startOfWindow(HOUR);
    for (let i = 0; i < 40; i++) {
      const res = await w.call("PUT", "subscriptions", {
        body: { subscribed: [w.ids.daily], email: `many-${i}@example.com` },
      });
      expect(res.status).toBe(202);
    }
    const refused = await w.call("PUT", "subscriptions", {
      body: { subscribed: [w.ids.daily], email: "many-40@example.com" },
    });
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("retry-after"))).toBe(3600);
    expect((await refused.json()).error.message).toBe("Too many subscription requests; try again later.");
    expect(await w.h.deps.identityDeps.identity.userByEmail("default", "many-40@example.com")).toBeUndefined();
    // A signed-in reader mails only their own address: not held by it.
    const reader = await w.person("many-reader@example.com");
    const own = await w.call("PUT", "subscriptions", {
      headers: { cookie: reader.cookie },
      body: { subscribed: [w.ids.daily] },
    });
    expect(own.status).toBe(202);
  }, 120_000);

  it("links that are not ours answer a page with 404 and change nothing", async () => {
    for (const path of ["/v1/newsletters/confirm?token=nope", "/v1/newsletters/unsubscribe?token=a.b.c"]) {
      for (const method of ["GET", "POST"]) {
        const res = await w.h.request(method, path);
        expect(res.status).toBe(404);
        expect(res.headers.get("content-type")).toStartWith("text/html");
      }
    }
    expect((await w.h.request("POST", "/v1/newsletters/confirm")).status).toBe(404);
  });
});

describe("a server that cannot send mail", () => {
  let w: NewsletterWorld;
  beforeAll(async () => {
    w = await newsletterWorld("embedded", { mailTransport: noMailTransport() });
  }, 60_000);
  afterAll(() => w.stop(), 60_000);

  it("answers 503 without Retry-After for a PUT that needs a confirmation mail, storing nothing; single opt-in still works", async () => {
    const ids = await w.lists();
    const ann = await w.person("ann@example.com");
    const headers = { cookie: ann.cookie };
    const res = await w.call("PUT", "subscriptions", { headers, body: { subscribed: [ids.daily, ids.weekly] } });
    expect(res.status).toBe(503);
    expect(res.headers.get("retry-after")).toBeNull();
    expect(await w.statuses(await w.call("GET", "subscriptions", { headers }))).toEqual({
      daily: "unknown",
      weekly: "unknown",
    });
    const weekly = await w.call("PUT", "subscriptions", { headers, body: { subscribed: [ids.weekly] } });
    expect(weekly.status).toBe(200);
  });
});

describe("links are built only on origins the service trusts", () => {
  let w: NewsletterWorld;
  beforeAll(async () => {
    w = await newsletterWorld("embedded", { config: { SVC_PUBLIC_URL: "" } });
  }, 60_000);
  afterAll(() => w.stop(), 60_000);

  it("refuses a PUT that would mail a link on a forged host (400), storing and mailing nothing", async () => {
    const ids = await w.lists();
    const ann = await w.person("ann@example.com");
    const put = (url: string) =>
      w.h.app.handle(
        new Request(url, {
          method: "PUT",
          headers: { "x-svc-site-id": "news", cookie: ann.cookie, "content-type": "application/json" },
          body: JSON.stringify({ subscribed: [ids.daily] }),
        }),
      );
    const forged = await put("http://evil.example/v1/newsletters/subscriptions");
    expect(forged.status).toBe(400);
    expect(await w.statuses(await w.call("GET", "subscriptions", { headers: { cookie: ann.cookie } }))).toEqual({
      daily: "unknown",
      weekly: "unknown",
    });
    // The tenant's public URL wins over the request's host, and links use /v1 from either mount.
    expect(
      (await w.h.admin("PUT", "/admin/tenants/default/public-url", { publicUrl: "https://id.acme.example" })).status,
    ).toBe(200);
    const ok = await put("http://evil.example/svc/v1/newsletters/subscriptions");
    expect(ok.status).toBe(202);
    const mail = (await w.mails(1)).at(-1)!;
    expect(w.confirmLink(mail).origin).toBe("https://id.acme.example");
    expect(w.confirmLink(mail).pathname).toBe("/v1/newsletters/confirm");
    expect(w.smtp.received.length).toBe(1);
  });
});
