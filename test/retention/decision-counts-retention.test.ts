import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { JobQueue } from "../../src/jobs/queue";
import { DrizzleJobStore } from "../../src/jobs/store";
import { RetentionSweeper } from "../../src/retention/sweeper";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { manualClock, memoryLogger, testConfig } from "../helpers/harness";

const HOUR = 3_600_000;
const DAY = 86_400_000;
const NOW = Date.parse("2027-03-15T12:00:00Z");

describe.each(storeKinds)("retention of decision counts, each grain for its own days (%s store)", (kind) => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  const settings = { ...testConfig().retention, batch: 2 };

  beforeAll(async () => {
    db = await freshDatabase(kind);
    const rows: [string, number][] = [
      ["minute", NOW - 3 * DAY],
      ["minute", NOW - 3 * DAY - 60_000],
      ["minute", NOW - HOUR],
      ["hour", NOW - 36 * DAY],
      ["hour", NOW - 7 * DAY],
      ["day", NOW - 801 * DAY],
      ["day", NOW - 40 * DAY],
    ];
    for (const [grain, at] of rows) {
      await db.db.execute(sql`insert into decision_counts
        (tenant_id, site_id, grain, bucket, feature, outcome, experiment, variant, verdict, offer, count)
        values ('t', 's', ${grain}, ${new Date(at).toISOString()}::timestamptz, 'paywall', 'wall', '', '', 'deny', '', 1)`);
    }
  }, 60_000);
  afterAll(() => db.drop(), 60_000);

  it("sweeps minutes after 2 days, hours after 35 and days after 800, and keeps the rest", async () => {
    const sweeper = new RetentionSweeper({
      db: db.db,
      jobs: new JobQueue(new DrizzleJobStore(db.db), memoryLogger(), manualClock(NOW).now, false),
      settings,
      now: () => NOW,
      logger: memoryLogger(),
      vacuum: false,
    });
    const swept = await sweeper.sweep(NOW);
    expect(swept.decision_counts).toBe(4);
    const left = rowsOf<{ grain: string; age: number }>(
      await db.db.execute(
        sql`select grain, round(extract(epoch from (${new Date(NOW).toISOString()}::timestamptz - bucket)) / 3600)::int as age from decision_counts order by grain, bucket`,
      ),
    ).map((r) => [r.grain, Number(r.age)]);
    expect(left).toEqual([
      ["day", 40 * 24],
      ["hour", 7 * 24],
      ["minute", 1],
    ]);
  });
});
