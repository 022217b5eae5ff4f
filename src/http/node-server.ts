import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Duplex } from "node:stream";
import { appErrorResponse } from "./error-envelope";
import { AppError, errorBody } from "./errors";

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
  /** Whatever escapes every handler: logged, answered 500 in the envelope. */
  onError(error: Error): void;
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
  const internalError = () =>
    new Response(JSON.stringify(errorBody("internal_error", "Something went wrong.")), {
      status: 500,
      headers: { "content-type": "application/json" },
    });

  const dispatch = (req: IncomingMessage, res: ServerResponse, body: Buffer | undefined) => {
    const host = req.headers.host;
    const target = req.url ?? "/";
    const url = `http://${host}${target}`;
    if (host === undefined || !target.startsWith("/") || !URL.canParse(url)) {
      void send(res, appErrorResponse(new AppError("bad_request", "The Host header is missing or invalid.")), req);
      return;
    }
    const method = req.method ?? "GET";
    const request = new Request(url, { method, headers: req.headers as Record<string, string>, body });
    const socket = req.socket;
    peers.set(request, {
      address: socket.remoteAddress ?? "",
      family: socket.remoteFamily ?? "",
      port: socket.remotePort ?? 0,
    });
    // The target's path, without parsing the URL a second time (canParse above vouched for it).
    const query = target.indexOf("?");
    const native = routes[query === -1 ? target : target.slice(0, query)]?.[method];
    let answer: Response | Promise<Response>;
    try {
      answer = native === undefined ? app.fetch(request) : native(request);
    } catch (error) {
      answer = Promise.reject(error);
    }
    if (answer instanceof Promise) {
      answer.then(
        (response) => send(res, response, req),
        (error: unknown) => {
          options.onError(error instanceof Error ? error : new Error(String(error)));
          return send(res, internalError(), req);
        },
      );
    } else void send(res, answer, req);
  };

  const server: Server = createServer((req, res) => {
    const declared = req.headers["content-length"];
    if (declared !== undefined && Number(declared) > options.maxRequestBodySize) {
      refuseTooLarge(res);
      return;
    }
    if (req.method === "GET" || req.method === "HEAD" || declared === "0") {
      req.resume();
      dispatch(req, res, undefined);
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
      if (!refused) dispatch(req, res, chunks === undefined ? first : Buffer.concat(chunks));
    });
  });
  // A request the HTTP parser refuses (headers or target too large, malformed framing) still
  // gets its answer in the envelope, and the connection is closed.
  server.on("clientError", (error: Error & { code?: string }, socket: Duplex) => {
    if (!socket.writable) return socket.destroy();
    const tooLarge = error.code === "HPE_HEADER_OVERFLOW";
    const status = tooLarge ? "431 Request Header Fields Too Large" : "400 Bad Request";
    const body = JSON.stringify(
      errorBody(
        "bad_request",
        tooLarge ? "The request line or headers are too large." : "The request is not valid HTTP/1.1.",
      ),
    );
    socket.end(
      `HTTP/1.1 ${status}\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
    );
  });
  // Bun.serve's default idle timeout, so keep-alive clients see the same server either way.
  server.keepAliveTimeout = 10_000;
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
  res.writeHead(413, { connection: "close", "content-length": "0" });
  res.end();
  res.socket?.destroySoon();
}

async function send(res: ServerResponse, response: Response, req: IncomingMessage): Promise<void> {
  const headers: Record<string, string | string[]> = {};
  response.headers.forEach((value, name) => {
    headers[name] = value;
  });
  const cookies = response.headers.getSetCookie();
  if (cookies.length > 1) headers["set-cookie"] = cookies;
  const body = Buffer.from(await response.arrayBuffer());
  headers["content-length"] = String(body.byteLength);
  res.writeHead(response.status, headers);
  res.end(req.method === "HEAD" ? undefined : body);
}
