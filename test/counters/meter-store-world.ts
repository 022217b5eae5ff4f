import { afterAll, beforeAll } from "bun:test";
import { type Database, openDatabase } from "../../db/client";
import { DrizzleMeterStore } from "../../src/counters/drizzle-meter-store";
import { freshDatabase, type StoreKind } from "../helpers/databases";

/** The world of a meter store's describe block, filled by its beforeAll: read its members inside tests only. */
export interface MeterStoreWorld {
  readonly db: Awaited<ReturnType<typeof freshDatabase>>;
  readonly store: DrizzleMeterStore;
}

/**
 * A Drizzle meter store over a fresh database of `kind`, made before the describe block's tests
 * and dropped after them (call it inside `describe`).
 */
export function meterStoreWorld(kind: StoreKind): MeterStoreWorld {
  const world = {} as { -readonly [K in keyof MeterStoreWorld]: MeterStoreWorld[K] };
  beforeAll(async () => {
    world.db = await freshDatabase(kind);
    world.store = new DrizzleMeterStore(world.db.db);
  }, 60_000);
  afterAll(async () => {
    await world.db.drop();
  }, 60_000);
  return world;
}

/**
 * Runs `use` with a second meter store over a connection pool of its own to the server database
 * at `url` (as another process would hold), closed after.
 */
export async function withSecondPool(
  url: string,
  use: (second: DrizzleMeterStore, other: Database) => Promise<void>,
): Promise<void> {
  const other: Database = await openDatabase({ url });
  try {
    await use(new DrizzleMeterStore(other.db), other);
  } finally {
    await other.close();
  }
}
