import { afterAll, beforeAll } from "bun:test";
import { freshDatabase, type StoreKind } from "./databases";
import { type Harness, seedSite, startHarness } from "./harness";
import { startSecondProcess } from "./second-process";

type Database = Awaited<ReturnType<typeof freshDatabase>>;

/** The world of a describe block, filled by its beforeAll: read its members inside tests only. */
export interface SiteWorld {
  readonly db: Database;
  readonly h: Harness;
  /** A key of the seeded site. */
  readonly key: string;
  readonly keyId: string;
}

/**
 * One app over a fresh database with one site deployed from `document` and a key for it, started
 * before the describe block's tests and stopped after them (call it inside `describe`).
 */
export function siteWorld(options: {
  document: unknown;
  site?: string;
  kind?: StoreKind;
  config?: Record<string, string>;
  mailTransport?: NonNullable<Parameters<typeof startHarness>[1]>["mailTransport"];
}): SiteWorld {
  const world = {} as { -readonly [K in keyof SiteWorld]: SiteWorld[K] };
  beforeAll(async () => {
    world.db = await freshDatabase(options.kind ?? "embedded");
    world.h = await startHarness(world.db, { config: options.config, mailTransport: options.mailTransport });
    ({ key: world.key, keyId: world.keyId } = await seedSite(world.h, options.site ?? "news", options.document));
  }, 60_000);
  afterAll(async () => {
    await world.h?.stop();
    await world.db?.drop();
  }, 60_000);
  return world;
}

/** Two processes' worth of state over one store (`startSecondProcess`). */
export interface TwoProcesses {
  readonly db: Database;
  /** The first process: `seed` ran against it before the second started. */
  readonly a: Harness;
  readonly b: Harness;
}

/**
 * Two processes over one fresh store, started before the describe block's tests and stopped
 * after them (call it inside `describe`): A first, seeded by `seed`, then B, its clock following
 * A's. On a server B has its own connections; on the embedded store it shares the database.
 */
export function twoProcesses(kind: StoreKind, seed: (a: Harness) => Promise<void>): TwoProcesses {
  const world = {} as { -readonly [K in keyof TwoProcesses]: TwoProcesses[K] };
  let closeSecond = async () => {};
  beforeAll(async () => {
    world.db = await freshDatabase(kind);
    world.a = await startHarness(world.db);
    await seed(world.a);
    ({ harness: world.b, close: closeSecond } = await startSecondProcess(world.db, world.a));
  }, 60_000);
  afterAll(async () => {
    await world.b?.stop();
    await world.a?.stop();
    await closeSecond();
    await world.db?.drop();
  }, 60_000);
  return world;
}
