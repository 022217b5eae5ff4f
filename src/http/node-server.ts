import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { AppError, errorBody } from "../infra/errors";
import { appErrorResponse } from "./error-envelope";
import { requestIdOf, tagRequest } from "./request-id";
import { type RequestStats, type RouteStats, UNMATCHED_ROUTE } from "./request-stats";
import type { ServerTracing } from "./server-tracing";

type Handler = (request: Request) => Response | Promise<Response>;

/** What the transport needs of the app: Elysia's `fetch`, its native routes, and its server slot. */
export interface ServedApp {
  fetch: Handler;
  config: { serve?: unknown };
  server: unknown;
}

export interface NodeServerOptions {
  port: number;
  hostname: string;
  /** A backstop: a body past it is refused (bare 413) and the connection closed. */
  maxRequestBodySize: number;
  /** How long a keep-alive connection with nothing in flight stays open (SVC_HTTP_IDLE_TIMEOUT_MS). */
  idleTimeoutMs: number;
  /** Whatever escapes every handler: logged, answered 500 in the envelope. */
  onError(error: Error): void;
  /** Counts each answer by route and status (and writes the access log when enabled). */
  requests?: RequestStats;
  /** A server span per request when tracing is on (absent: nothing is traced, nothing parsed). */
  tracing?: ServerTracing;
}

/** What `send` needs to label an answer: its id, start time, route and the request's site. */
interface Answering {
  readonly id: string;
  readonly startedAt: number;
  readonly method: string;
  readonly path: string;
  readonly stats: RouteStats | undefined;
  readonly site: string | string[] | undefined;
  /** The peer and its `X-Forwarded-For`, for the access log's client (read only when it is on). */
  readonly peer: string | undefined;
  readonly forwardedFor: string | string[] | undefined;
}

/** The part of Bun's `Server` the app reads (`app.server`): the port, the peer address, stop. */
export interface NodeServerHandle {
  readonly port: number;
  readonly hostname: string;
  requestIP(request: Request): { address: string; family: string; port: number } | null;
  stop(closeActiveConnections?: boolean): Promise<void>;
}

/**
 * Serves the app over Bun's `node:http` server instead of `Bun.serve`, because Bun 1.4.5's
 * `Bun.serve` closes a connection, unanswered, when it parses a request while the answer to the
 * one before it on that connection is still pending (HTTP/1.1 pipelining behind any handler that
 * awaits past its own turn: a store read, the per-turn batching). Its `node:http` server queues
 * such a request and answers it in order. The routes the app registers as Bun native routes
 * (`serve.routes`, keyed decide) are called directly, everything else through `app.fetch`, so
 * each handler sees the same `Request` it would under `Bun.serve`.
 */
export function serveOverNodeHttp<A extends ServedApp>(app: A, options: NodeServerOptions): A {
  const routes = ((app.config.serve as { routes?: Record<string, Record<string, Handler>> } | undefined)?.routes ??
    {}) as Record<string, Record<string, Handler>>;
  const peers = new WeakMap<Request, { address: string; family: string; port: number }>();
  const internalError = (requestId: string) =>
    new Response(JSON.stringify(errorBody("internal_error", "Something went wrong.", requestId)), {
      status: 500,
      headers: { "content-type": "application/json" },
    });

  const requests = options.requests;
  const send = (res: ServerResponse, response: Response, req: IncomingMessage, answering: Answering) =>
    write(res, response, req, answering, requests);

  const dispatch = (req: IncomingMessage, res: ServerResponse, body: Buffer | undefined, startedAt: number) => {
    const host = req.headers.host;
    const target = req.url ?? "/";
    const url = `http://${host}${target}`;
    const method = req.method ?? "GET";
    // The target's path, without parsing the URL a second time (canParse below vouches for it).
    const query = target.indexOf("?");
    const path = query === -1 ? target : target.slice(0, query);
    const native = routes[path]?.[method];
    const answering: Answering = {
      id: requestIdOf(req.headers["x-request-id"]),
      startedAt,
      method,
      path,
      stats: native === undefined ? undefined : requests?.nativeStats(method, path),
      site: req.headers["x-svc-site-id"],
      peer: requests?.accessLog ? req.socket.remoteAddress : undefined,
      forwardedFor: requests?.accessLog ? req.headers["x-forwarded-for"] : undefined,
    };
    if (host === undefined || !target.startsWith("/") || !URL.canParse(url)) {
      void send(
        res,
        appErrorResponse(new AppError("bad_request", "The Host header is missing or invalid."), answering.id),
        req,
        answering,
      );
      return;
    }
    const request = new Request(url, { method, headers: req.headers as Record<string, string>, body });
    tagRequest(request, answering.id);
    const socket = req.socket;
    peers.set(request, {
      address: socket.remoteAddress ?? "",
      family: socket.remoteFamily ?? "",
      port: socket.remotePort ?? 0,
    });
    let answer: Response | Promise<Response>;
    try {
      const tracing = options.tracing;
      if (tracing === undefined) answer = native === undefined ? app.fetch(request) : native(request);
      else {
        const route = () =>
          native !== undefined ? path : (options.requests?.routeOf(method, path) ?? UNMATCHED_ROUTE);
        answer = tracing.serve(request, route, native ?? ((r) => app.fetch(r)));
      }
    } catch (error) {
      answer = Promise.reject(error);
    }
    if (answer instanceof Promise) {
      answer.then(
        (response) => send(res, response, req, answering),
        (error: unknown) => {
          options.onError(error instanceof Error ? error : new Error(String(error)));
          return send(res, internalError(answering.id), req, answering);
        },
      );
    } else void send(res, answer, req, answering);
  };

  const server: Server = createServer((req, res) => {
    const startedAt = performance.now();
    const declared = req.headers["content-length"];
    if (declared !== undefined && Number(declared) > options.maxRequestBodySize) {
      refuseTooLarge(res);
      return;
    }
    if (req.method === "GET" || req.method === "HEAD" || declared === "0") {
      req.resume();
      dispatch(req, res, undefined, startedAt);
      return;
    }
    let first: Buffer | undefined;
    let chunks: Buffer[] | undefined;
    let size = 0;
    let refused = false;
    req.on("data", (chunk: Buffer) => {
      if (refused) return;
      size += chunk.byteLength;
      if (size > options.maxRequestBodySize) {
        refused = true;
        refuseTooLarge(res);
        return;
      }
      if (first === undefined) first = chunk;
      else if (chunks === undefined) chunks = [first, chunk];
      else chunks.push(chunk);
    });
    req.on("end", () => {
      if (!refused) dispatch(req, res, chunks === undefined ? first : Buffer.concat(chunks), startedAt);
    });
  });
  // A request the HTTP parser refuses (headers or target too large, malformed framing) still
  // gets its answer in the envelope, and the connection is closed.
  server.on("clientError", (error: Error & { code?: string }, socket: Duplex) => {
    if (!socket.writable) return socket.destroy();
    const tooLarge = error.code === "HPE_HEADER_OVERFLOW";
    const status = tooLarge ? "431 Request Header Fields Too Large" : "400 Bad Request";
    const requestId = requestIdOf(undefined);
    const body = JSON.stringify(
      errorBody(
        "bad_request",
        tooLarge ? "The request line or headers are too large." : "The request is not valid HTTP/1.1.",
        requestId,
      ),
    );
    socket.end(
      `HTTP/1.1 ${status}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nx-request-id: ${requestId}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
  // The same idle timeout as the other transports, so keep-alive clients see one server either way.
  server.keepAliveTimeout = options.idleTimeoutMs;
  server.listen(options.port, options.hostname);
  const address = server.address() as AddressInfo;

  const handle: NodeServerHandle = {
    port: address.port,
    hostname: options.hostname,
    requestIP: (request) => peers.get(request) ?? null,
    stop(closeActiveConnections = false) {
      return new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
        if (closeActiveConnections) server.closeAllConnections();
      });
    },
  };
  app.server = handle;
  return app;
}

function refuseTooLarge(res: ServerResponse): void {
  res.writeHead(413, { connection: "close", "content-length": "0", "x-request-id": requestIdOf(undefined) });
  res.end();
  res.socket?.destroySoon();
}

/** Writes the answer with its `x-request-id`, then counts it (the time includes the write). */
async function write(
  res: ServerResponse,
  response: Response,
  req: IncomingMessage,
  answering: Answering,
  requests: RequestStats | undefined,
): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  headers["x-request-id"] = answering.id;
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 1) headers["set-cookie"] = cookies;
  // A stream of events (the interventions stream) is written as it comes, never buffered whole.
  if (response.body !== null && headers["content-type"]?.toString().startsWith("text/event-stream")) {
    streamBody(res, response.body, headers, response.status);
    countAnswer(requests, answering, response.status);
    return;
  }
  const body = Buffer.from(await response.arrayBuffer());
  headers["content-length"] = String(body.byteLength);
  res.writeHead(response.status, headers);
  res.end(req.method === "HEAD" ? undefined : body);
  countAnswer(requests, answering, response.status);
}

function countAnswer(requests: RequestStats | undefined, answering: Answering, status: number): void {
  if (requests === undefined) return;
  try {
    requests.answered(
      answering.stats,
      answering.method,
      answering.path,
      status,
      (performance.now() - answering.startedAt) / 1000,
      answering.id,
      answering.site,
      answering.peer,
      answering.forwardedFor,
    );
  } catch {
    // Counting an answer already written must never fail it (nor end the process unhandled).
  }
}

/** Writes a streamed body chunk by chunk (chunked encoding); the client going away cancels it. */
function streamBody(
  res: ServerResponse,
  body: ReadableStream<Uint8Array>,
  headers: Record<string, string | string[]>,
  status: number,
): void {
  res.writeHead(status, headers);
  res.flushHeaders();
  const reader = body.getReader();
  res.on("close", () => {
    reader.cancel().catch(() => undefined);
  });
  const pump = (): void => {
    reader.read().then(
      ({ done, value }) => {
        if (done) {
          res.end();
          return;
        }
        if (res.destroyed) return;
        res.write(value);
        pump();
      },
      () => res.destroy(),
    );
  };
  pump();
}
