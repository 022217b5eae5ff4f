import { describe, expect, it } from "bun:test";
import { SETTLE_MS } from "../../src/counters/quota-leases";
import { BROWSER_LIMIT, DECIDE_WINDOW_MS } from "../../src/deps";
import { basicDocument, subscribeJourney } from "../fixtures/documents";
import { type Harness, seedSite } from "../helpers/harness";
import { until } from "../helpers/wait";
import { twoProcesses } from "../helpers/worlds";

const ORIGIN = "https://news.example";

/**
 * The browser windows (200 per 10 s per client per site) across two processes on one Postgres
 * server: each process leases its share of a client's window from Postgres, as keyed decide does,
 * so however one client's requests are spread over both at once, never more than 200 are
 * answered in the window, and exactly 200 once what one process claimed and did not spend has
 * come back at its next settle (the bound docs/known-limits.md states: in a burst the other may
 * refuse that much early). (In-process harnesses: every request comes from one client address.)
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
  const admitted = (r: Response) => r.status === 200 || r.status === 302;

  /** `n` requests spread over both processes at once; the statuses, counted. */
  const spread = async (n: number, call: (h: Harness) => Promise<Response>) => {
    const statuses = await Promise.all(Array.from({ length: n }, (_, i) => call(i % 2 === 0 ? w.a : w.b)));
    return {
      ok: statuses.filter(admitted).length,
      refused: statuses.filter((s) => s.status === 429).length,
      all: statuses,
    };
  };

  /**
   * What the window admits after a burst that admitted `ok`: one request at a time on each
   * process in turn, until the window has admitted its limit (quota held unspent comes back
   * within a few settles) or 20 settles passed; then both refuse 10 more each.
   */
  const drain = async (ok: number, call: (h: Harness) => Promise<Response>) => {
    let total = ok;
    let turn = 0;
    await until(
      async () => {
        while (total < BROWSER_LIMIT) {
          const answer = await call(turn++ % 2 === 0 ? w.a : w.b);
          if (!admitted(answer)) return false;
          total += 1;
        }
        return true;
      },
      20 * SETTLE_MS,
      SETTLE_MS / 5,
    );
    const after = await Promise.all(Array.from({ length: 20 }, (_, i) => call(i % 2 === 0 ? w.a : w.b)));
    return { total, afterAdmitted: after.filter(admitted).length };
  };

  const freshWindow = () => {
    // A fresh window on both clocks (they follow each other).
    const next = (Math.floor(w.a.clock.now() / DECIDE_WINDOW_MS) + 1) * DECIDE_WINDOW_MS + 500;
    w.a.clock.set(next);
    w.b.clock.set(next);
  };

  it("answers at most 200 of one client's 300 browser decides spread over both, and exactly 200 in each window", async () => {
    for (let round = 0; round < 2; round++) {
      freshWindow();
      const { ok, refused, all } = await spread(300, browserDecide);
      expect(ok).toBeLessThanOrEqual(BROWSER_LIMIT);
      expect(ok + refused).toBe(300);
      const refusal = all.find((r) => r.status === 429) as Response;
      expect(Number(refusal.headers.get("retry-after"))).toBeGreaterThan(0);
      expect(await drain(ok, browserDecide)).toEqual({ total: BROWSER_LIMIT, afterAdmitted: 0 });
    }
  }, 60_000);

  it("counts forward in a window of its own, exact across both too", async () => {
    freshWindow();
    // Browser decide spends its window first: forward's is untouched by it.
    const decided = await spread(BROWSER_LIMIT, browserDecide);
    expect(await drain(decided.ok, browserDecide)).toEqual({ total: BROWSER_LIMIT, afterAdmitted: 0 });
    const { ok, refused } = await spread(260, forward);
    expect(ok).toBeLessThanOrEqual(BROWSER_LIMIT);
    expect(ok + refused).toBe(260);
    expect(await drain(ok, forward)).toEqual({ total: BROWSER_LIMIT, afterAdmitted: 0 });
  }, 60_000);
});
