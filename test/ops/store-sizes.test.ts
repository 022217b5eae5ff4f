import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { STORE_SIZES_TTL_MS } from "../../src/ops/store-sizes";
import { freshDatabase, type StoreKind, storeKinds } from "../helpers/databases";
import { type Harness, OPERATOR_TOKEN, startHarness } from "../helpers/harness";

interface Stats {
  databaseBytes: number;
  tables: { table: string; rows: number | null; bytes: number }[];
  readAt: string;
}

describe.each(storeKinds)("the store's size in /metrics and /admin/db/stats (%s store)", (kind: StoreKind) => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let h: Harness;

  beforeAll(async () => {
    db = await freshDatabase(kind);
    h = await startHarness(db);
    await h.admin("POST", "/admin/tenants", { id: "t2" });
    await h.admin("POST", "/admin/tenants", { id: "t3" });
    // The estimate is Postgres' own: known once the table was analysed (on the embedded store the
    // retention sweep does it; on a server, autovacuum).
    await db.db.execute(sql`analyze tenants`);
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await db.drop();
  }, 60_000);

  const stats = async () => (await (await h.admin("GET", "/admin/db/stats")).json()) as Stats;

  it("answers the database size and every table's row estimate and bytes to the operator", async () => {
    h.clock.advance(STORE_SIZES_TTL_MS);
    const out = await stats();
    expect(out.databaseBytes).toBeGreaterThan(1_000_000);
    const tenants = out.tables.find((t) => t.table === "tenants");
    expect(tenants?.rows).toBe(2);
    expect(tenants?.bytes).toBeGreaterThan(0);
    expect(out.tables.map((t) => t.table)).toContain("change_log");
    expect(out.tables.map((t) => t.table)).toContain("meter_counts");
  });

  it("refuses the stats without the operator token", async () => {
    const res = await h.request("GET", "/admin/db/stats");
    expect(res.status).toBe(401);
  });

  it("reads the catalog again only after the cache's time, not per scrape", async () => {
    h.clock.advance(STORE_SIZES_TTL_MS);
    const first = await stats();
    await h.admin("POST", "/admin/tenants", { id: "t4" });
    await db.db.execute(sql`analyze tenants`);
    const cached = await stats();
    expect(cached.readAt).toBe(first.readAt);
    expect(cached.tables.find((t) => t.table === "tenants")?.rows).toBe(2);
    h.clock.advance(STORE_SIZES_TTL_MS);
    const fresh = await stats();
    expect(fresh.readAt).not.toBe(first.readAt);
    expect(fresh.tables.find((t) => t.table === "tenants")?.rows).toBe(3);
  });

  it("exports the sizes in /metrics", async () => {
    const text = await (
      await h.request("GET", "/metrics", { headers: { authorization: `Bearer ${OPERATOR_TOKEN}` } })
    ).text();
    expect(text).toMatch(/^svc_store_database_bytes \d+/m);
    expect(text).toContain('svc_store_table_rows{table="tenants"} 3');
    expect(text).toMatch(/^svc_store_table_bytes\{table="change_log"\} \d+/m);
  });
});
