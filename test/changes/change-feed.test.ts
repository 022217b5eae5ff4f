import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { changeLog } from "../../db/schema";
import { type Change, ChangeFeed } from "../../src/changes/change-feed";
import { freshDatabase } from "../helpers/databases";
import { memoryLogger } from "../helpers/harness";

/**
 * The embedded store's feed (pollMs 0) has no timer: that store belongs to one process, which
 * applies its own changes as it publishes them, and no query runs on a timer on its thread.
 */
describe("a change feed without a timer (the embedded store's)", () => {
  let database: Awaited<ReturnType<typeof freshDatabase>>;
  beforeAll(async () => {
    database = await freshDatabase("embedded");
  }, 60_000);
  afterAll(() => database?.drop(), 60_000);

  test("applies what it publishes at once, and reads nothing on its own", async () => {
    const applied: Change[] = [];
    const feed = new ChangeFeed(database, async (c) => void applied.push(c), memoryLogger(), 0);
    await feed.start();
    try {
      // A row no publish() announced is not picked up by any timer...
      await database.db.insert(changeLog).values({ topic: "site", tenantId: "default", subject: "behind" });
      await Bun.sleep(150);
      expect(applied).toEqual([]);
      // ...and a publish applies everything past the last row seen, in order, before returning.
      await feed.publish({ topic: "key", tenantId: "default", subject: "k1" });
      expect(applied.map((c) => c.subject)).toEqual(["behind", "k1"]);
    } finally {
      await feed.stop();
    }
  });

  test("with a poll interval, a row written behind its back is applied by the timer", async () => {
    const applied: Change[] = [];
    // Settles on the first change the feed applies (or after 2 s, and the expectation fails).
    const first = Promise.withResolvers<void>();
    const feed = new ChangeFeed(
      database,
      async (c) => {
        applied.push(c);
        first.resolve();
      },
      memoryLogger(),
      20,
    );
    await feed.start();
    const bound = setTimeout(first.resolve, 2_000);
    try {
      await database.db.insert(changeLog).values({ topic: "site", tenantId: "default", subject: "polled" });
      await first.promise;
      expect(applied.map((c) => c.subject)).toEqual(["polled"]);
    } finally {
      clearTimeout(bound);
      await feed.stop();
    }
  });
});
