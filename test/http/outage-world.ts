import { afterAll, beforeAll } from "bun:test";
import type { Database } from "../../db/client";
import { emptyServerDatabase } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";
import { startTcpProxy, type TcpProxy } from "../helpers/tcp-proxy";

/** The world of an outage suite, filled by its beforeAll: read its members inside tests and hooks only. */
export interface OutageWorld {
  /** The proxy between the app and Postgres: `set` it to fail on demand. */
  readonly proxy: TcpProxy;
  readonly database: Database;
  readonly h: Harness;
  /** A key of site "news". */
  readonly key: string;
}

/**
 * An app over an empty server database reached through a TCP proxy (`openDatabase`'s `hangMs`
 * when given), with site "news" deployed from `document` and a key for it, then `prepare`, all
 * before the describe block's tests; after them the proxy forwards again, and all is stopped.
 */
export function outageWorld(options: {
  document: unknown;
  hangMs?: number;
  config?: Record<string, string>;
  mailTransport?: NonNullable<Parameters<typeof startHarness>[1]>["mailTransport"];
  /** The suite's own set-up, run last in the same hook. */
  prepare?: (world: OutageWorld) => Promise<void>;
}): OutageWorld {
  const world = {} as { -readonly [K in keyof OutageWorld]: OutageWorld[K] };
  let scratch: { url: string; drop(): Promise<void> };
  beforeAll(async () => {
    scratch = await emptyServerDatabase();
    world.proxy = await startTcpProxy("127.0.0.1", Number(new URL(scratch.url).port || 5432));
    const { openDatabase } = await import("../../db/client");
    world.database = await openDatabase({ url: world.proxy.url(scratch.url), hangMs: options.hangMs });
    world.h = await startHarness(world.database, { config: options.config, mailTransport: options.mailTransport });
    ({ key: world.key } = await seedSite(world.h, "news", options.document));
    await options.prepare?.(world);
  }, 60_000);
  afterAll(async () => {
    await world.proxy.set("forward");
    await world.h.stop();
    await world.database.close();
    await world.proxy.close();
    await scratch.drop();
  }, 60_000);
  return world;
}
