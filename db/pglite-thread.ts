/**
 * A PGlite-compatible client whose database runs in a worker thread (db/pglite-worker.ts).
 * drizzle's PGlite driver needs only `query` and `transaction`, so this is all it implements.
 *
 * Why our own: PGlite's `PGliteWorker` is built for browser tabs (it elects a leader with
 * `navigator.locks`, which Bun lacks), and drizzle's proxy driver refuses transactions.
 *
 * Ordering is PGlite's: one statement at a time, and a transaction holds the database until it
 * commits or rolls back (statements from outside it wait their turn).
 */
type Request =
  | {
      op: "open";
      folder: string | null;
      settings: string[];
      dump?: Uint8Array;
      collectAfter?: number;
      idle?: boolean;
    }
  | { op: "query"; sql: string; params: unknown[] | string; rowMode: "array" | "object" }
  | { op: "dump" }
  | { op: "close" };

export type ThreadRequest = Request & { id: number };

export type ThreadReply =
  | { id: number; ok: true; result: QueryResult | null; bytes?: Uint8Array }
  | { id: number; ok: false; message: string; fields: Record<string, string> };

export interface QueryResult {
  rows: unknown[];
  fields: { name: string; dataTypeID: number }[];
  affectedRows?: number;
}

interface QueryOptions {
  rowMode?: "array" | "object";
}

/** What a transaction's callback gets: statements that run inside it. */
export interface ThreadTransaction {
  query(sql: string, params?: unknown[], options?: QueryOptions): Promise<QueryResult>;
}

export class PGliteThread {
  private readonly worker: Worker;
  private readonly waiting = new Map<
    number,
    { resolve: (r: QueryResult | null) => void; reject: (e: Error) => void }
  >();
  private nextId = 1;
  /** Settles when the statement or transaction ahead of the next one is done. */
  private tail: Promise<unknown> = Promise.resolve();
  private closed = false;
  /** The bytes of the dump being answered (set by `settle`). */
  private dumped: Uint8Array | null = null;

  private constructor() {
    this.worker = new Worker(new URL("./pglite-worker.ts", import.meta.url).href);
    this.worker.onmessage = (event: MessageEvent<ThreadReply>) => this.settle(event.data);
    this.worker.onerror = (event) => {
      // A dead thread answers nothing more: refuse what comes next instead of waiting forever.
      this.closed = true;
      this.failAll(new Error(`embedded database thread failed: ${event.message}`));
    };
  }

  /**
   * Starts the thread and opens the folder (null: in memory, empty or, given `dump`, loaded from
   * PGlite's dump of a data folder). `collectAfter`: the work between the thread's full
   * collections (db/pglite-worker.ts's COLLECT_AFTER by default). `idle`: the thread in the idle
   * scheduling class instead of nice 10 (db/pglite-worker.ts).
   */
  static async open(
    folder: string | null,
    settings: string[] = [],
    options: { dump?: Uint8Array; collectAfter?: number; idle?: boolean } = {},
  ): Promise<PGliteThread> {
    const thread = new PGliteThread();
    try {
      await thread.send({ op: "open", folder, settings, ...options });
    } catch (error) {
      thread.worker.terminate();
      throw error;
    }
    return thread;
  }

  query(sql: string, params: unknown[] = [], options: QueryOptions = {}): Promise<QueryResult> {
    return this.exclusive(() => this.statement(sql, params, options));
  }

  /** BEGIN, the callback's statements, then COMMIT (ROLLBACK when it throws). */
  transaction<T>(fn: (tx: ThreadTransaction) => Promise<T>): Promise<T> {
    return this.exclusive(async () => {
      await this.statement("begin", [], {});
      let result: T;
      try {
        result = await fn({ query: (sql, params = [], options = {}) => this.statement(sql, params, options) });
      } catch (error) {
        await this.statement("rollback", [], {}).catch(() => {});
        throw error;
      }
      await this.statement("commit", [], {});
      return result;
    });
  }

  /**
   * PGlite's own dump of the data folder (a gzipped tarball, `dumpDataDir`), taken between two
   * statements: it waits for what is queued before it (a transaction included) and holds what
   * comes after, so the copy is consistent.
   */
  dump(): Promise<Uint8Array> {
    return this.exclusive(async () => {
      this.dumped = null;
      await this.send({ op: "dump" });
      const bytes = this.dumped as Uint8Array | null;
      if (bytes === null) throw new Error("the embedded database answered no dump");
      this.dumped = null;
      return bytes;
    });
  }

  async close(): Promise<void> {
    if (this.closed) return;
    try {
      await this.exclusive(() => this.send({ op: "close" }));
    } finally {
      this.closed = true;
      this.worker.terminate();
      this.failAll(new Error("the embedded database is closed"));
    }
  }

  private statement(sql: string, params: unknown[], options: QueryOptions): Promise<QueryResult> {
    // Plain values travel as one JSON string: posting a counter flush's column arrays (thousands
    // of strings) by structured clone held the request thread ~5x longer than stringifying them.
    const wire = jsonSafe(params) ? JSON.stringify(params) : params;
    return this.send({ op: "query", sql, params: wire, rowMode: options.rowMode ?? "object" }) as Promise<QueryResult>;
  }

  /** Runs `fn` once everything queued before it has finished (a FIFO lock). */
  private exclusive<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn);
    this.tail = run.catch(() => {});
    return run;
  }

  private send(request: Request): Promise<QueryResult | null> {
    if (this.closed) return Promise.reject(new Error("the embedded database is closed"));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.worker.postMessage({ ...request, id });
    });
  }

  private settle(reply: ThreadReply): void {
    const waiter = this.waiting.get(reply.id);
    if (waiter === undefined) return;
    this.waiting.delete(reply.id);
    if (reply.ok && reply.bytes !== undefined) this.dumped = reply.bytes;
    if (reply.ok) waiter.resolve(reply.result);
    else waiter.reject(Object.assign(new Error(reply.message), reply.fields));
  }

  private failAll(error: Error): void {
    for (const waiter of this.waiting.values()) waiter.reject(error);
    this.waiting.clear();
  }
}

// Bound once, not read from the global object on every parameter (docs/performance.md, "Compiles
// in the measured windows").
const isFiniteNumber = Number.isFinite;
const plain = (v: unknown) =>
  v === null || typeof v === "string" || typeof v === "boolean" || (typeof v === "number" && isFiniteNumber(v));

/**
 * Whether JSON carries these parameters unchanged: strings, finite numbers, booleans, null, and
 * arrays of those. Anything else (a Date, bytes, a bigint, nested objects) goes by structured clone.
 */
export function jsonSafe(params: readonly unknown[]): boolean {
  for (const p of params) {
    if (plain(p)) continue;
    if (!Array.isArray(p)) return false;
    for (const v of p) if (!plain(v)) return false;
  }
  return true;
}
