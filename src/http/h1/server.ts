import cluster from "node:cluster";
import type { Socket } from "bun";
import { AppError, errorBody } from "../../infra/errors";
import type { HotRoute, NativeRoute } from "../../infra/hot-request";
import { appErrorResponse } from "../error-envelope";
import type { NodeServerHandle, ServedApp } from "../node-server";
import { requestIdOf, tagRequest } from "../request-id";
import { type AnswerCounter, UNMATCHED_ROUTE } from "../request-stats";
import type { ServerTracing } from "../server-tracing";
import { TurnQueue } from "../turn-batch";
import { Connection, type ConnectionContext, DEFAULT_TIMEOUTS, type Timeouts } from "./connection";
import { encodeHead } from "./encode";
import type { Refusal, RequestHead } from "./head";
import type { Answer, Output } from "./output";
import { fieldValue, H1Request } from "./request";

type Handler = NativeRoute;

// Bound once, not read from the global object in the hot path: a compiled function's read of a
// global left its compiled form whenever that object changed (docs/performance.md, "Compiles in
// the measured windows").
const performanceClock = performance;

/**
 * An answer of this server: with what counting it needs once written (`countPath` set when it is
 * counted), kept on the answer itself rather than in a callback made for each request.
 */
interface CountedAnswer extends Answer {
  countPath: string | undefined;
  countStats: ReturnType<AnswerCounter["nativeStats"]> | undefined;
  countSite: string | undefined;
  countHead: RequestHead | undefined;
  countConnection: Connection | undefined;
  startedAt: number;
}

/** A hot request waiting for the end of its turn. */
interface HotWaiting {
  readonly output: Output;
  readonly answer: Answer;
  readonly light: H1Request;
  readonly hot: HotRoute;
}

export interface H1ServerOptions {
  port: number;
  hostname: string;
  /** Bodies past it are refused with 413 in the envelope: declared ones before a byte is read. */
  maxRequestBodySize: number;
  /** Whatever escapes every handler: logged, answered 500 in the envelope. */
  onError(error: Error): void;
  /** Counts each answer by route and status (and writes the access log when enabled). */
  requests?: AnswerCounter;
  /** A server span per request when tracing is on (absent: nothing is traced, nothing parsed). */
  tracing?: ServerTracing;
  timeouts?: Partial<Timeouts>;
  /** The clock the timeouts read (tests move it), and how often connections are swept. */
  now?: () => number;
  sweepMs?: number;
  /** Share the port with other listeners (SO_REUSEPORT); default: in a cluster's worker process. */
  reusePort?: boolean;
}

/** A Host field value this server builds a URL of: a name or address and an optional port. */
const USABLE_HOST = /^(?:[A-Za-z0-9._~-]+|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;
/**
 * Whether a Host is one to build a URL of, remembering the last usable one (clients send the same
 * one request after request).
 */
function hostCheck(): (host: string | null | undefined) => host is string {
  let last = "";
  return (host): host is string => {
    if (host === last) return true;
    if (typeof host !== "string" || !USABLE_HOST.test(host)) return false;
    last = host;
    return true;
  };
}

/** The connection a request came on (for the peer address), kept on the request itself. */
const PEER = Symbol("h1 connection");

/** A field's value (a repeated one is joined, as Headers joins it); undefined when absent. */
function fieldOf(head: RequestHead, lowerName: string): string | undefined {
  return fieldValue(head.fields, lowerName) ?? undefined;
}

/** A head's flat fields as the name and value pairs a `Request` is built from. */
function pairsOf(fields: readonly string[]): [string, string][] {
  const pairs: [string, string][] = [];
  for (let i = 0; i < fields.length; i += 2) pairs.push([fields[i] as string, fields[i + 1] as string]);
  return pairs;
}

const json = { "content-type": "application/json" };

function internalError(requestId: string): Response {
  return new Response(JSON.stringify(errorBody("internal_error", "Something went wrong.", requestId)), {
    status: 500,
    headers: json,
  });
}

/**
 * Serves the app over HTTP/1.1 parsed by this module (src/http/h1) on `Bun.listen`: each
 * connection's requests are handled as they arrive and answered in order, whatever each handler
 * awaits, which `Bun.serve` does not do for pipelining clients (src/http/node-server.ts). The
 * app's native routes (`serve.routes`, keyed decide) are called directly with a `Request`,
 * everything else through `app.fetch`; answers carry `x-request-id` and are counted once written.
 */
export function serveOverH1<A extends ServedApp>(app: A, options: H1ServerOptions): A {
  const routes = ((app.config.serve as { routes?: Record<string, Record<string, Handler>> } | undefined)?.routes ??
    {}) as Record<string, Record<string, Handler>>;
  const requests = options.requests;
  const tracing = options.tracing;
  const fetchApp = (request: Request) => app.fetch(request);
  const now = options.now ?? Date.now;
  const sweepMs = options.sweepMs ?? 1000;
  let clock = now();
  let date = new Date().toUTCString();
  const connections = new Set<Connection>();
  const usableHost = hostCheck();

  const newAnswer = (head: RequestHead | undefined, requestId: string): CountedAnswer => ({
    requestId,
    headOnly: head?.method === "HEAD",
    http10: head?.http10 ?? false,
    close: false,
    keepAlive10: head?.http10 === true && head.keepAlive,
    bytes: undefined,
    stream: undefined,
    status: 0,
    length: undefined,
    countPath: undefined,
    countStats: undefined,
    countSite: undefined,
    countHead: undefined,
    countConnection: undefined,
    startedAt: 0,
  });

  // Answers found at once are written after the code that found them, not in between: a turn's
  // batch is decided first and then written (as promises' reactions did), so the socket writes
  // (the kernel's TCP path) do not run between two requests' decisions and leave them cold.
  // Flat (output, answer, text) triples, written in order by one microtask.
  let settling: unknown[] = [];
  let spare: unknown[] = [];
  const settleAll = (): void => {
    const list = settling;
    settling = spare;
    for (let i = 0; i < list.length; i += 3) {
      try {
        (list[i] as Output).settle(list[i + 1] as Answer, list[i + 2] as string | Response);
      } catch (error) {
        // One answer's failure must not keep the others of the batch unwritten.
        options.onError(error instanceof Error ? error : new Error(String(error)));
      }
    }
    list.length = 0;
    spare = list;
  };
  const settleSoon = (output: Output, answer: Answer, text: string | Response): void => {
    if (settling.length === 0) queueMicrotask(settleAll);
    settling.push(output, answer, text);
  };
  /** Answers a hot request: after its turn's code when its route answered at once, else when it settles. */
  const answerHot = (output: Output, answer: Answer, light: H1Request, hot: HotRoute): void => {
    let text: string | Response | Promise<string | Response>;
    try {
      text = hot(light);
    } catch (error) {
      text = Promise.reject(error);
    }
    if (!(text instanceof Promise)) {
      settleSoon(output, answer, text);
      return;
    }
    text.then(
      (done) => output.settle(answer, done),
      (error: unknown) => {
        options.onError(error instanceof Error ? error : new Error(String(error)));
        output.settle(answer, internalError(answer.requestId));
      },
    );
  };
  // Under sustained load a turn's hot requests after its first run together once its reads are
  // done, where their code runs warm (src/http/turn-batch.ts says why); a waiting one is a small
  // record here, not a promise.
  const hotTurn = new TurnQueue<HotWaiting>((w) => answerHot(w.output, w.answer, w.light, w.hot));

  /** Marks an answer to be counted in the request statistics once written (`answerWritten`). */
  const countWhenWritten = (
    requests: AnswerCounter,
    connection: Connection,
    head: RequestHead,
    path: string,
    native: Handler | undefined,
    answer: CountedAnswer,
    startedAt: number,
  ): void => {
    answer.countStats = native === undefined ? undefined : requests.nativeStats(head.method, path);
    answer.countSite = fieldOf(head, "x-svc-site-id");
    answer.countHead = head;
    answer.countConnection = connection;
    answer.startedAt = startedAt;
    answer.countPath = path;
  };
  /** Counts an answer once its head is written, or its peer is gone (`Output` calls it). */
  const answerWritten = (written: Answer, status: number): void => {
    const answer = written as CountedAnswer;
    const head = answer.countHead;
    if (requests === undefined || answer.countPath === undefined || head === undefined) return;
    try {
      const seconds = (performanceClock.now() - answer.startedAt) / 1000;
      requests.answered(
        answer.countStats,
        head.method,
        answer.countPath,
        status,
        seconds,
        answer.requestId,
        answer.countSite,
        // The client address is read only for the access log (off by default).
        requests.accessLog ? answer.countConnection?.socket.remoteAddress : undefined,
        requests.accessLog ? fieldOf(head, "x-forwarded-for") : undefined,
      );
    } catch {
      // Counting an answer already written must never fail it.
    }
  };

  /**
   * Every request but a routable one to a hot route: a fetch `Request` to the native route or the
   * app (traced when tracing is on), or 400 for a missing or invalid Host.
   */
  const dispatchFetch = (
    connection: Connection,
    head: RequestHead,
    body: Uint8Array | undefined,
    answer: CountedAnswer,
    path: string,
    native: Handler | undefined,
    startedAt: number,
    routable: boolean,
  ): Answer => {
    const output = connection.output;
    let request: Request | undefined;
    if (routable) {
      try {
        request = new Request(`http://${head.host}${head.target}`, {
          method: head.method,
          headers: pairsOf(head.fields),
          body: head.method === "GET" || head.method === "HEAD" ? undefined : body,
        });
      } catch {
        request = undefined;
      }
    }
    output.queue.push(answer);
    if (requests !== undefined) countWhenWritten(requests, connection, head, path, native, answer, startedAt);
    if (request === undefined) {
      output.settle(
        answer,
        appErrorResponse(new AppError("bad_request", "The Host header is missing or invalid."), answer.requestId),
      );
      return answer;
    }
    (request as unknown as Record<symbol, Connection>)[PEER] = connection;
    tagRequest(request, answer.requestId);
    let result: Response | Promise<Response>;
    try {
      if (tracing === undefined) result = native === undefined ? app.fetch(request) : native(request);
      else {
        const method = head.method;
        result = tracing.serve(
          request,
          () => (native !== undefined ? path : (requests?.routeOf(method, path) ?? UNMATCHED_ROUTE)),
          native ?? fetchApp,
        );
      }
    } catch (error) {
      result = Promise.reject(error);
    }
    if (result instanceof Promise) {
      result.then(
        (response) => output.settle(answer, response),
        (error: unknown) => {
          options.onError(error instanceof Error ? error : new Error(String(error)));
          output.settle(answer, internalError(answer.requestId));
        },
      );
    } else output.settle(answer, result);
    return answer;
  };

  const context: ConnectionContext = {
    maxBodyBytes: options.maxRequestBodySize,
    timeouts: { ...DEFAULT_TIMEOUTS, ...options.timeouts },
    now: () => clock,
    clockSlackMs: sweepMs,
    date: () => date,
    answerWritten: requests === undefined ? undefined : answerWritten,
    refusal(connection: Connection, refusal: Refusal): Answer {
      const answer = newAnswer(undefined, requestIdOf(undefined));
      answer.close = true;
      answer.status = refusal.status;
      const code = refusal.status === 413 ? "payload_too_large" : "bad_request";
      const body = JSON.stringify(errorBody(code, refusal.message, answer.requestId));
      const head = encodeHead(refusal.status, new Headers(json), { length: Buffer.byteLength(body) }, answer, date);
      answer.bytes = Buffer.from(head + body, "utf8");
      connection.output.queue.push(answer);
      connection.output.flush();
      return answer;
    },
    dispatch(connection: Connection, head: RequestHead, body: Uint8Array | undefined): Answer {
      // The hot route's path is this function alone, kept small: JavaScriptCore delays optimising
      // a function by its size, and a large one (this one held the fetch path too) was still
      // being compiled minutes into a load, on the request thread's core (docs/performance.md).
      const startedAt = performanceClock.now();
      const target = head.target;
      const query = target.indexOf("?");
      const path = query === -1 ? target : target.slice(0, query);
      const native = routes[path]?.[head.method];
      // A native route's hot path takes the light request (no `Request` built); traced, it does not.
      const hot = tracing === undefined ? native?.hot : undefined;
      const answer = newAnswer(head, requestIdOf(fieldOf(head, "x-request-id")));
      const routable = usableHost(head.host) && target.charCodeAt(0) === 47;
      if (!routable || hot === undefined) {
        return dispatchFetch(connection, head, body, answer, path, native, startedAt, routable);
      }
      const output = connection.output;
      output.queue.push(answer);
      if (requests !== undefined) countWhenWritten(requests, connection, head, path, native, answer, startedAt);
      const light = new H1Request(
        head,
        head.method === "GET" || head.method === "HEAD" ? undefined : body,
        answer.requestId,
      );
      (light as unknown as Record<symbol, Connection>)[PEER] = connection;
      if (hotTurn.admit()) hotTurn.defer({ output, answer, light, hot });
      else answerHot(output, answer, light, hot);
      return answer;
    },
  };

  const listener = Bun.listen({
    hostname: options.hostname,
    port: options.port,
    allowHalfOpen: true,
    // A cluster's workers (SVC_WORKERS) share the port; a lone server must still fail on a taken one.
    reusePort: options.reusePort ?? cluster.isWorker,
    socket: {
      // Reads as plain Uint8Arrays (connection.ts searches and decodes them with Buffer's methods).
      binaryType: "uint8array",
      open(socket: Socket<Connection>) {
        socket.setNoDelay(true);
        const connection = new Connection(socket as Socket<unknown>, context);
        socket.data = connection;
        connections.add(connection);
      },
      data(socket: Socket<Connection>, chunk: Uint8Array) {
        socket.data.onData(chunk);
      },
      drain(socket: Socket<Connection>) {
        socket.data.output.drain();
      },
      end(socket: Socket<Connection>) {
        socket.data.onEnd();
      },
      close(socket: Socket<Connection>) {
        const connection = socket.data;
        if (connection === undefined) return;
        connections.delete(connection);
        connection.output.onClose();
      },
      error(socket: Socket<Connection>, error: Error) {
        options.onError(error);
        socket.end();
      },
    },
  } as Bun.TCPSocketListenOptions<Connection>);

  const sweeper = setInterval(() => {
    clock = now();
    date = new Date().toUTCString();
    for (const connection of connections) connection.sweep(clock);
  }, sweepMs);
  sweeper.unref();

  const handle: NodeServerHandle = {
    port: listener.port,
    hostname: options.hostname,
    requestIP(request) {
      const socket = (request as unknown as Record<symbol, Connection | undefined>)[PEER]?.socket;
      return socket === undefined
        ? null
        : { address: socket.remoteAddress, family: socket.remoteFamily, port: socket.remotePort };
    },
    async stop(closeActiveConnections = false) {
      clearInterval(sweeper);
      listener.stop(closeActiveConnections);
      for (const connection of connections) {
        if (closeActiveConnections) connection.socket.end();
        else connection.closeIfIdle();
      }
    },
  };
  app.server = handle;
  return app;
}
