import { afterAll, beforeAll, expect } from "bun:test";
import { emptyServerDatabase } from "./databases";
import { OPERATOR_TOKEN } from "./harness";
import { type ServerProcess, startServerProcess } from "./process";

/** The world of a describe block, filled by its beforeAll: read its members inside tests only. */
export interface TwoServerProcesses {
  /** The first (seeded) process, then the second. */
  readonly servers: ServerProcess[];
  /** The key `seed` answered. */
  readonly key: string;
}

/**
 * Two real server processes over one new, empty database on the server of DATABASE_URL, started
 * before the describe block's tests and killed after them, the database then dropped (call it
 * inside `describe`): the first with `env(url, 0)`, seeded by `seed` (which answers a key), then
 * the second with `env(url, 1)`. `beforeKill`, if given, runs first in the afterAll.
 */
export function twoServerProcesses(
  env: (databaseUrl: string, index: 0 | 1) => Record<string, string>,
  seed: (first: ServerProcess) => Promise<string>,
  beforeKill?: () => void,
): TwoServerProcesses {
  const world = { servers: [] as ServerProcess[], key: "" };
  let database: { url: string; drop(): Promise<void> } | undefined;
  beforeAll(async () => {
    database = await emptyServerDatabase();
    world.servers.push(await startServerProcess(env(database.url, 0)));
    world.key = await seed(world.servers[0] as ServerProcess);
    world.servers.push(await startServerProcess(env(database.url, 1)));
  }, 90_000);
  afterAll(async () => {
    beforeKill?.();
    for (const server of world.servers) await server.stop("SIGKILL");
    await database?.drop();
  }, 60_000);
  return world;
}

/** POSTs `body` as the operator to a server process's `/admin${path}`, expecting a 2xx, and answers its JSON. */
export async function adminPost(server: ServerProcess, path: string, body: unknown) {
  const res = await fetch(`${server.url}/admin${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  expect(res.status).toBeLessThan(300);
  return res.json();
}

/** On a server process: the default tenant, its site "news" deployed from `document`, and a new key named `keyName`. */
export async function seedServerSite(server: ServerProcess, document: unknown, keyName: string): Promise<string> {
  await adminPost(server, "/tenants", { id: "default", default: true });
  await adminPost(server, "/tenants/default/sites", { id: "news" });
  await adminPost(server, "/tenants/default/sites/news/deploy", { document });
  return (await adminPost(server, "/tenants/default/sites/news/keys", { name: keyName })).key;
}
