import { describe, expect, it } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { openDatabase, rowsOf } from "../../db/client";

/** `openDatabase`'s `from`: an in-memory store that starts as a copy of a dump (the tests' template). */
describe("an in-memory store opened from a dump", () => {
  const tenantIds = async (db: Awaited<ReturnType<typeof openDatabase>>) =>
    rowsOf<{ id: string }>(await db.db.execute(sql`select id from tenants order by id`)).map((r) => r.id);

  it("holds the dumped rows, and its writes stay its own", async () => {
    const source = await openDatabase({ dataDir: ":memory:" });
    await source.db.execute(sql`insert into tenants (id, is_default) values ('dumped', false)`);
    const dump = (await source.dump()) as Uint8Array;
    const copy = await openDatabase({ dataDir: ":memory:", from: dump, collectAfter: 1_024 });
    const other = await openDatabase({ dataDir: ":memory:", from: dump });
    try {
      expect(await tenantIds(copy)).toContain("dumped");
      await copy.db.execute(sql`insert into tenants (id, is_default) values ('copy-only', false)`);
      expect(await tenantIds(copy)).toContain("copy-only");
      expect(await tenantIds(other)).not.toContain("copy-only");
      expect(await tenantIds(source)).not.toContain("copy-only");
    } finally {
      await Promise.all([source.close(), copy.close(), other.close()]);
    }
  }, 60_000);

  it("refuses bytes that are not a dump, and a dump for a data folder or a server", async () => {
    await expect(openDatabase({ dataDir: ":memory:", from: new Uint8Array([1, 2, 3]) })).rejects.toThrow();
    const dir = mkdtempSync(join(tmpdir(), "svc-from-"));
    try {
      await expect(openDatabase({ dataDir: dir, from: new Uint8Array([1]) })).rejects.toThrow(
        "a dump opens only an in-memory store",
      );
      await expect(
        openDatabase({ url: "postgres://postgres@127.0.0.1:5432/none", from: new Uint8Array([1]) }),
      ).rejects.toThrow("a dump opens only an in-memory store");
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
