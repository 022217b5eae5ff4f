import { afterAll, beforeAll } from "bun:test";
import { freshDatabase, type StoreKind } from "./databases";
import { type Harness, type Served, seedSite, serveHarness, startHarness } from "./harness";

/** What a served suite holds once its `beforeAll` has run (read it inside tests and hooks). */
export interface ServedSuite {
  h: Harness;
  server: Served;
  /** The key issued for site "news", when the suite deployed one. */
  key: string;
  /** The id of that key. */
  keyId: string;
}

/**
 * Registers a suite's set-up and tear-down for the app served over a real socket: a fresh
 * database of `kind`, a harness over it (`config`), site "news" deployed from `site` with a key
 * when given, and the app listening on a free port; after the suite, the listener, the harness
 * and the database are stopped and dropped.
 */
export function servedSuite(
  kind: StoreKind,
  options: { config?: Record<string, string>; site?: unknown } = {},
): ServedSuite {
  const suite = {} as ServedSuite;
  let drop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    const db = await freshDatabase(kind);
    drop = db.drop;
    suite.h = await startHarness(db, { config: options.config });
    if (options.site !== undefined)
      ({ key: suite.key, keyId: suite.keyId } = await seedSite(suite.h, "news", options.site));
    suite.server = serveHarness(suite.h);
  }, 60_000);
  afterAll(async () => {
    await suite.server?.stop();
    await suite.h?.stop();
    await drop?.();
  }, 60_000);
  return suite;
}
