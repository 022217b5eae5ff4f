import { requestIdFor, tagRequest } from "../http/request-id";
import type { Channel } from "./channel";

/**
 * Requests the request thread does not answer itself, handed to the main thread's app and
 * answered back (src/decide-thread). A request crosses as its method, URL, fields, body and peer;
 * an answer as its status, fields and body, whole, except a stream of events (the interventions
 * stream's SSE), which crosses chunk by chunk as the app writes it and is cancelled on the main
 * thread when its client goes.
 */
export interface Peer {
  readonly address: string;
  readonly family: string;
  readonly port: number;
}

interface Forwarded {
  readonly id: number;
  readonly method: string;
  readonly url: string;
  readonly fields: [string, string][];
  readonly body: ArrayBuffer | null;
  readonly peer: Peer | null;
  readonly requestId: string;
}

interface Head {
  readonly id: number;
  readonly status: number;
  readonly fields: [string, string][];
  /** The whole body; null with `streamed` for a stream of events, or for no body. */
  readonly body: ArrayBuffer | null;
  readonly streamed: boolean;
}

const isEventStream = (response: Response) =>
  (response.headers.get("content-type") ?? "").startsWith("text/event-stream");

/**
 * The request thread's side: a `fetch` that answers by the main thread's app. `peerOf` reads the
 * request's peer from the transport (its `requestIP`).
 */
export function forwarder(channel: Channel, peerOf: (request: Request) => Peer | null) {
  let nextId = 1;
  const heads = new Map<number, { resolve(r: Response): void; reject(e: Error): void }>();
  const streams = new Map<number, ReadableStreamDefaultController<Uint8Array>>();
  channel.on("forward.head", (payload) => {
    const head = payload as Head;
    const waiting = heads.get(head.id);
    if (waiting === undefined) return;
    heads.delete(head.id);
    if (!head.streamed) {
      waiting.resolve(new Response(head.body, { status: head.status, headers: head.fields }));
      return;
    }
    const body = new ReadableStream<Uint8Array>({
      start: (controller) => {
        streams.set(head.id, controller);
      },
      cancel: () => {
        streams.delete(head.id);
        channel.emit("forward.cancel", head.id);
      },
    });
    waiting.resolve(new Response(body, { status: head.status, headers: head.fields }));
  });
  channel.on("forward.chunk", (payload) => {
    const { id, bytes } = payload as { id: number; bytes: Uint8Array };
    streams.get(id)?.enqueue(bytes);
  });
  channel.on("forward.end", (payload) => {
    const id = payload as number;
    const controller = streams.get(id);
    streams.delete(id);
    controller?.close();
  });
  channel.on("forward.fail", (payload) => {
    const { id, message } = payload as { id: number; message: string };
    const error = new Error(message);
    heads.get(id)?.reject(error);
    heads.delete(id);
    streams.get(id)?.error(error);
    streams.delete(id);
  });

  return async (request: Request): Promise<Response> => {
    const id = nextId++;
    const body = request.body === null ? null : await request.arrayBuffer();
    const answered = new Promise<Response>((resolve, reject) => heads.set(id, { resolve, reject }));
    const forwarded: Forwarded = {
      id,
      method: request.method,
      url: request.url,
      fields: [...request.headers],
      body,
      peer: peerOf(request),
      requestId: requestIdFor(request),
    };
    channel.emit("forward.request", forwarded, body === null ? [] : [body]);
    return answered;
  };
}

/**
 * The main thread's side: each forwarded request answered by `fetch` (the app), with its peer
 * where the app's `requestIP` finds it (`peers`) and the request id its answer carries.
 */
export function serveForwarded(
  channel: Channel,
  fetch: (request: Request) => Response | Promise<Response>,
  peers: WeakMap<Request, Peer>,
  onError: (error: Error) => void,
): void {
  const reading = new Map<number, ReadableStreamDefaultReader<Uint8Array>>();
  channel.on("forward.cancel", (payload) => {
    const id = payload as number;
    reading
      .get(id)
      ?.cancel()
      .catch(() => undefined);
    reading.delete(id);
  });
  channel.on("forward.request", (payload) => {
    const forwarded = payload as Forwarded;
    const fail = (error: unknown) => {
      onError(error instanceof Error ? error : new Error(String(error)));
      channel.emit("forward.fail", { id: forwarded.id, message: "the app failed to answer" });
    };
    answer(forwarded).catch(fail);
  });

  const answer = async (forwarded: Forwarded): Promise<void> => {
    const { id } = forwarded;
    const request = new Request(forwarded.url, {
      method: forwarded.method,
      headers: forwarded.fields,
      body: forwarded.body,
    });
    if (forwarded.peer !== null) peers.set(request, forwarded.peer);
    tagRequest(request, forwarded.requestId);
    const response = await fetch(request);
    const fields = [...response.headers];
    if (response.body === null || !isEventStream(response)) {
      const body = response.body === null ? null : await response.arrayBuffer();
      const head: Head = { id, status: response.status, fields, body, streamed: false };
      channel.emit("forward.head", head, body === null ? [] : [body]);
      return;
    }
    const reader = response.body.getReader() as ReadableStreamDefaultReader<Uint8Array>;
    reading.set(id, reader);
    channel.emit("forward.head", { id, status: response.status, fields, body: null, streamed: true } satisfies Head);
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      if (!reading.has(id)) return;
      channel.emit("forward.chunk", { id, bytes: value });
    }
    reading.delete(id);
    channel.emit("forward.end", id);
  };
}
