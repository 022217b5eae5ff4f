import { describe, expect, it } from "bun:test";
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { sql } from "drizzle-orm";
import { openDatabase, rowsOf } from "../../db/client";
import { createDeps, stopDeps } from "../../src/deps";
import { testConfig } from "../helpers/harness";

async function sharedBuffers(db: { execute: (query: ReturnType<typeof sql>) => Promise<unknown> }): Promise<string> {
  const [row] = rowsOf<{ shared_buffers: string }>(await db.execute(sql`show shared_buffers`));
  return row?.shared_buffers ?? "";
}

describe("embedded data folder", () => {
  it("is created by a child process on first open, then reopened with small shared buffers", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-init-"));
    try {
      const first = await openDatabase({ dataDir: dir });
      expect(existsSync(join(dir, "pg", "PG_VERSION"))).toBe(true);
      expect(await sharedBuffers(first.db)).toBe("8MB");
      const [wal] = rowsOf<{ wal_buffers: string }>(await first.db.execute(sql`show wal_buffers`));
      expect(wal?.wal_buffers).toBe("1MB");
      await first.db.execute(sql`insert into tenants (id, is_default) values ('kept', false)`);
      await first.close();
      const second = await openDatabase({ dataDir: dir });
      const kept = rowsOf<{ id: string }>(await second.db.execute(sql`select id from tenants where id = 'kept'`));
      expect(kept).toEqual([{ id: "kept" }]);
      await second.close();
      // Reopened with more shared buffers (a large store's counter writes), the data is the same.
      const third = await openDatabase({ dataDir: dir, sharedBuffersMb: 24 });
      expect(await sharedBuffers(third.db)).toBe("24MB");
      expect(rowsOf(await third.db.execute(sql`select id from tenants where id = 'kept'`))).toEqual([{ id: "kept" }]);
      await third.close();
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);

  it("opens the server's store with SVC_EMBEDDED_SHARED_BUFFERS_MB's shared buffers", async () => {
    const config = testConfig({ SVC_EMBEDDED_SHARED_BUFFERS_MB: "16" });
    const deps = await createDeps(config);
    try {
      expect(config.embeddedSharedBuffersMb).toBe(16);
      expect(await sharedBuffers(deps.database.db)).toBe("16MB");
    } finally {
      await stopDeps(deps, { closeDatabase: true });
      rmSync(config.dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  it("fails with a message naming the folder when it cannot be created", async () => {
    const dir = mkdtempSync(join(tmpdir(), "svc-init-"));
    try {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, "pg"), "not a folder");
      await expect(openDatabase({ dataDir: dir })).rejects.toThrow(
        `could not create the embedded database in ${join(dir, "pg")}`,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
