import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";

const DAY = 86_400_000;

describe.each(storeKinds)("a meter's retainDays in the deployed document (%s store)", (kind) => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let h: Harness;

  beforeAll(async () => {
    db = await freshDatabase(kind);
    h = await startHarness(db);
    const document = basicDocument();
    document.meters = {
      articles: { kind: "seen", allowance: 3, period: "month", timeZone: "Europe/London", retainDays: 90 },
      calls: { kind: "count", allowance: 2, period: "day", timeZone: "UTC" },
    } as typeof document.meters;
    await seedSite(h, "news", document);
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await db.drop();
  }, 60_000);

  it("keeps that meter's past periods for its days, and the others for SVC_RETAIN_METER_DAYS", async () => {
    const now = h.clock.now();
    const lastMonth = new Date(now - 40 * DAY).toISOString().slice(0, 7);
    const lastWeekDay = new Date(now - 10 * DAY).toISOString().slice(0, 10);
    for (const [meter, period] of [
      ["articles", lastMonth],
      ["calls", lastWeekDay],
    ]) {
      await db.db.execute(
        sql`insert into meter_keys (tenant_id, site_id, meter, period) values ('default', 'news', ${meter}, ${period})`,
      );
    }
    await h.deps.retention.sweep(now);
    const left = rowsOf<{ meter: string }>(
      await db.db.execute(
        sql`select meter from meter_keys where site_id = 'news' and period in (${lastMonth}, ${lastWeekDay})`,
      ),
    ).map((r) => r.meter);
    expect(left).toEqual(["articles"]);
  });

  it("refuses a retainDays that is not a whole number of days", async () => {
    const document = basicDocument();
    (document.meters as Record<string, Record<string, unknown>>).articles!.retainDays = -1;
    const res = await h.admin("POST", "/admin/tenants/default/sites/news/deploy", { document });
    expect(res.status).toBe(422);
  });
});
