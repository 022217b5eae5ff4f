import { randomBytes } from "node:crypto";
import { type Database, openDatabase } from "../../db/client";
import { createScratchDatabase } from "../../db/scratch-database";

export type StoreKind = "embedded" | "server";

/** Embedded always; server Postgres whenever DATABASE_URL is set (CI sets it). */
export const storeKinds: StoreKind[] = process.env.DATABASE_URL ? ["embedded", "server"] : ["embedded"];

/**
 * A fresh, migrated database of the given kind: embedded in memory, or a new database on the
 * server under a random name, dropped again by `drop()`.
 */
export async function freshDatabase(
  kind: StoreKind,
): Promise<Database & { drop(): Promise<void>; url: string | null }> {
  if (kind === "embedded") {
    const database = await openDatabase({ dataDir: ":memory:" });
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
