import { describe, expect, it } from "bun:test";
import { BROWSER_LIMIT } from "../../src/deps";
import { basicDocument, subscribeJourney } from "../fixtures/documents";
import { type Harness, seedSite } from "../helpers/harness";
import { twoProcesses } from "../helpers/worlds";

const ORIGIN = "https://news.example";

/**
 * The browser windows (200 per 10 s per client per site) across two processes on one Postgres
 * server: each process leases its share of a client's window from Postgres, as keyed decide does,
 * so however one client's requests are spread over both at once, exactly 200 are answered in the
 * window. (In-process harnesses: every request comes from one client address.)
 */
describe.if(Boolean(process.env.DATABASE_URL))("browser windows across two processes (server store)", () => {
  const w = twoProcesses("server", async (a) => {
    await seedSite(
      a,
      "news",
      basicDocument({ features: { ...basicDocument().features, subscribe: subscribeJourney() } }),
    );
  });

  const browserDecide = (h: Harness) =>
    h.request("POST", "/svc/v1/decide", {
      headers: { "x-svc-site-id": "news", origin: ORIGIN },
      body: { features: ["section"] },
    });
  const forward = (h: Harness) => h.request("GET", "/svc/v1/decide/forward?feature=subscribe&site=news");

  /** `n` requests spread over both processes at once; the statuses, counted. */
  const spread = async (n: number, call: (h: Harness) => Promise<Response>) => {
    const statuses = await Promise.all(Array.from({ length: n }, (_, i) => call(i % 2 === 0 ? w.a : w.b)));
    const count = (status: number) => statuses.filter((s) => s.status === status).length;
    return { ok: count(200) + count(302), refused: count(429), all: statuses };
  };

  it("answers exactly 200 of one client's 300 browser decides spread over both, in each window", async () => {
    for (let round = 0; round < 2; round++) {
      // A fresh window on both clocks (they follow each other).
      const next = (Math.floor(w.a.clock.now() / 10_000) + 1) * 10_000 + 500;
      w.a.clock.set(next);
      w.b.clock.set(next);
      const { ok, refused, all } = await spread(300, browserDecide);
      expect(ok).toBe(BROWSER_LIMIT);
      expect(refused).toBe(300 - BROWSER_LIMIT);
      const refusal = all.find((r) => r.status === 429) as Response;
      expect(Number(refusal.headers.get("retry-after"))).toBeGreaterThan(0);
    }
  }, 60_000);

  it("counts forward in a window of its own, exact across both too", async () => {
    const next = (Math.floor(w.a.clock.now() / 10_000) + 1) * 10_000 + 500;
    w.a.clock.set(next);
    w.b.clock.set(next);
    // Browser decide spends its window first: forward's is untouched by it.
    expect((await spread(BROWSER_LIMIT, browserDecide)).ok).toBe(BROWSER_LIMIT);
    const { ok, refused } = await spread(260, forward);
    expect(ok).toBe(BROWSER_LIMIT);
    expect(refused).toBe(60);
  }, 60_000);
});
