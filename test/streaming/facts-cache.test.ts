import { expect, test } from "bun:test";
import { StreamingFactsCache } from "../../src/streaming/facts-cache";
import type { StoredRow, StreamingStore } from "../../src/streaming/store";

const USER = "0b5c2a3e-5d0f-4c1e-9a57-6f3f1d2b8c41";

type Pending = { resolve: (rows: StoredRow[]) => void; reject: (e: unknown) => void };

/** A store whose reads the test answers by hand; `read(n)` settles once the cache has made its n-th read. */
function manualStore() {
  const calls: PromiseWithResolvers<Pending>[] = [];
  const call = (n: number) => {
    calls[n] ??= Promise.withResolvers<Pending>();
    return calls[n];
  };
  let made = 0;
  const store = {
    rowsOf: () => new Promise<StoredRow[]>((resolve, reject) => call(made++).resolve({ resolve, reject })),
  } as unknown as StreamingStore;
  return { store, read: (n: number) => call(n).promise, reads: () => made };
}

const row = (score: number, windowEnd = 0): StoredRow => ({
  userId: USER,
  pipeline: "engagement",
  windowEnd,
  values: { score, cleared: null },
});

test("holds a loaded user's values, with cleared columns absent and window_end as ISO 8601", async () => {
  const { store, read, reads } = manualStore();
  const cache = new StreamingFactsCache(store);
  const loading = cache.get("t", "news", USER);
  expect(loading).toBeInstanceOf(Promise);
  (await read(0)).resolve([row(1)]);
  expect(await loading).toEqual({ engagement: { score: 1, window_end: "1970-01-01T00:00:00.000Z" } });
  // Held: synchronous, no read.
  expect(cache.get("t", "news", USER)).toEqual({ engagement: { score: 1, window_end: "1970-01-01T00:00:00.000Z" } });
  expect(reads()).toBe(1);
  cache.invalidate("t", `news\n${USER}`);
  expect(cache.get("t", "news", USER)).toBeInstanceOf(Promise);
});

test("a load in flight when its user is dropped answers its request but is not kept", async () => {
  const { store, read } = manualStore();
  const cache = new StreamingFactsCache(store);
  const loading = cache.get("t", "news", USER);
  const first = await read(0);
  // A write lands while the read is on its way: the read may have seen the row before it.
  cache.drop("t", "news", [USER]);
  first.resolve([row(1)]);
  expect(((await loading) as Record<string, Record<string, unknown>>).engagement?.score).toBe(1);
  // Not kept: the next request reads again and keeps what it reads.
  const again = cache.get("t", "news", USER);
  expect(again).toBeInstanceOf(Promise);
  (await read(1)).resolve([row(2, 1)]);
  await again;
  expect((cache.get("t", "news", USER) as Record<string, Record<string, unknown>>).engagement?.score).toBe(2);
});

test("a failed load keeps nothing and the next request reads again", async () => {
  const { store, read } = manualStore();
  const cache = new StreamingFactsCache(store);
  const loading = cache.get("t", "news", USER);
  (await read(0)).reject(new Error("store down"));
  await expect(loading).rejects.toThrow("store down");
  const again = cache.get("t", "news", USER);
  (await read(1)).resolve([]);
  expect(await again).toEqual({});
  expect(cache.get("t", "news", USER)).toEqual({});
  // Another site's values are apart.
  expect(cache.get("t", "sport", USER)).toBeInstanceOf(Promise);
});
