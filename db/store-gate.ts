import type postgres from "postgres";
import { connectionErrorCode } from "./connection-error";

/** How often a closed gate asks the server whether it answers again. */
export const PROBE_MS = 250;

/** What a gate closed by a server that answers nothing says (a connection-class code). */
const HUNG_CODE = "CONNECT_TIMEOUT";

/**
 * Fails queries at once while a Postgres server is known to be unreachable, instead of letting
 * them wait. Without it, a query during an outage waited for the driver's reconnect backoff (up
 * to 2 s, `SERVER_CONNECTION_SETTINGS`) even on a refused connection, and one sent to a hung
 * server waited for its deadline: a quota claim at a window's start held every request of its
 * key that long, though the readers were in memory.
 *
 * The gate closes on a connection-class error (`connectionErrorCode`), and when the server
 * answers nothing for `hangMs` while queries wait and a `select 1` gets no answer within
 * `hangMs` either (a hung server; a slow query alone does not close it). Closed, every query
 * rejects at once with an error carrying the code that closed it (so it maps to 503, and the
 * counters fall back to per-process counting); a probe every PROBE_MS opens it again once
 * `select 1` answers.
 */
export class StoreGate {
  private closedBy: string | null = null;
  private probing = false;
  private inFlight = 0;
  private answeredAt = 0;
  private watch: ReturnType<typeof setTimeout> | null = null;
  private stopped = false;
  /** Times the gate closed since start (for /metrics and tests). */
  closings = 0;

  constructor(
    /**
     * Asks the server `select 1`; `abandon` gives up the probe's connection after an ask got no
     * answer in time (a connection to a hung server, or through a dead network path, may never
     * answer again even once the server does).
     */
    private readonly probe: { ask(): Promise<unknown>; abandon(): void },
    private readonly hangMs: number,
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** The store is known unreachable: queries fail at once. */
  get down(): boolean {
    return this.closedBy !== null;
  }

  /** The error a query gets while the gate is closed. */
  refusal(): Error {
    return Object.assign(new Error(`the store is unreachable (${this.closedBy})`), { code: this.closedBy });
  }

  /** A query was sent. */
  started(): void {
    this.inFlight += 1;
    this.arm();
  }

  /** A query ended, with `error` when it failed. */
  settled(error?: unknown): void {
    this.inFlight -= 1;
    if (error === undefined) {
      this.answeredAt = this.now();
      return;
    }
    const code = connectionErrorCode(error);
    if (code === null) this.answeredAt = this.now();
    else this.close(code);
  }

  /** Stops probing (the database is closing). */
  stop(): void {
    this.stopped = true;
    if (this.watch !== null) clearTimeout(this.watch);
    this.watch = null;
  }

  /** Looks in hangMs whether anything answered meanwhile (one timer while queries flow). */
  private arm(): void {
    if (this.watch !== null || this.stopped) return;
    const since = this.now();
    this.watch = setTimeout(() => this.check(since), this.hangMs);
    (this.watch as { unref?: () => void }).unref?.();
  }

  private check(since: number): void {
    this.watch = null;
    if (this.down || this.inFlight === 0) return;
    if (this.answeredAt >= since) {
      this.arm();
      return;
    }
    // Nothing answered for hangMs while queries waited: a server that answers a trivial query
    // is only busy; one that does not is hung.
    void this.ask().then((answered) => {
      if (!answered) this.close(HUNG_CODE);
    });
  }

  private close(code: string): void {
    if (this.closedBy !== null) return;
    this.closedBy = code;
    this.closings += 1;
    this.scheduleProbe();
  }

  private scheduleProbe(): void {
    if (this.stopped) return;
    const timer = setTimeout(async () => {
      if (await this.ask()) {
        this.closedBy = null;
        this.answeredAt = this.now();
      } else this.scheduleProbe();
    }, PROBE_MS);
    (timer as { unref?: () => void }).unref?.();
  }

  /** Whether `select 1` answers within hangMs (one probe at a time; a second asker gets false). */
  private async ask(): Promise<boolean> {
    if (this.probing) return false;
    this.probing = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const late = new Promise<false>((resolve) => {
        timer = setTimeout(() => resolve(false), this.hangMs);
      });
      const answered = await Promise.race([this.probe.ask().then(() => true), late]);
      if (!answered) this.probe.abandon();
      return answered;
    } catch {
      return false;
    } finally {
      clearTimeout(timer);
      this.probing = false;
    }
  }
}

/**
 * The postgres.js client as drizzle uses it (`unsafe` for statements, `begin` for transactions),
 * through `gate`: refused at once while the gate is closed, observed otherwise. A transaction's
 * own statements run on its reserved connection and are observed as the whole `begin`.
 */
export function gatedClient(client: postgres.Sql, gate: StoreGate): postgres.Sql {
  const unsafe = (...args: Parameters<postgres.Sql["unsafe"]>) => {
    if (gate.down) return refusedQuery(gate.refusal());
    return observed(client.unsafe(...args), gate);
  };
  const begin = (...args: unknown[]) => {
    if (gate.down) return Promise.reject(gate.refusal());
    gate.started();
    return (client.begin as (...a: unknown[]) => Promise<unknown>)(...args).then(
      (value) => {
        gate.settled();
        return value;
      },
      (error: unknown) => {
        gate.settled(error);
        throw error;
      },
    );
  };
  return new Proxy(client, {
    get(target, prop, receiver) {
      if (prop === "unsafe") return unsafe;
      if (prop === "begin") return begin;
      return Reflect.get(target, prop, receiver);
    },
  });
}

/** A statement of postgres.js (lazy: it runs on its first `then`), its outcome told to the gate. */
function observed<T extends PromiseLike<unknown>>(query: T, gate: StoreGate): T {
  const then = query.then;
  let sent = false;
  // biome-ignore lint/suspicious/noThenProperty: postgres.js sends a statement on its first `then`; observed there, it stays lazy
  (query as { then: unknown }).then = function (
    this: T,
    ok?: (value: unknown) => unknown,
    ko?: (error: unknown) => unknown,
  ) {
    if (sent) return then.call(this, ok, ko);
    sent = true;
    gate.started();
    return then.call(
      this,
      (value) => {
        gate.settled();
        return ok ? ok(value) : value;
      },
      (error) => {
        gate.settled(error);
        if (ko) return ko(error);
        throw error;
      },
    );
  };
  return query;
}

/** What `unsafe` answers while the gate is closed: a rejected query, `.values()` included. */
function refusedQuery(error: Error): never {
  const rejected = Promise.reject(error);
  rejected.catch(() => {});
  return Object.assign(rejected, { values: () => rejected }) as never;
}
