import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { RECOMMENDATIONS_CLIENT_PER_MINUTE } from "../../src/recommendations/routes";
import { freshDatabase, storeKinds } from "../helpers/databases";
import type { FakeRecombee } from "../helpers/fake-recombee";
import { type Harness, serveHarness, startHarness } from "../helpers/harness";
import { ORIGIN, recommendationWorld } from "./fixture";

const SITE_PER_MINUTE = 100;
const CLIENT_POLICY = `"recommendations-client";q=${RECOMMENDATIONS_CLIENT_PER_MINUTE};w=60`;
const SITE_POLICY = `"recommendations-site";q=${SITE_PER_MINUTE};w=60`;

/**
 * The browser recommendation mount's windows (issue 36, defect 6: 300 anonymous calls made 300
 * paid engine calls). Over a real socket from 127.0.0.1, a trusted proxy, so each
 * `X-Forwarded-For` is a client of its own; the engine is a real HTTP stand-in counting calls.
 */
describe.each(storeKinds)("recommendations: the browser mount's rate windows (%s store)", (kind) => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let h: Harness;
  let engine: FakeRecombee;
  let base: string;
  let stopServer: () => Promise<void> | void;
  let n = 0;

  beforeAll(async () => {
    db = await freshDatabase(kind);
    h = await startHarness(db, {
      config: {
        SVC_TRUSTED_PROXIES: "loopback",
        SVC_RECOMMENDATIONS_SITE_PER_MINUTE: String(SITE_PER_MINUTE),
      },
    });
    ({ engine } = await recommendationWorld(h));
    const server = serveHarness(h);
    base = server.base;
    stopServer = server.stop;
  }, 60_000);
  afterAll(async () => {
    await stopServer();
    engine.stop();
    await h.stop();
    await db.drop();
  }, 60_000);

  /** One anonymous call with a fresh device id (so each would be an engine call) from `client`. */
  const call = (client: string) =>
    fetch(`${base}/svc/v1/recommendations?domainUserId=device-${++n}`, {
      headers: { origin: ORIGIN, "x-svc-site-id": "news", "x-forwarded-for": client },
    });

  /** The clock at the start of a fresh minute: every window starts afresh. */
  const nextMinute = () => h.clock.set((Math.floor(h.clock.now() / 60_000) + 1) * 60_000 + 5_000);

  it("holds 300 anonymous calls from one client to its window: 60 engine calls, the rest 429 with Retry-After", async () => {
    nextMinute();
    const before = engine.calls.length;
    const statuses: number[] = [];
    for (let i = 0; i < 300; i++) {
      const res = await call("203.0.113.7");
      statuses.push(res.status);
      // A call its client's window refuses never reaches (or names) the site's.
      expect(res.headers.get("ratelimit-policy")).toBe(
        res.status === 429 ? CLIENT_POLICY : `${CLIENT_POLICY}, ${SITE_POLICY}`,
      );
      if (res.status === 429) {
        expect(res.headers.get("retry-after")).toBe("55");
        expect(res.headers.get("ratelimit")).toBe('"recommendations-client";r=0;t=55');
        expect(res.headers.get("access-control-allow-origin")).toBe(ORIGIN);
        expect(((await res.json()) as { error: { code: string } }).error.code).toBe("rate_limited");
      } else {
        await res.arrayBuffer();
      }
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(RECOMMENDATIONS_CLIENT_PER_MINUTE);
    expect(statuses.filter((s) => s === 429)).toHaveLength(300 - RECOMMENDATIONS_CLIENT_PER_MINUTE);
    expect(engine.calls.length - before).toBe(RECOMMENDATIONS_CLIENT_PER_MINUTE);
  }, 60_000);

  it("opens the client's window again in the next minute", async () => {
    nextMinute();
    const before = engine.calls.length;
    const res = await call("203.0.113.7");
    expect(res.status).toBe(200);
    expect(res.headers.get("ratelimit")).toBe(
      `"recommendations-client";r=${RECOMMENDATIONS_CLIENT_PER_MINUTE - 1};t=55, "recommendations-site";r=${SITE_PER_MINUTE - 1};t=55`,
    );
    expect(engine.calls.length - before).toBe(1);
  }, 60_000);

  it("holds many clients to the site's window, and a client refused by its own window spends none of it", async () => {
    nextMinute();
    const before = engine.calls.length;
    // One client spends its own window (60 of the site's 100), then 100 more calls refused by it.
    for (let i = 0; i < RECOMMENDATIONS_CLIENT_PER_MINUTE + 100; i++) await (await call("198.51.100.1")).arrayBuffer();
    expect(engine.calls.length - before).toBe(RECOMMENDATIONS_CLIENT_PER_MINUTE);
    // 20 other clients, 5 calls each: the 40 left of the site's window are answered, then 429.
    const statuses: number[] = [];
    for (let c = 0; c < 20; c++) {
      for (let i = 0; i < 5; i++) {
        const res = await call(`198.51.100.${c + 10}`);
        statuses.push(res.status);
        if (res.status === 429) {
          expect(res.headers.get("ratelimit-policy")).toBe(`${CLIENT_POLICY}, ${SITE_POLICY}`);
          expect(res.headers.get("ratelimit")).toContain('"recommendations-site";r=0;t=55');
          expect(res.headers.get("retry-after")).toBe("55");
        }
        await res.arrayBuffer();
      }
    }
    expect(statuses.filter((s) => s === 200)).toHaveLength(SITE_PER_MINUTE - RECOMMENDATIONS_CLIENT_PER_MINUTE);
    expect(engine.calls.length - before).toBe(SITE_PER_MINUTE);
  }, 60_000);
});
