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

export function perTurn<T, R = Response>(handler: (request: T) => Promise<R>): (request: T) => Promise<R> {
  /** Requests seen in this turn so far (0: none yet, and no end-of-turn callback scheduled). */
  let seen = 0;
  /** The turn before this one had BUSY_TURN requests or more: queue this turn's after the first. */
  let busy = false;
  let requests: T[] = [];
  let settles: ((answer: Promise<R>) => void)[] = [];
  const run = (request: T): Promise<R> => {
    try {
      return handler(request);
    } catch (error) {
      return Promise.reject(error);
    }
  };
  const endTurn = () => {
    busy = seen >= BUSY_TURN;
    seen = 0;
    if (requests.length === 0) return;
    const batch = requests;
    const settle = settles;
    requests = [];
    settles = [];
    for (let i = 0; i < batch.length; i++) {
      (settle[i] as (answer: Promise<R>) => void)(run(batch[i] as T));
    }
  };
  return (request) => {
    if (seen++ === 0) {
      setImmediate(endTurn);
      return run(request);
    }
    if (!busy) return run(request);
    return new Promise<R>((resolve) => {
      requests.push(request);
      settles.push(resolve);
    });
  };
}
