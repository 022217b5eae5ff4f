import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { DrizzleLeaseStore, MAX_CHUNK, MemoryLeaseStore, QuotaLeases } from "../../src/counters/quota-leases";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { memoryLogger } from "../helpers/harness";

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

  it("prunes past windows", async () => {
    const store = new DrizzleLeaseStore(db.db);
    await store.prune(43);
    expect(await store.claim("key-x", 42, 5, LIMIT)).toEqual({ granted: 5, used: 5 });
    expect(await store.claim("key-x", 43, 5, LIMIT)).toEqual({ granted: 5, used: 10 });
  });
});

describe("a hung lease store", () => {
  it("counts a claim past the deadline as failed, so keyed decide is not held", async () => {
    const hung = { claim: () => new Promise<never>(() => {}), prune: async () => {} };
    const logger = memoryLogger();
    const leases = new QuotaLeases(LIMIT, WINDOW_MS, hung, logger, 50);
    expect(await answer(leases.take("k", T0))).toBe(0);
    expect(logger.lines.some((l) => l.includes("no answer within 50 ms"))).toBe(true);
  });
});
