import type { Socket } from "bun";
import { bodyless, encodeHead, encodeJsonHead } from "./encode";

/** One request's place in its connection's queue of answers, written in the order requested. */
export interface Answer {
  readonly requestId: string;
  readonly headOnly: boolean;
  readonly http10: boolean;
  /** The connection closes after this answer. */
  close: boolean;
  readonly keepAlive10: boolean;
  /**
   * The encoded answer, once ready (a streamed one has its head here and its body below): bytes,
   * or a string written as UTF-8 (an ASCII head and a text body).
   */
  bytes: Uint8Array | string | undefined;
  /** The UTF-8 length of `bytes` when it is a string and that length is known. */
  length?: number;
  stream: ReadableStream<Uint8Array> | undefined;
  status: number;
}

/**
 * Told of each answer once its head is written, or its connection was gone (the server counts
 * its requests so): one function for every answer, so no answer carries a callback of its own.
 */
export type AnswerWritten = (answer: Answer, status: number) => void;

const CRLF = Buffer.from("\r\n");
/** Bytes of answers written but not yet taken by the socket, past which reading pauses. */
const MAX_BACKLOG = 1024 * 1024;
/** Bodies read as text and written with their head as one string. */
const TEXT = /^(?:application\/json|text\/)/;
const LAST_CHUNK = Buffer.from("0\r\n\r\n");
const EMPTY = new Uint8Array(0);
/** A copy of a range (Buffer's own `slice` is a view). */
const copy = Uint8Array.prototype.slice as (this: Uint8Array, start: number, end: number) => Uint8Array;

/**
 * A connection's outgoing side: answers queue in request order and each is written once it and
 * all before it are ready; bytes the socket does not take at once wait for its drain. A streamed
 * body (server-sent events) holds the queue until it ends.
 */
export class Output {
  readonly queue: Answer[] = [];
  private readonly pending: Uint8Array[] = [];
  private pendingBytes = 0;
  private streaming: ReadableStreamDefaultReader<Uint8Array> | undefined;
  private pumpOnDrain: (() => void) | undefined;
  private ending = false;
  closed = false;

  constructor(
    private readonly socket: Socket<unknown>,
    private readonly date: () => string,
    /** Called when the queue has room again or empties (the connection reads on, or ends). */
    private readonly onWritten: () => void,
    private readonly answerWritten?: AnswerWritten,
  ) {}

  get idle(): boolean {
    return this.queue.length === 0 && this.streaming === undefined && this.pending.length === 0;
  }

  /**
   * Gives `answer` its response: encoded whole, or as a stream when it is one of events. A string
   * is a hot route's JSON text (`NativeRoute.hot`), answered 200 as `application/json`.
   */
  settle(answer: Answer, response: Response | string): void {
    if (typeof response === "string") {
      this.settleJson(answer, response);
      return;
    }
    const status = response.status;
    answer.status = status;
    const type = response.headers.get("content-type") ?? "";
    const noBody = answer.headOnly || bodyless(status);
    // `response.body` makes a stream of any body: read only for a stream of events.
    if (noBody && type.startsWith("text/event-stream")) {
      // A HEAD of a stream: its head only (the stream never ends, so it has no length to give).
      response.body?.cancel().catch(() => undefined);
      answer.bytes = Buffer.from(encodeHead(status, response.headers, "chunked", answer, this.date()), "latin1");
      this.flush();
      return;
    }
    if (!noBody && type.startsWith("text/event-stream") && response.body !== null) {
      if (answer.http10) answer.close = true;
      const head = encodeHead(status, response.headers, answer.http10 ? "close" : "chunked", answer, this.date());
      answer.bytes = Buffer.from(head, "latin1");
      answer.stream = response.body;
      this.flush();
      return;
    }
    const failed = () => {
      // The body failed while being read: the connection cannot be answered in order any more.
      answer.status = 500;
      this.abort();
    };
    if (TEXT.test(type)) {
      // JSON and text: head and body written as one string (one native encoding, no copy).
      response.text().then((text) => {
        const length = Buffer.byteLength(text, "utf8");
        const head = encodeHead(status, response.headers, { length }, answer, this.date());
        // A head past ASCII (a latin1 header value) is written as latin1, not as UTF-8.
        if (Buffer.byteLength(head, "utf8") !== head.length) {
          answer.bytes = joined(head, noBody ? EMPTY : Buffer.from(text, "utf8"));
        } else {
          answer.bytes = noBody ? head : head + text;
          answer.length = noBody ? head.length : head.length + length;
        }
        this.flush();
      }, failed);
      return;
    }
    response.bytes().then((bytes) => {
      const head = encodeHead(status, response.headers, { length: bytes.byteLength }, answer, this.date());
      answer.bytes = joined(head, noBody ? EMPTY : bytes);
      this.flush();
    }, failed);
  }

  /**
   * A 200 of JSON text, its head written here (the same head `encodeHead` writes for it). The
   * answer is encoded once, head and body into one buffer (`encodeJson`), and written from it at
   * once when it is next in line: no string is measured or joined, and the socket is handed bytes.
   */
  private settleJson(answer: Answer, json: string): void {
    answer.status = 200;
    const at = encodeJson(json, answer, this.date());
    if (this.queue[0] === answer && this.pending.length === 0 && this.streaming === undefined && !this.ending) {
      this.writeRange(at.bytes, at.start, at.end);
      this.answerWritten?.(answer, 200);
      this.queue.shift();
      if (answer.close) this.end();
    } else {
      // An answer before it is not written yet: it waits as its own copy of the bytes.
      answer.bytes = copy.call(at.bytes, at.start, at.end);
    }
    this.flush();
  }

  /** Writes `bytes` from `start` to `end`; what the socket does not take is copied to wait. */
  private writeRange(bytes: Uint8Array, start: number, end: number): void {
    if (this.closed) return;
    const sent = Math.max(this.socket.write(bytes, start, end - start), 0);
    if (start + sent < end) {
      this.pending.push(copy.call(bytes, start + sent, end));
      this.pendingBytes += end - start - sent;
    }
  }

  /** Writes every ready answer at the head of the queue. */
  flush(): void {
    while (this.streaming === undefined && !this.ending) {
      const answer = this.queue[0];
      if (answer?.bytes === undefined) break;
      this.write(answer.bytes, answer.length);
      this.answerWritten?.(answer, answer.status);
      if (answer.stream !== undefined) {
        this.pump(answer, answer.stream.getReader() as ReadableStreamDefaultReader<Uint8Array>);
        return;
      }
      this.queue.shift();
      if (answer.close) this.end();
    }
    this.onWritten();
  }

  /**
   * Writes bytes, or a string as UTF-8 (`length`: its UTF-8 length when known); what the socket
   * does not take waits for its drain.
   */
  write(
    data: Uint8Array | string,
    length = typeof data === "string" ? Buffer.byteLength(data, "utf8") : data.byteLength,
  ): void {
    if (this.closed) return;
    if (this.pending.length > 0) {
      this.pending.push(typeof data === "string" ? Buffer.from(data, "utf8") : data);
      this.pendingBytes += length;
      return;
    }
    const sent = Math.max(this.socket.write(data), 0);
    if (sent < length) {
      const bytes = typeof data === "string" ? Buffer.from(data, "utf8") : data;
      this.pending.push(bytes.subarray(sent));
      this.pendingBytes += length - sent;
    }
  }

  /**
   * Answers the client has not read yet pass MAX_BACKLOG: the connection reads no more requests
   * until they drain (a client that pipelines without reading would otherwise grow them forever).
   */
  get backlogged(): boolean {
    return this.pendingBytes > MAX_BACKLOG;
  }

  drain(): void {
    while (this.pending.length > 0 && !this.closed) {
      const bytes = this.pending[0] as Uint8Array;
      const sent = Math.max(this.socket.write(bytes), 0);
      this.pendingBytes -= sent;
      if (sent < bytes.byteLength) {
        this.pending[0] = bytes.subarray(sent);
        return;
      }
      this.pending.shift();
    }
    if (this.ending) this.socket.end();
    const pump = this.pumpOnDrain;
    this.pumpOnDrain = undefined;
    pump?.();
    this.onWritten();
  }

  /** Ends the connection once everything queued for writing is written. */
  end(): void {
    this.ending = true;
    if (this.pending.length === 0) this.socket.end();
  }

  /** The peer is gone: nothing more is written; stats still count each answer as it settles. */
  onClose(): void {
    this.closed = true;
    this.streaming?.cancel().catch(() => undefined);
    this.streaming = undefined;
    for (const answer of this.queue) if (answer.bytes !== undefined) this.answerWritten?.(answer, answer.status);
  }

  /** A failed answer leaves a gap in the order: the connection is closed instead. */
  private abort(): void {
    this.closed = true;
    this.socket.end();
  }

  private pump(answer: Answer, reader: ReadableStreamDefaultReader<Uint8Array>): void {
    this.streaming = reader;
    const next = (): void => {
      reader.read().then(
        ({ done, value }) => {
          if (this.closed) return;
          if (done) {
            if (!answer.http10) this.write(LAST_CHUNK);
            this.streaming = undefined;
            this.queue.shift();
            if (answer.close) this.end();
            this.flush();
            return;
          }
          if (value.byteLength > 0) {
            this.write(answer.http10 ? value : chunk(value));
          }
          if (this.pending.length > 0) this.pumpOnDrain = next;
          else next();
        },
        () => this.abort(),
      );
    };
    next();
  }
}

/** Room before a JSON answer's body for its head (at most about 300 bytes). */
const HEAD_ROOM = 1024;
/** The largest `scratch` kept: a larger answer is encoded into a buffer of its own, then let go. */
const MAX_SCRATCH = 1024 * 1024;
/** Where hot JSON answers are encoded (one thread uses it at a time, and copies what must wait). */
let scratch = Buffer.allocUnsafe(64 * 1024);
const range = { bytes: scratch as Uint8Array, start: 0, end: 0 };

/**
 * Encodes a 200 of JSON: the body as UTF-8 after HEAD_ROOM, then its head (ASCII: the request id
 * is printable ASCII) just before it. Returns where the answer lies (a HEAD request's answer ends
 * with its head), in `scratch` or, for an answer too large for it, in a buffer of its own.
 */
export function encodeJson(
  json: string,
  fields: Answer,
  date: string,
): { bytes: Uint8Array; start: number; end: number } {
  // A UTF-16 code unit takes at most 3 bytes of UTF-8.
  const room = HEAD_ROOM + json.length * 3;
  let bytes = scratch;
  if (room > scratch.length) {
    bytes = Buffer.allocUnsafe(room);
    if (room <= MAX_SCRATCH) scratch = bytes;
  }
  const length = bytes.write(json, HEAD_ROOM, "utf8");
  const head = encodeJsonHead(length, fields, date);
  range.bytes = bytes;
  range.start = HEAD_ROOM - head.length;
  bytes.write(head, range.start, "latin1");
  range.end = fields.headOnly ? HEAD_ROOM : HEAD_ROOM + length;
  return range;
}

function joined(head: string, body: Uint8Array): Uint8Array {
  const headLength = Buffer.byteLength(head, "latin1");
  const out = Buffer.allocUnsafe(headLength + body.byteLength);
  out.write(head, 0, "latin1");
  out.set(body, headLength);
  return out;
}

function chunk(value: Uint8Array): Uint8Array {
  return Buffer.concat([Buffer.from(`${value.byteLength.toString(16)}\r\n`, "latin1"), value, CRLF]);
}
