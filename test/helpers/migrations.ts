import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { type Database, MIGRATIONS_FOLDER, openDatabase } from "../../db/client";
import { emptyServerDatabase, type StoreKind } from "./databases";

/** A copy of the committed migrations up to and including `lastTag`. */
function migrationsUpTo(lastTag: string): string {
  const folder = mkdtempSync(join(tmpdir(), "svc-migrations-"));
  cpSync(MIGRATIONS_FOLDER, folder, { recursive: true });
  const journalFile = join(folder, "meta", "_journal.json");
  const journal = JSON.parse(readFileSync(journalFile, "utf8")) as { entries: { tag: string }[] };
  const last = journal.entries.findIndex((e) => e.tag === lastTag);
  if (last < 0) throw new Error(`no migration ${lastTag}`);
  journal.entries = journal.entries.slice(0, last + 1);
  writeFileSync(journalFile, JSON.stringify(journal));
  return folder;
}

/** Where a database of `kind` lives across two opens: a data folder, or a new database on the server. */
async function place(kind: StoreKind): Promise<{ options: { url?: string; dataDir?: string }; drop(): Promise<void> }> {
  if (kind === "embedded") {
    const dataDir = mkdtempSync(join(tmpdir(), "svc-upgrade-"));
    return { options: { dataDir }, drop: async () => rmSync(dataDir, { recursive: true, force: true }) };
  }
  const empty = await emptyServerDatabase();
  return { options: { url: empty.url }, drop: empty.drop };
}

/**
 * An upgrade across the migrations after `lastTag`: a new database of `kind` migrated up to
 * `lastTag` is handed to `before`, then opened again with every migration and handed to `after`;
 * both are closed and the database is dropped after.
 */
export async function upgradeFrom(
  kind: StoreKind,
  lastTag: string,
  before: (database: Database) => Promise<void>,
  after: (database: Database) => Promise<void>,
): Promise<void> {
  const where = await place(kind);
  const earlier = migrationsUpTo(lastTag);
  try {
    const old = await openDatabase({ ...where.options, migrationsFolder: earlier });
    await before(old);
    await old.close();

    const upgraded = await openDatabase(where.options);
    try {
      await after(upgraded);
    } finally {
      await upgraded.close();
    }
  } finally {
    rmSync(earlier, { recursive: true, force: true });
    await where.drop();
  }
}
