import { beforeAll, describe, expect, it } from "bun:test";
import { giftDocument } from "../fixtures/documents";
import { signedContent } from "../helpers/content";
import { storeKinds } from "../helpers/databases";
import { servedSuite } from "../helpers/served-suite";
import { ofType, openSse } from "../helpers/sse";
import { until } from "../helpers/wait";

const combos = storeKinds.flatMap((kind) => (["h1", "node", "bun"] as const).map((server) => [kind, server] as const));

describe.each(combos)("the interventions stream (%s store, %s transport)", (kind, transport) => {
  const suite = servedSuite(kind, {
    config: {
      SVC_HTTP_SERVER: transport,
      HOST: "127.0.0.1",
      SVC_SSE_HEARTBEAT_MS: "100",
      SVC_SSE_STREAMS_PER_KEY: "3",
    },
    site: giftDocument(),
  });
  let userId: string;

  beforeAll(async () => {
    const created = await suite.h.admin("POST", "/admin/tenants/default/users", { email: "reader@news.example" });
    userId = ((await created.json()) as { user: { id: string } }).user.id;
  }, 60_000);

  const headers = () => ({ "x-svc-site-id": "news", authorization: `Bearer ${suite.key}` });
  const open = (query = "", extra: Record<string, string> = {}) =>
    openSse(`${suite.server.base}/v1/decide/interventions${query}`, { ...headers(), ...extra });
  const data = (f: { data?: string }) => JSON.parse(f.data ?? "null");

  it("streams text/event-stream with heartbeats, and tells of a live deploy and a staged preview", async () => {
    const stream = await open();
    try {
      expect(stream.response.status).toBe(200);
      expect(stream.response.headers.get("content-type")).toStartWith("text/event-stream");
      await stream.next((f) => f.comment?.startsWith("heartbeat") === true);
      expect(
        (await suite.h.admin("POST", "/admin/tenants/default/sites/news/deploy", { document: giftDocument() })).status,
      ).toBe(200);
      const live = await stream.next(ofType("deploy"));
      expect(data(live)).toMatchObject({ type: "deploy", site: "news", document: "live" });
      expect(live.id).toMatch(/^c\d+$/);
      const staged = await suite.h.admin("POST", "/admin/tenants/default/sites/news/deploy", {
        document: giftDocument(),
        preview: true,
      });
      expect(staged.status).toBe(200);
      expect(data(await stream.next(ofType("deploy")))).toMatchObject({ document: "preview" });
    } finally {
      stream.close();
    }
  });

  it("tells a subject's stream of its grants added and revoked, and other subjects' streams nothing", async () => {
    const mine = await open(`?subjects=${userId},device-1`);
    const other = await open("?subjects=someone-else");
    try {
      await suite.h.admin("POST", `/admin/tenants/default/users/${userId}/grants`, { grant: "premium" });
      expect(data(await mine.next(ofType("grants")))).toEqual({ type: "grants", userId });
      await suite.h.admin("DELETE", `/admin/tenants/default/users/${userId}/grants/premium`);
      expect(data(await mine.next(ofType("grants")))).toEqual({ type: "grants", userId });
      // A heartbeat after both: the other stream has been told nothing in between.
      await other.next((f) => f.comment?.startsWith("heartbeat") === true);
      await other.next((f) => f.comment?.startsWith("heartbeat") === true);
      expect(other.frames.some((f) => f.event === "grants")).toBe(false);
    } finally {
      mine.close();
      other.close();
    }
  });

  it("tells of streaming writes (only the stream's own subjects) and gift changes", async () => {
    const mine = await open("?subjects=u-1");
    const site = await open();
    try {
      await suite.h.deps.changes.publish({ topic: "streaming", tenantId: "default", subject: "news\nu-1,u-2" });
      expect(data(await mine.next(ofType("streaming")))).toEqual({ type: "streaming", userIds: ["u-1"] });
      expect(data(await site.next(ofType("streaming")))).toEqual({ type: "streaming", userIds: ["u-1", "u-2"] });
      await suite.h.deps.changes.publish({
        topic: "gift",
        tenantId: "default",
        subject: "00000000-0000-4000-8000-0000000000a1",
      });
      expect(data(await site.next(ofType("gift")))).toEqual({
        type: "gift",
        giftId: "00000000-0000-4000-8000-0000000000a1",
      });
    } finally {
      mine.close();
      site.close();
    }
  });

  it("tells of a gift link's new reader, from a real decide, once per reader", async () => {
    const stream = await open();
    try {
      const minted = await suite.h.request("POST", "/v1/gift-links", {
        headers: headers(),
        body: { userId, contentId: "gifted-1" },
      });
      expect(minted.status).toBe(201);
      const { token, giftId } = (await minted.json()) as { token: string; giftId: string };
      const read = () =>
        suite.h.request("POST", "/v1/decide", {
          headers: headers(),
          body: {
            features: ["paywall"],
            deviceId: "gift-reader",
            content: signedContent({ id: "gifted-1" }),
            giftLink: token,
          },
        });
      const first = (await (await read()).json()) as { decisions: { paywall: { outcome: string } } };
      expect(first.decisions.paywall.outcome).toBe("gifted");
      expect(data(await stream.next(ofType("gift")))).toEqual({ type: "gift", giftId });
      // The same reader again is not a new redemption: no second event before the next heartbeats.
      await read();
      await stream.next((f) => f.comment?.startsWith("heartbeat") === true);
      await stream.next((f) => f.comment?.startsWith("heartbeat") === true);
      expect(stream.frames.filter((f) => f.event === "gift")).toHaveLength(1);
    } finally {
      stream.close();
    }
  });

  it("tells of a meter period rolling over", async () => {
    const stream = await open();
    try {
      await stream.next((f) => f.comment?.startsWith("heartbeat") === true);
      // The `calls` meter is daily (UTC): the next day is a new period.
      suite.h.clock.advance(24 * 60 * 60_000);
      const rolled = await stream.next((f) => f.event === "meter_period" && data(f).meter === "calls");
      expect(data(rolled)).toEqual({ type: "meter_period", meter: "calls", period: "2026-11-22" });
    } finally {
      stream.close();
    }
  });

  it("resumes after Last-Event-ID with what was missed, and resets past the window", async () => {
    const first = await open();
    let lastId: string;
    try {
      await suite.h.admin("POST", `/admin/tenants/default/users/${userId}/grants`, { grant: "a" });
      lastId = (await first.next(ofType("grants"))).id as string;
    } finally {
      first.close();
    }
    await suite.h.admin("POST", `/admin/tenants/default/users/${userId}/grants`, { grant: "b" });
    await suite.h.admin("POST", "/admin/tenants/default/sites/news/deploy", { document: giftDocument() });
    const resumed = await open("", { "last-event-id": lastId });
    try {
      expect(data(await resumed.next(ofType("grants")))).toEqual({ type: "grants", userId });
      expect(data(await resumed.next(ofType("deploy")))).toMatchObject({ document: "live" });
    } finally {
      resumed.close();
    }
    const stale = await open("", { "last-event-id": "c1" });
    try {
      expect(data(await stale.next(ofType("reset")))).toEqual({ type: "reset", reason: "resume_window_passed" });
    } finally {
      stale.close();
    }
  });

  it("caps open streams per key (429 with Retry-After), and frees a slot when a stream closes", async () => {
    // An earlier test's streams are let go as their connections close.
    await until(() => suite.h.deps.interventions.streamsOf(suite.keyId) === 0, 5_000, 20);
    const streams = [await open(), await open(), await open()];
    try {
      // The draft's RateLimit fields: a cap on streams open at once (no window), and the places left.
      for (const s of streams) {
        expect(s.response.headers.get("ratelimit-policy")).toBe('"interventions-streams";q=3;qu="concurrent-requests"');
      }
      expect(streams.map((s) => s.response.headers.get("ratelimit"))).toEqual([
        '"interventions-streams";r=2',
        '"interventions-streams";r=1',
        '"interventions-streams";r=0',
      ]);
      const refused = await fetch(`${suite.server.base}/v1/decide/interventions`, { headers: headers() });
      expect(refused.status).toBe(429);
      expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(refused.headers.get("ratelimit")).toBe('"interventions-streams";r=0');
      expect(refused.headers.get("ratelimit-policy")).toBe('"interventions-streams";q=3;qu="concurrent-requests"');
      expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("rate_limited");
      (streams.pop() as { close(): void }).close();
      await until(() => suite.h.deps.interventions.streamsOf(suite.keyId) <= 2, 5_000, 20);
      const again = await open();
      expect(again.response.status).toBe(200);
      streams.push(again);
    } finally {
      for (const s of streams) s.close();
    }
  });

  it("refuses a missing key, a wrong site and bad subjects in the envelope", async () => {
    expect(
      (await fetch(`${suite.server.base}/v1/decide/interventions`, { headers: { "x-svc-site-id": "news" } })).status,
    ).toBe(401);
    expect(
      (
        await fetch(`${suite.server.base}/v1/decide/interventions`, {
          headers: { authorization: `Bearer ${suite.key}` },
        })
      ).status,
    ).toBe(400);
    const bad = await fetch(`${suite.server.base}/v1/decide/interventions?subjects=,,`, { headers: headers() });
    expect(bad.status).toBe(422);
  });

  it("closes a stream when its key expires, as revocation does", async () => {
    const issued = await suite.h.admin("POST", "/admin/tenants/default/sites/news/keys", {
      name: "one day",
      expiresInDays: 1,
    });
    const expiring = (await issued.json()) as { key: string; id: string };
    const open = () =>
      openSse(`${suite.server.base}/v1/decide/interventions`, {
        "x-svc-site-id": "news",
        authorization: `Bearer ${expiring.key}`,
      });
    const stream = await open();
    try {
      expect(stream.response.status).toBe(200);
      // Still open across heartbeats before the expiry.
      await stream.next((f) => f.comment?.startsWith("heartbeat") === true);
      suite.h.clock.advance(24 * 60 * 60_000 - 60_000);
      await stream.next((f) => f.comment?.startsWith("heartbeat") === true);
      expect(suite.h.deps.interventions.streamsOf(expiring.id)).toBe(1);
      suite.h.clock.advance(60_000);
      await stream.closed();
      expect(suite.h.deps.interventions.streamsOf(expiring.id)).toBe(0);
      // And the key opens nothing more.
      const again = await fetch(`${suite.server.base}/v1/decide/interventions`, {
        headers: { "x-svc-site-id": "news", authorization: `Bearer ${expiring.key}` },
      });
      expect(again.status).toBe(401);
    } finally {
      stream.close();
    }
  });

  it("closes a stream when its key is revoked", async () => {
    const issued = await suite.h.admin("POST", "/admin/tenants/default/sites/news/keys", { name: "short-lived" });
    const other = (await issued.json()) as { key: string; id: string };
    const stream = await openSse(`${suite.server.base}/v1/decide/interventions`, {
      "x-svc-site-id": "news",
      authorization: `Bearer ${other.key}`,
    });
    expect(stream.response.status).toBe(200);
    await suite.h.admin("POST", `/admin/tenants/default/sites/news/keys/${other.id}/revoke`);
    await stream.closed();
  });
});
