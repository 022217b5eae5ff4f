import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import type { PGlite } from "@electric-sql/pglite";
import { sql } from "drizzle-orm";
import type { PgDatabase, PgQueryResultHKT } from "drizzle-orm/pg-core";
import { drizzle as drizzlePglite } from "drizzle-orm/pglite";
import { migrate as migratePglite } from "drizzle-orm/pglite/migrator";
import { drizzle as drizzlePostgres } from "drizzle-orm/postgres-js";
import { migrate as migratePostgres } from "drizzle-orm/postgres-js/migrator";
import postgres from "postgres";
import { type DataFolderLock, lockDataFolder } from "./data-folder-lock";
import { PGliteThread } from "./pglite-thread";
import { privateFolder, privateTree } from "./private-files";
import * as schema from "./schema";
import { gatedClient, StoreGate } from "./store-gate";

/** The drizzle database both drivers give us: store code is written against this type only. */
export type Db = PgDatabase<PgQueryResultHKT, typeof schema>;

/**
 * Told of each statement as it is sent (tracing): `start` answers what to call when it ends, or
 * null to leave it unobserved. The text has `$1` placeholders; parameter values are never given.
 */
export interface StatementHook {
  start(text: string): ((error?: unknown) => void) | null;
}

export interface Database {
  readonly db: Db;
  /** Observes every statement from now on (set once, by the composition root when tracing is on). */
  observeStatements(hook: StatementHook): void;
  readonly kind: "embedded" | "server";
  /** A server's fail-fast gate (`store-gate.ts`): closed while it is unreachable; null embedded. */
  readonly gate: StoreGate | null;
  /** Calls `onNotify` for each NOTIFY on the channel (server only; embedded returns null). */
  listen(channel: string, onNotify: () => void): Promise<{ unlisten: () => Promise<void> } | null>;
  /** The embedded store's data folder as PGlite's gzipped tarball (consistent); null on a server (pg_dump). */
  dump(): Promise<Uint8Array | null>;
  close(): Promise<void>;
}

export const MIGRATIONS_FOLDER = join(dirname(fileURLToPath(import.meta.url)), "migrations");

/**
 * Opens the store and applies the committed migrations. With a URL: postgres.js on a real
 * server. Without: embedded Postgres (PGlite) persisted in `dataDir` (or in memory when
 * dataDir is ":memory:").
 */
export async function openDatabase(options: {
  url?: string;
  dataDir?: string;
  /** The committed migrations by default; an upgrade test passes a folder of the earlier ones. */
  migrationsFolder?: string;
  /**
   * An in-memory store (dataDir ":memory:") starts from this dump (`dump()`, PGlite's
   * `dumpDataDir`) instead of empty: tests open their databases from one migrated template
   * instead of an initdb and the migrations each (docs/architecture.md, "Test tiers").
   * Migrations still run after.
   */
  from?: Uint8Array;
  /**
   * The embedded thread's work between two full collections (db/pglite-worker.ts's COLLECT_AFTER
   * by default, which holds the server's memory down): tests ask for fewer collections, for
   * cheaper statements at the cost of more memory while a test file runs.
   */
  collectAfter?: number;
  /**
   * The embedded store's thread in the idle scheduling class (`SVC_RUNTIME_THREADS=idle`) instead
   * of nice 10: it never holds the request thread's core, and never runs while every core is busy.
   */
  idleThread?: boolean;
  /** The embedded store's shared buffers in MB (EMBEDDED_SHARED_BUFFERS_MB by default); a server's are its own. */
  sharedBuffersMb?: number;
  /** Told what a slow step is about to do (creating the data folder, migrating), for the start's log. */
  onProgress?: (message: string, fields: Record<string, unknown>) => void;
  /**
   * A server answering nothing this long while queries wait (and no `select 1` either) is taken
   * as hung: queries fail at once until it answers (`StoreGate`). The read deadline by default.
   */
  hangMs?: number;
}): Promise<Database> {
  const migrationsFolder = options.migrationsFolder ?? MIGRATIONS_FOLDER;
  const progress = options.onProgress ?? (() => {});
  if (options.from !== undefined && (options.url || (options.dataDir ?? ":memory:") !== ":memory:")) {
    throw new Error('a dump opens only an in-memory store (dataDir ":memory:"), not a server or a data folder');
  }
  if (options.url) {
    const client = postgres(options.url, { max: 10, onnotice: () => {}, ...SERVER_CONNECTION_SETTINGS });
    // The gate's probe has a connection of its own (opened only while probing, closed when idle):
    // it asks whether the server answers, not whether the pool has a free connection.
    const url = options.url;
    const probeClient = () =>
      postgres(url, { max: 1, idle_timeout: 5, fetch_types: false, onnotice: () => {}, ...SERVER_CONNECTION_SETTINGS });
    let probe = probeClient();
    const gate = new StoreGate(
      {
        ask: () => probe.unsafe("select 1"),
        abandon: () => {
          void probe.end({ timeout: 0 }).catch(() => {});
          probe = probeClient();
        },
      },
      options.hangMs ?? HANG_MS,
    );
    const db = drizzlePostgres({ client: gatedClient(client, gate), schema, casing: "snake_case" });
    try {
      await announceMigrations(db as unknown as Db, migrationsFolder, progress);
      await migratePostgres(db, { migrationsFolder });
    } catch (error) {
      gate.stop();
      await probe.end({ timeout: 0 });
      await client.end({ timeout: 0 });
      throw error;
    }
    // postgres.js reads the array types on every new connection, in a promise it never awaits:
    // a connection dropped during that read (an outage) was an unhandled rejection, which ends
    // the process. The types read while migrating stay in the client's shared options, so later
    // connections (reconnects during an outage) skip the read.
    client.options.fetch_types = false;
    return {
      db: db as unknown as Db,
      kind: "server",
      observeStatements: (hook) => observePostgresJs(client, hook),
      gate,
      async listen(channel, onNotify) {
        const sub = await client.listen(channel, () => onNotify());
        return { unlisten: () => sub.unlisten() };
      },
      dump: async () => null,
      close: () => {
        gate.stop();
        return Promise.all([probe.end({ timeout: 0 }), client.end({ timeout: 5 })]).then(() => {});
      },
    };
  }
  const dir = options.dataDir ?? ":memory:";
  let folder: string | null = null;
  let lock: DataFolderLock | null = null;
  if (dir !== ":memory:") {
    privateFolder(dir);
    // Held while the store is open: a second process on this folder is refused here.
    lock = lockDataFolder(dir);
    folder = join(dir, "pg");
  }
  let client: PGliteThread;
  try {
    if (folder !== null) {
      if (!existsSync(join(folder, "PG_VERSION"))) {
        progress("first start: creating the embedded database (takes a few seconds)", { folder });
        await initDataFolder(folder);
      }
      // The store's files are never anyone else's (also narrows a folder made before this was kept).
      privateTree(folder);
    }
    // PGlite runs in its own thread: its work never blocks the thread that serves requests.
    client = await PGliteThread.open(folder, embeddedSettings(options.sharedBuffersMb), {
      dump: options.from,
      collectAfter: options.collectAfter,
      idle: options.idleThread,
    });
  } catch (error) {
    lock?.release();
    throw error;
  }
  // drizzle's PGlite driver calls only `query` and `transaction`, which PGliteThread provides.
  const db = drizzlePglite({ client: client as unknown as PGlite, schema, casing: "snake_case" });
  try {
    await announceMigrations(db as unknown as Db, migrationsFolder, progress);
    await migratePglite(db, { migrationsFolder });
  } catch (error) {
    await client.close();
    lock?.release();
    throw error;
  }
  return {
    db: db as unknown as Db,
    kind: "embedded",
    observeStatements: (hook) => observePglite(client, hook),
    gate: null,
    listen: async () => null,
    dump: () => client.dump(),
    async close() {
      try {
        await client.close();
        // Files made while running (relation caches, WAL segments) by PGlite's chmod: narrowed too.
        if (folder !== null) privateTree(folder);
      } finally {
        lock?.release();
      }
    },
  };
}

/** What drizzle's postgres.js driver calls: `unsafe` for a statement, `begin` and `savepoint`. */
interface PostgresJsCalls {
  unsafe(text: string, ...rest: unknown[]): PromiseLike<unknown>;
  begin?(...args: unknown[]): unknown;
  savepoint?(...args: unknown[]): unknown;
}

/**
 * Observes postgres.js's statements: its queries are lazy thenables that drizzle may still call
 * `.values()` on, so the query object itself is answered, its `then` wrapped to end the
 * observation. A transaction's own client (given to `begin`'s and `savepoint`'s callback) is
 * observed the same way.
 */
function observePostgresJs(client: PostgresJsCalls, hook: StatementHook): void {
  const unsafe = client.unsafe.bind(client);
  client.unsafe = (text: string, ...rest: unknown[]) => {
    const query = unsafe(text, ...rest) as PromiseLike<unknown> & { then: PromiseLike<unknown>["then"] };
    const end = hook.start(text);
    if (end === null) return query;
    const then = query.then;
    let ended = false;
    const once = (error?: unknown) => {
      if (ended) return;
      ended = true;
      end(error);
    };
    // biome-ignore lint/suspicious/noThenProperty: the query is a thenable already; its own `then` is wrapped.
    query.then = function (this: PromiseLike<unknown>, ok, fail) {
      return then.call(
        this,
        (value) => {
          once();
          return ok ? ok(value) : (value as never);
        },
        (error: unknown) => {
          once(error);
          if (fail) return fail(error);
          throw error;
        },
      );
    } as PromiseLike<unknown>["then"];
    return query;
  };
  for (const method of ["begin", "savepoint"] as const) {
    const original = client[method]?.bind(client);
    if (original === undefined) continue;
    client[method] = (...args: unknown[]) => {
      const at = args.findIndex((a) => typeof a === "function");
      if (at !== -1) {
        const callback = args[at] as (tx: PostgresJsCalls) => unknown;
        args[at] = (tx: PostgresJsCalls) => {
          observePostgresJs(tx, hook);
          return callback(tx);
        };
      }
      return original(...args);
    };
  }
}

/** Observes the embedded store's statements: `query`, and each statement of a transaction. */
function observePglite(client: PGliteThread, hook: StatementHook): void {
  type Query = PGliteThread["query"];
  const observed =
    (query: Query): Query =>
    (text, params, options) => {
      const end = hook.start(text);
      const result = query(text, params, options);
      if (end === null) return result;
      return result.then(
        (value) => {
          end();
          return value;
        },
        (error: unknown) => {
          end(error);
          throw error;
        },
      );
    };
  const query = client.query.bind(client);
  const transaction = client.transaction.bind(client);
  client.query = observed(query);
  client.transaction = (fn) => transaction((tx) => fn({ ...tx, query: observed(tx.query) }));
}

/**
 * postgres.js waits before reconnecting after a connection error, and its default wait grows to
 * 10-20 s after a few errors (`(0.5 + random / 2) * min(3 ** errors / 100, 20)` s, counted over
 * the pool): a query queued on such a connection waited that long during an outage, and kept
 * waiting after Postgres was back. Here the wait doubles from 50 ms to at most 2 s; a connection
 * attempt that gets no answer (a hung server) gives up after 5 s instead of 30. Requests do not
 * wait for either: while a server is unreachable, queries fail at once (`StoreGate`).
 */
const SERVER_CONNECTION_SETTINGS = {
  backoff: (errors: number) => Math.min(0.05 * 2 ** errors, 2),
  connect_timeout: 5,
};

/** `openDatabase`'s `hangMs` when not given: the default read deadline (SVC_READ_DEADLINE_MS). */
const HANG_MS = 1_000;

/**
 * Embedded Postgres settings. Counters, keys and documents are served from memory and Postgres
 * only takes batched writes and cold reads, so 8 MB of shared buffers and 1 MB of WAL buffers
 * (PGlite's are 128 MB and 4 MB, resident in its WebAssembly memory once used) are the default;
 * the OS caches the files. Measured: 100,000 counter upserts took the same time with 16 or 8 MB,
 * and the thread held about 8 MB less. A store of many readers writes rows its buffers no longer
 * hold, each read through the file system again (`SVC_EMBEDDED_SHARED_BUFFERS_MB`;
 * docs/performance.md, "The embedded store's cost per request grows with its readers").
 */
const EMBEDDED_SHARED_BUFFERS_MB = 8;

function embeddedSettings(sharedBuffersMb = EMBEDDED_SHARED_BUFFERS_MB): string[] {
  return ["-c", `shared_buffers=${sharedBuffersMb}MB`, "-c", "wal_buffers=1MB"];
}

/**
 * Says how many committed migrations the store has not applied yet, before they run (a first
 * start applies them all; a large store's upgrade may take a while). Counts drizzle's own
 * record of applied migrations, absent on a new store.
 */
async function announceMigrations(
  db: Db,
  migrationsFolder: string,
  progress: (message: string, fields: Record<string, unknown>) => void,
): Promise<void> {
  const journal = JSON.parse(readFileSync(join(migrationsFolder, "meta", "_journal.json"), "utf8")) as {
    entries: unknown[];
  };
  let applied = 0;
  try {
    const rows = rowsOf<{ n: number | string }>(
      await db.execute(sql`select count(*) as n from drizzle.__drizzle_migrations`),
    );
    applied = Number(rows[0]?.n ?? 0);
  } catch {
    // No record yet: a new store, every migration to apply.
  }
  const pending = journal.entries.length - applied;
  if (pending > 0) progress("migrating the database", { migrations: pending });
}

/** Runs initdb for a new data folder in a child process (see db/init-data-dir.ts). */
async function initDataFolder(folder: string): Promise<void> {
  const child = Bun.spawn([process.execPath, join(import.meta.dir, "init-data-dir.ts"), folder], {
    stdout: "ignore",
    stderr: "pipe",
  });
  const code = await child.exited;
  if (code !== 0) {
    const err = await new Response(child.stderr).text();
    throw new Error(`could not create the embedded database in ${folder}: ${err.trim() || `exit ${code}`}`);
  }
}

/** Rows of a `db.execute` result, whichever driver produced it. */
export function rowsOf<T>(result: unknown): T[] {
  if (Array.isArray(result)) return result as T[];
  return ((result as { rows?: T[] }).rows ?? []) as T[];
}
