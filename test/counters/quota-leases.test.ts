import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { openDatabase } from "../../db/client";
import { DrizzleLeaseStore } from "../../src/counters/drizzle-lease-store";
import {
  ENDGAME_MS,
  FIRST_CHUNK,
  MAX_CHUNK,
  MemoryLeaseStore,
  QuotaLeases,
  SETTLE_MS,
} from "../../src/counters/quota-leases";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { memoryLogger } from "../helpers/harness";
import { until } from "../helpers/wait";

const LIMIT = 2_000;
const WINDOW_MS = 10_000;
const T0 = Date.parse("2026-11-23T12:00:00Z");

/** Resolves a take to its answer (0 admitted, else Retry-After seconds). */
const answer = async (value: number | Promise<number>) => value;

describe("quota leases over one store shared by several processes", () => {
  it("admits exactly the limit per window across processes, and refuses the rest in memory", async () => {
    const store = new MemoryLeaseStore();
    const processes = [1, 2, 3].map(() => new QuotaLeases(LIMIT, WINDOW_MS, store, memoryLogger()));
    const answers = await Promise.all(
      Array.from({ length: 3_000 }, (_, i) => answer((processes[i % 3] as QuotaLeases).take("key-1", T0 + i))),
    );
    expect(answers.filter((a) => a === 0).length).toBe(LIMIT);
    // Chunks shrink as the window fills, so a full window costs more claims than a steady one,
    // and every refusal past the limit is answered in memory.
    const claims = store.claims;
    expect(claims).toBeLessThan(LIMIT / 20);
    await Promise.all(
      Array.from({ length: 600 }, (_, i) => answer((processes[i % 3] as QuotaLeases).take("key-1", T0))),
    );
    expect(store.claims).toBe(claims);
    expect(store.rows.get(`key-1\u0000${Math.floor(T0 / WINDOW_MS)}`)).toBe(LIMIT);
  });

  it("needs at most one round trip per 50 requests while a key runs well under its limit", async () => {
    const store = new MemoryLeaseStore();
    const processes = [1, 2].map(() => new QuotaLeases(LIMIT, WINDOW_MS, store, memoryLogger()));
    const answers = await Promise.all(
      Array.from({ length: 1_000 }, (_, i) => answer((processes[i % 2] as QuotaLeases).take("k", T0 + i))),
    );
    expect(answers.every((a) => a === 0)).toBe(true);
    expect(store.claims).toBeLessThanOrEqual(1_000 / 50);
  });

  it("refuses at most 0.1% of requests under the limit however the load is split", async () => {
    const store = new MemoryLeaseStore();
    const a = new QuotaLeases(LIMIT, WINDOW_MS, store, memoryLogger());
    const b = new QuotaLeases(LIMIT, WINDOW_MS, store, memoryLogger());
    // Bursts larger than a chunk queue behind one claim and must claim again, not be refused.
    const burst = await Promise.all(Array.from({ length: 3 * MAX_CHUNK }, (_, i) => answer(a.take("k", T0 + i))));
    expect(burst.every((x) => x === 0)).toBe(true);
    const rest = await Promise.all(
      Array.from({ length: LIMIT - 3 * MAX_CHUNK }, (_, i) => answer((i % 2 ? a : b).take("k", T0 + i))),
    );
    // Offered exactly the limit: what one process claimed and got no request for is refused
    // to the other (a false 429), at most 2 of 2,000.
    expect(rest.filter((x) => x !== 0).length).toBeLessThanOrEqual(LIMIT / 1000);
    // Stranded quota is still spent by the process holding it: the window ends exactly full.
    const more = await Promise.all(Array.from({ length: 20 }, (_, i) => answer((i % 2 ? a : b).take("k", T0 + 5_000))));
    const admitted = burst.length + [...rest, ...more].filter((x) => x === 0).length;
    expect(admitted).toBe(LIMIT);
    expect(more.filter((x) => x !== 0).every((x) => x === 5)).toBe(true);
  });

  it("answers Retry-After to the second of the window's end, and starts afresh in the next window", async () => {
    const store = new MemoryLeaseStore();
    const leases = new QuotaLeases(LIMIT, WINDOW_MS, store, memoryLogger());
    const start = Math.floor(T0 / WINDOW_MS) * WINDOW_MS;
    for (let i = 0; i < LIMIT; i++) expect(await answer(leases.take("k", start + 100))).toBe(0);
    expect(await answer(leases.take("k", start + 100))).toBe(10);
    expect(await answer(leases.take("k", start + 8_500))).toBe(2);
    expect(await answer(leases.take("k", start + 9_999))).toBe(1);
    expect(await answer(leases.take("k", start + WINDOW_MS))).toBe(0);
  });

  it("keeps keys apart", async () => {
    const store = new MemoryLeaseStore();
    const leases = new QuotaLeases(LIMIT, WINDOW_MS, store, memoryLogger());
    for (let i = 0; i < LIMIT; i++) await answer(leases.take("a", T0));
    expect(await answer(leases.take("a", T0))).toBeGreaterThan(0);
    expect(await answer(leases.take("b", T0))).toBe(0);
  });

  it("falls back to a per-process window while the store fails, and logs it once", async () => {
    const store = new MemoryLeaseStore();
    const logger = memoryLogger();
    const leases = new QuotaLeases(LIMIT, WINDOW_MS, store, logger);
    for (let i = 0; i < 10; i++) expect(await answer(leases.take("k", T0))).toBe(0);
    store.failing = true;
    const answers = await Promise.all(Array.from({ length: 2_500 }, () => answer(leases.take("k", T0))));
    expect(answers.filter((a) => a === 0).length).toBe(LIMIT - 10);
    expect(logger.lines.filter((l) => l.includes("rate window lease failed")).length).toBe(1);
  });
});

describe.each(storeKinds)("the lease table (%s store)", (kind) => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  beforeAll(async () => {
    db = await freshDatabase(kind);
  }, 60_000);
  afterAll(async () => {
    await db.drop();
  }, 60_000);

  it("never grants past the limit under concurrent claims, and grants what is left", async () => {
    const store = new DrizzleLeaseStore(db.db);
    const claims = await Promise.all(Array.from({ length: 30 }, () => store.claim("key-x", 42, 100, LIMIT)));
    expect(claims.reduce((sum, c) => sum + c.granted, 0)).toBe(LIMIT);
    expect(claims.filter((c) => c.granted === 0).length).toBe(10);
    expect(Math.max(...claims.map((c) => c.used))).toBe(LIMIT);
    expect(await store.claim("key-x", 42, 5, LIMIT)).toEqual({ granted: 0, used: LIMIT });
    expect(await store.claim("key-x", 43, 5, LIMIT)).toEqual({ granted: 5, used: 5 });
  });

  it("takes quota back only where the window is claimed to its limit, and reads what is claimed", async () => {
    const store = new DrizzleLeaseStore(db.db);
    await store.claim("full", 50, LIMIT, LIMIT);
    await store.claim("open", 50, 10, LIMIT);
    const back = await store.release(50, ["full", "open", "never"], [7, 5, 3], LIMIT, false);
    expect([...back]).toEqual([["full", LIMIT - 7]]);
    expect(await store.usage(50, ["full", "open", "never"])).toEqual(
      new Map([
        ["full", LIMIT - 7],
        ["open", 10],
      ]),
    );
    expect(await store.claim("full", 50, 100, LIMIT)).toEqual({ granted: 7, used: LIMIT });
  });

  it("prunes past windows", async () => {
    const store = new DrizzleLeaseStore(db.db);
    await store.prune(43);
    expect(await store.claim("key-x", 42, 5, LIMIT)).toEqual({ granted: 5, used: 5 });
    expect(await store.claim("key-x", 43, 5, LIMIT)).toEqual({ granted: 5, used: 10 });
  });

  it("prunes only its own windows' length: a minute's lease outlives the 10-s windows' prunes", async () => {
    const tenSeconds = new DrizzleLeaseStore(db.db, 10_000);
    const minute = new DrizzleLeaseStore(db.db, 60_000);
    // Window indices of a minute are smaller than those of 10 s at the same time.
    await minute.claim("checkout-x", 1_000, 15, 20);
    await tenSeconds.claim("decide-x", 6_000, 5, LIMIT);
    await tenSeconds.prune(6_001);
    expect(await minute.usage(1_000, ["checkout-x"])).toEqual(new Map([["checkout-x", 15]]));
    expect(await tenSeconds.usage(6_000, ["decide-x"])).toEqual(new Map());
    expect(await minute.claim("checkout-x", 1_000, 15, 20)).toEqual({ granted: 5, used: 20 });
    await minute.prune(1_001);
    expect(await minute.usage(1_000, ["checkout-x"])).toEqual(new Map());
  });
});

describe("a hung lease store", () => {
  it("counts a claim past the deadline as failed, so keyed decide is not held", async () => {
    const hung = {
      claim: () => new Promise<never>(() => {}),
      release: async () => new Map<string, number>(),
      usage: async () => new Map<string, number>(),
      prune: async () => {},
    };
    const logger = memoryLogger();
    const leases = new QuotaLeases(LIMIT, WINDOW_MS, hung, logger, 50);
    expect(await answer(leases.take("k", T0))).toBe(0);
    expect(logger.lines.some((l) => l.includes("no answer within 50 ms"))).toBe(true);
  });
});

/**
 * One key offered `offered` requests evenly over one window and split over two processes as
 * `quietGets` says: the bench's open-loop sender writes each request on the connection freed
 * last, so nearly all reach one process and the other gets one now and then (every 400th: one
 * each 1.3 s at 3,000 a window). Requests are answered one after another on a manual clock;
 * every SETTLE_MS of it both processes settle, as their timers would. Answers the admitted count
 * and the 429s answered before the 2,000th admission (refused while quota was left elsewhere).
 */
async function offerSplit(
  busy: QuotaLeases,
  quiet: QuotaLeases,
  offered = 3_000,
  quietGets = (i: number) => i % 400 === 399,
) {
  const start = Math.ceil(T0 / WINDOW_MS) * WINDOW_MS;
  let admitted = 0;
  let refusedEarly = 0;
  let nextSettle = start + SETTLE_MS;
  for (let i = 0; i < offered; i++) {
    const at = start + Math.floor((i * WINDOW_MS) / offered);
    while (at >= nextSettle) {
      await Promise.all([busy.settle(nextSettle), quiet.settle(nextSettle)]);
      nextSettle += SETTLE_MS;
    }
    const answered = await answer((quietGets(i) ? quiet : busy).take("over", at));
    if (answered === 0) admitted += 1;
    else if (admitted < LIMIT) refusedEarly += 1;
  }
  return { admitted, refusedEarly };
}

describe("quota held by a process that gets no more requests", () => {
  it("is handed back once the window is claimed to its limit, and the refusing process claims it", async () => {
    const store = new MemoryLeaseStore();
    const a = new QuotaLeases(LIMIT, WINDOW_MS, store, memoryLogger(), 1_000, { settleMs: 0 });
    const b = new QuotaLeases(LIMIT, WINDOW_MS, store, memoryLogger(), 1_000, { settleMs: 0 });
    expect(await answer(b.take("k", T0))).toBe(0); // b holds FIRST_CHUNK - 1
    while ((await answer(a.take("k", T0))) === 0);
    const window = `k\u0000${Math.floor(T0 / WINDOW_MS)}`;
    expect(store.rows.get(window)).toBe(LIMIT);
    // A settle with a request since the last one keeps the lease: b is in use.
    await b.settle(T0);
    expect(b.returned).toBe(0);
    // a refuses from memory, and finds nothing back yet.
    await a.settle(T0);
    expect(await answer(a.take("k", T0 + 1_000))).toBe(9);
    await b.settle(T0);
    expect(b.returned).toBe(FIRST_CHUNK - 1);
    expect(store.rows.get(window)).toBe(LIMIT - (FIRST_CHUNK - 1));
    await a.settle(T0);
    for (let i = 0; i < FIRST_CHUNK - 1; i++) expect(await answer(a.take("k", T0 + 1_000))).toBe(0);
    expect(await answer(a.take("k", T0 + 1_000))).toBe(9);
    // b claims again for its next request, and finds the window full.
    expect(await answer(b.take("k", T0 + 1_000))).toBe(9);
    expect(store.rows.get(window)).toBe(LIMIT);
  });

  it("is kept while the window still has quota: nothing is refused, so nothing moves", async () => {
    const store = new MemoryLeaseStore();
    const b = new QuotaLeases(LIMIT, WINDOW_MS, store, memoryLogger(), 1_000, { settleMs: 0 });
    expect(await answer(b.take("k", T0))).toBe(0);
    await b.settle(T0);
    await b.settle(T0);
    expect(b.returned).toBe(0);
    expect(store.rows.get(`k\u0000${Math.floor(T0 / WINDOW_MS)}`)).toBe(FIRST_CHUNK);
    // Spent down to half the chunk, no claim ahead yet: still the one claim.
    for (let i = 0; i < FIRST_CHUNK / 2 - 1; i++) expect(await answer(b.take("k", T0))).toBe(0);
    expect(store.claims).toBe(1);
  });

  it("a request that comes while its quota is being handed back waits for the settle, then is admitted", async () => {
    const store = new MemoryLeaseStore();
    const a = new QuotaLeases(LIMIT, WINDOW_MS, store, memoryLogger(), 1_000, { settleMs: 0 });
    const b = new QuotaLeases(LIMIT, WINDOW_MS, store, memoryLogger(), 1_000, { settleMs: 0 });
    expect(await answer(b.take("k", T0))).toBe(0);
    while ((await answer(a.take("k", T0))) === 0);
    await b.settle(T0); // b was in use
    const settling = b.settle(T0);
    const during = b.take("k", T0 + 100);
    await settling;
    // Handed back, then claimed again for the waiting request (nobody else took it meanwhile).
    expect(await answer(during)).toBe(0);
    expect(b.returned).toBe(FIRST_CHUNK - 1);
  });

  it("a hung hand-back holds no request past the deadline, and its quota is given up, never spent twice", async () => {
    const store = new MemoryLeaseStore();
    store.release = () => new Promise<never>(() => {});
    const b = new QuotaLeases(LIMIT, WINDOW_MS, store, memoryLogger(), 50, { settleMs: 0 });
    expect(await answer(b.take("k", T0))).toBe(0);
    await b.settle(T0); // in use
    const settling = b.settle(T0);
    expect(await answer(b.take("k", T0))).toBe(0);
    await settling;
    // The FIRST_CHUNK - 1 offered back are not spent here: the request claimed a new chunk.
    expect(store.claims).toBe(2);
  });

  it("settles on its own timer while a lease holds quota or refuses, until the quota is spent", async () => {
    const store = new MemoryLeaseStore();
    const a = new QuotaLeases(LIMIT, WINDOW_MS, store, memoryLogger(), 1_000, { settleMs: 20, now: () => T0 });
    const b = new QuotaLeases(LIMIT, WINDOW_MS, store, memoryLogger(), 1_000, { settleMs: 20, now: () => T0 });
    try {
      expect(await answer(b.take("k", T0))).toBe(0); // in use at b's first settle: it must look again
      while ((await answer(a.take("k", T0))) === 0);
      let admitted = 0;
      // b's timer settles every 20 ms and offers its unused quota back: a's takes are admitted as it does.
      await until(
        async () => {
          if ((await answer(a.take("k", T0 + 1_000))) === 0) admitted += 1;
          return admitted >= FIRST_CHUNK - 1;
        },
        2_000,
        5,
      );
      expect(admitted).toBe(FIRST_CHUNK - 1);
      expect(b.returned).toBe(FIRST_CHUNK - 1);
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  it.each([
    ["alternately", (i: number) => i % 2 === 1],
    ["one in four to the quiet one", (i: number) => i % 4 === 3],
    ["one in ten", (i: number) => i % 10 === 9],
    ["one in 400", (i: number) => i % 400 === 399],
  ])("refuses none of a key offered exactly its limit, split %s", async (_, quietGets) => {
    const store = new MemoryLeaseStore();
    const a = new QuotaLeases(LIMIT, WINDOW_MS, store, memoryLogger(), 1_000, { settleMs: 0 });
    const b = new QuotaLeases(LIMIT, WINDOW_MS, store, memoryLogger(), 1_000, { settleMs: 0 });
    // Chunks shrink with the window's remaining time: the quiet process never holds more than
    // it will spend before the window ends (before, one in ten admitted 1,924).
    expect((await offerSplit(a, b, LIMIT, quietGets)).admitted).toBe(LIMIT);
  });

  it("refuses at most 0.1% of a key offered exactly its limit while its traffic moves between processes in runs", async () => {
    // A seeded generator: arrivals uniform over the window, each request sent to the process
    // the last one went to, or (1 in 100, 1 in 1,000) to the other: runs of 0.5 s and of 5 s.
    let seed = 7;
    const random = () => {
      seed = (seed * 1664525 + 1013904223) >>> 0;
      return seed / 2 ** 32;
    };
    const start = Math.ceil(T0 / WINDOW_MS) * WINDOW_MS;
    let refused = 0;
    let offered = 0;
    for (const stay of [0.99, 0.999]) {
      for (let w = 0; w < 10; w++) {
        const store = new MemoryLeaseStore();
        const both = [1, 2].map(() => new QuotaLeases(LIMIT, WINDOW_MS, store, memoryLogger(), 1_000, { settleMs: 0 }));
        const times = Array.from({ length: LIMIT }, () => start + Math.floor(random() * WINDOW_MS)).sort(
          (x, y) => x - y,
        );
        let at = 0;
        let nextSettle = start + SETTLE_MS;
        for (const t of times) {
          while (t >= nextSettle) {
            await Promise.all(both.map((p) => p.settle(nextSettle)));
            nextSettle += SETTLE_MS;
          }
          if (random() > stay) at = 1 - at;
          if ((await answer((both[at] as QuotaLeases).take("k", t))) !== 0) refused += 1;
          offered += 1;
        }
      }
    }
    // Before chunks followed the process' own need and idle quota went back in the window's
    // last two seconds (the code before 2026-11-26): 457 of these 40,000 (1.1%).
    expect(refused).toBeLessThanOrEqual(offered / 1_000);
  });

  it("hands back idle quota in the window's last two seconds even while the window is not full", async () => {
    const store = new MemoryLeaseStore();
    const b = new QuotaLeases(LIMIT, WINDOW_MS, store, memoryLogger(), 1_000, { settleMs: 0 });
    const start = Math.ceil(T0 / WINDOW_MS) * WINDOW_MS;
    expect(await answer(b.take("k", start + 100))).toBe(0);
    await b.settle(start + 500); // in use
    await b.settle(start + WINDOW_MS - ENDGAME_MS - 1); // idle, but not yet the window's end
    expect(b.returned).toBe(0);
    await b.settle(start + WINDOW_MS - ENDGAME_MS);
    expect(b.returned).toBe(FIRST_CHUNK - 1);
    expect(store.rows.get(`k\u0000${start / WINDOW_MS}`)).toBe(1);
  });

  it("admits exactly the limit for the bench's over-limit key over two processes (memory store)", async () => {
    const store = new MemoryLeaseStore();
    const a = new QuotaLeases(LIMIT, WINDOW_MS, store, memoryLogger(), 1_000, { settleMs: 0 });
    const b = new QuotaLeases(LIMIT, WINDOW_MS, store, memoryLogger(), 1_000, { settleMs: 0 });
    const { admitted, refusedEarly } = await offerSplit(a, b);
    expect(admitted).toBe(LIMIT);
    // The quiet process hands back at the second settle after the window fills (the first may
    // find it in use), and the busy one sees it at the next: three settles of refusals at most.
    expect(refusedEarly).toBeLessThanOrEqual((3 * SETTLE_MS * 3_000) / WINDOW_MS);
    expect(a.settles + b.settles).toBeLessThanOrEqual((2 * WINDOW_MS) / SETTLE_MS);
  });
});

describe.if(Boolean(process.env.DATABASE_URL))("quota leases of two processes on one server database", () => {
  it("admit exactly the limit for the bench's over-limit key: the quiet process hands its quota back", async () => {
    const db = await freshDatabase("server");
    // Two processes: each its own connections to the same database.
    const other = await openDatabase({ url: db.url as string });
    try {
      const a = new QuotaLeases(LIMIT, WINDOW_MS, new DrizzleLeaseStore(db.db), memoryLogger(), 5_000, { settleMs: 0 });
      const b = new QuotaLeases(LIMIT, WINDOW_MS, new DrizzleLeaseStore(other.db), memoryLogger(), 5_000, {
        settleMs: 0,
      });
      const { admitted } = await offerSplit(a, b);
      expect(admitted).toBe(LIMIT);
      expect(b.returned).toBeGreaterThan(0);
      // Settles cost at most one statement pair per process and SETTLE_MS, only while needed.
      expect(a.settles + b.settles).toBeLessThanOrEqual((2 * WINDOW_MS) / SETTLE_MS);
    } finally {
      await other.close();
      await db.drop();
    }
  }, 60_000);
});
