import { randomBytes } from "node:crypto";
import { type Database, openDatabase } from "../../db/client";
import { createScratchDatabase } from "../../db/scratch-database";

export type StoreKind = "embedded" | "server";

/** Embedded always; server Postgres whenever DATABASE_URL is set (CI sets it). */
export const storeKinds: StoreKind[] = process.env.DATABASE_URL ? ["embedded", "server"] : ["embedded"];

/**
 * The embedded thread collects its garbage after this much work in tests (the server: 64): a
 * statement costs about half as much, for a little more memory (docs/architecture.md, "Test
 * tiers").
 */
const TEST_COLLECT_AFTER = 1_024;

let template: Promise<Uint8Array> | null = null;

/**
 * One migrated embedded database's dump per test process, taken at its first fresh database:
 * each next one loads it instead of running an initdb and the migrations again.
 */
function migratedTemplate(): Promise<Uint8Array> {
  template ??= (async () => {
    const first = await openDatabase({ dataDir: ":memory:" });
    try {
      const bytes = await first.dump();
      if (bytes === null) throw new Error("the embedded store answered no dump");
      return bytes;
    } finally {
      await first.close();
    }
  })().catch((error: unknown) => {
    // A failed template fails this caller only: the next one makes it again.
    template = null;
    throw error;
  });
  return template;
}

/**
 * A fresh, migrated database of the given kind: embedded in memory, or a new database on the
 * server under a random name, dropped again by `drop()`.
 */
export async function freshDatabase(
  kind: StoreKind,
): Promise<Database & { drop(): Promise<void>; url: string | null }> {
  if (kind === "embedded") {
    const database = await openDatabase({
      dataDir: ":memory:",
      from: await migratedTemplate(),
      collectAfter: TEST_COLLECT_AFTER,
    });
    return { ...database, url: null, drop: () => database.close() };
  }
  const empty = await emptyServerDatabase();
  const database = await openDatabase({ url: empty.url });
  return {
    ...database,
    url: empty.url,
    async drop() {
      await database.close();
      await empty.drop();
    },
  };
}

/** A new, empty database on the server of DATABASE_URL (no migrations applied); `drop()` removes it. */
export async function emptyServerDatabase(): Promise<{ url: string; drop(): Promise<void> }> {
  const url = process.env.DATABASE_URL;
  if (!url) throw new Error("server store needs DATABASE_URL");
  return createScratchDatabase(url, `svc_test_${randomBytes(6).toString("hex")}`);
}
