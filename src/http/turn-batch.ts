/**
 * Under sustained load, runs a request handler for the requests of one event-loop turn back to
 * back, once the turn's reads are done, instead of for each request as soon as Bun has parsed it.
 *
 * Why: under load Bun reads many requests in one turn (one per ready connection) and calls the
 * route handler for each in between its own work for the next (reading the socket, parsing the
 * request, writing the last answer), so the handler's JavaScript starts cold every time. Queued
 * and run together after the turn's reads (`setImmediate` runs once the turn's I/O callbacks are
 * done; a microtask would run after each request, which batches nothing), the same code runs
 * warm: under the bench's saturation load keyed decide answered about 1.4 times the requests per
 * second in alternating scratch runs, less in the full bench run (docs/performance.md).
 *
 * When: a turn queues its requests after the first only if the turn before it had at least
 * `BUSY_TURN` requests. At a moderate rate (most turns one request, a few more after a pause)
 * every request runs at once, exactly as without this; the queue only forms under a load that
 * fills turn after turn, where it pays.
 *
 * Requests run in arrival order; each gets its own handler's answer, and a handler that fails
 * fails only its own request.
 */
export const BUSY_TURN = 8;

// Bound once, not read from the global object in the hot path: a compiled function's read of a
// global left its compiled form whenever that object changed (docs/performance.md, "Compiles in
// the measured windows").
const afterIo = setImmediate;

/**
 * The turn logic on its own, for a caller that keeps what waits itself (the h1 transport queues
 * its hot requests here, with no promise or closure per request). `admit` counts a request and
 * says whether it must wait for the end of the turn; a waiting item is handed to `run` then, in
 * the order `defer` got them.
 */
export class TurnQueue<T> {
  /** Requests seen in this turn so far (0: none yet, and no end-of-turn callback scheduled). */
  private seen = 0;
  /** The turn before this one had BUSY_TURN requests or more: queue this turn's after the first. */
  private busy = false;
  private waiting: T[] = [];
  /** The array the last turn's batch ran from, emptied and kept for the next (the two swap). */
  private spare: T[] = [];

  constructor(private readonly run: (item: T) => void) {}

  /** Counts a request of this turn; true: it waits (`defer` it), false: run it now. */
  admit(): boolean {
    if (this.seen++ === 0) {
      afterIo(this.endTurn);
      return false;
    }
    return this.busy;
  }

  defer(item: T): void {
    this.waiting.push(item);
  }

  private readonly endTurn = (): void => {
    this.busy = this.seen >= BUSY_TURN;
    this.seen = 0;
    if (this.waiting.length === 0) return;
    // Two arrays swapped and emptied, not a new one each turn: a new empty array is another kind
    // of array to the JIT than a filled one, and `defer`'s compiled push left its compiled form.
    const batch = this.waiting;
    this.waiting = this.spare;
    for (let i = 0; i < batch.length; i++) this.run(batch[i] as T);
    batch.length = 0;
    this.spare = batch;
  };
}

/**
 * `handler` behind a `TurnQueue`: a request that runs at once gets the handler's own answer (a
 * value it returns synchronously stays synchronous); a queued one gets a promise of it.
 */
export function perTurn<T, R = Response>(handler: (request: T) => R | Promise<R>): (request: T) => R | Promise<R> {
  const run = (request: T): R | Promise<R> => {
    try {
      return handler(request);
    } catch (error) {
      return Promise.reject(error);
    }
  };
  const queue = new TurnQueue<{ request: T; settle: (answer: R | Promise<R>) => void }>((item) =>
    item.settle(run(item.request)),
  );
  return (request) => {
    if (!queue.admit()) return run(request);
    return new Promise<R>((settle) => queue.defer({ request, settle }));
  };
}
