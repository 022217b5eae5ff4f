import { serveOverH1 } from "../../../src/http/h1/server";
import type { NodeServerHandle } from "../../../src/http/node-server";
import type { RequestStats } from "../../../src/http/request-stats";

/** What a handler saw of one request: the framing the transport gave it. */
export interface Seen {
  method: string;
  target: string;
  headers: [string, string][];
  /** Base64 of the body (empty for GET and HEAD, which a fetch `Request` cannot carry). */
  body: string;
}

/** The record of a request in an answer header, readable on HEAD answers too. */
export const SEEN_HEADER = "x-seen";

export function encodeSeen(seen: Seen): string {
  return Buffer.from(JSON.stringify(seen)).toString("base64url");
}

export function decodeSeen(value: string | undefined): Seen | undefined {
  return value === undefined ? undefined : (JSON.parse(Buffer.from(value, "base64url").toString()) as Seen);
}

type Routes = Record<string, (request: Request) => Response | Promise<Response>>;

/**
 * The h1 transport over an app that answers every request with what it saw (in `x-seen`), plus
 * `extra` routes by path. Native routes (`serve.routes`) are given for `/native`.
 */
export function startRecordingServer(
  options: {
    maxBodyBytes?: number;
    extra?: Routes;
    now?: () => number;
    sweepMs?: number;
    onError?: (error: Error) => void;
    requests?: RequestStats;
  } = {},
) {
  const seen: Seen[] = [];
  const record = async (request: Request): Promise<Response> => {
    const url = new URL(request.url);
    const body = Buffer.from(await request.arrayBuffer()).toString("base64");
    const entry: Seen = {
      method: request.method,
      target: url.pathname + url.search,
      headers: [...request.headers],
      body,
    };
    seen.push(entry);
    return new Response(null, { status: 200, headers: { [SEEN_HEADER]: encodeSeen(entry), "content-length": "0" } });
  };
  const app = {
    config: { serve: { routes: { "/native": { POST: record } } } },
    server: undefined as unknown,
    fetch(request: Request): Response | Promise<Response> {
      const handler = options.extra?.[new URL(request.url).pathname];
      return handler === undefined ? record(request) : handler(request);
    },
  };
  serveOverH1(app, {
    port: 0,
    hostname: "127.0.0.1",
    maxRequestBodySize: options.maxBodyBytes ?? 1024 * 1024,
    onError: options.onError ?? (() => undefined),
    now: options.now,
    requests: options.requests,
    sweepMs: options.sweepMs,
  });
  const server = app.server as NodeServerHandle;
  return { server, port: server.port, seen };
}
