/**
 * Runs a request handler at once for the first request of an event-loop turn, and for the rest
 * of that turn's requests together, back to back, once the turn's reads are done.
 *
 * Why: under load Bun reads many requests in one turn (one per ready connection) and calls the
 * route handler for each in between its own work for the next (reading the socket, parsing the
 * request, writing the last answer), so the handler's JavaScript starts cold every time. Queued
 * and run together after the turn's reads (`setImmediate` runs once the turn's I/O callbacks are
 * done; a microtask would run after each request, which batches nothing), the same code runs
 * warm: the bench measured keyed decide at about 1.4 times the requests per second (README,
 * Performance). The first request of a turn does not wait: at a moderate rate most requests
 * arrive alone and run exactly as they would without this.
 *
 * Requests run in arrival order; each gets its own handler's answer, and a handler that fails
 * fails only its own request.
 */
export function perTurn<T>(handler: (request: T) => Promise<Response>): (request: T) => Promise<Response> {
  /** A request of this turn has run: the turn's later requests wait for its end. */
  let turnOpen = false;
  let requests: T[] = [];
  let settles: ((answer: Promise<Response>) => void)[] = [];
  const run = (request: T): Promise<Response> => {
    try {
      return handler(request);
    } catch (error) {
      return Promise.reject(error);
    }
  };
  const endTurn = () => {
    turnOpen = false;
    if (requests.length === 0) return;
    const batch = requests;
    const settle = settles;
    requests = [];
    settles = [];
    for (let i = 0; i < batch.length; i++) {
      (settle[i] as (answer: Promise<Response>) => void)(run(batch[i] as T));
    }
  };
  return (request) => {
    if (!turnOpen) {
      turnOpen = true;
      setImmediate(endTurn);
      return run(request);
    }
    return new Promise<Response>((resolve) => {
      requests.push(request);
      settles.push(resolve);
    });
  };
}
