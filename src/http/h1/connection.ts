import type { Socket } from "bun";
import { ChunkedBody } from "./chunked";
import { isRefusal, MAX_HEAD, MAX_REQUEST_LINE, parseHead, type Refusal, type RequestHead } from "./head";
import { type Answer, type AnswerWritten, Output } from "./output";

/** How long a request may take to arrive, and a quiet keep-alive connection may stay open. */
export interface Timeouts {
  /** From a request's first byte to the end of its head. */
  readonly headMs: number;
  /** From a request's first byte to the end of its body. */
  readonly requestMs: number;
  /** Between two reads of a body. */
  readonly bodyIdleMs: number;
  /** A connection with nothing in flight and nothing half-sent. */
  readonly keepAliveMs: number;
}

export const DEFAULT_TIMEOUTS: Timeouts = {
  headMs: 10_000,
  requestMs: 30_000,
  bodyIdleMs: 10_000,
  keepAliveMs: 10_000,
};

/** What a connection needs of its server. */
export interface ConnectionContext {
  readonly maxBodyBytes: number;
  readonly timeouts: Timeouts;
  /** The server's coarse clock (milliseconds), read on every read and at each sweep. */
  now(): number;
  /** How far behind the coarse clock may be (the sweep's interval). */
  readonly clockSlackMs: number;
  date(): string;
  /** Starts handling one request; the answer is queued and settled through `output.settle`. */
  dispatch(connection: Connection, head: RequestHead, body: Uint8Array | undefined): Answer;
  /** A refused request's answer (the error envelope), queued like any other. */
  refusal(connection: Connection, refusal: Refusal): Answer;
  /** Told of each answer once written (request statistics); absent when nothing counts them. */
  readonly answerWritten?: AnswerWritten;
}

/** Answers in flight per connection before it stops reading (pipelining past it waits). */
const MAX_IN_FLIGHT = 64;
const CR = 13;
const LF = 10;
const CONTINUE = Buffer.from("HTTP/1.1 100 Continue\r\n\r\n");
const slice = Uint8Array.prototype.slice;
/**
 * Buffer's search and decoding, called on the plain Uint8Array each read arrives in (a read as a
 * Buffer costs an object more per read).
 */
export const indexOf = Buffer.prototype.indexOf as (
  this: Uint8Array,
  value: string | number,
  from?: number,
  encoding?: BufferEncoding,
) => number;
export const latin1 = Buffer.prototype.toString as (
  this: Uint8Array,
  encoding: "latin1",
  start: number,
  end: number,
) => string;

/** One client connection: reads requests off its bytes in order and hands each to the server. */
export class Connection {
  readonly output: Output;
  /** Bytes read and not yet parsed: `buf` from `at` (offsets, not views: a view costs a copy). */
  private buf: Uint8Array | undefined;
  private at = 0;
  /** A request whose head is read and whose body is not yet complete. */
  private head: RequestHead | undefined;
  private chunked: ChunkedBody | undefined;
  /** When the request being read began (0: none is), and the last read. */
  private startedAt = 0;
  private lastReadAt: number;
  private quietSince: number;
  private continueDue = false;
  private reading = true;
  private paused = false;
  private peerEnded = false;

  constructor(
    readonly socket: Socket<unknown>,
    private readonly context: ConnectionContext,
  ) {
    this.output = new Output(socket, context.date, () => this.afterWrite(), context.answerWritten);
    this.lastReadAt = this.quietSince = context.now();
  }

  onData(chunk: Uint8Array): void {
    this.lastReadAt = this.context.now();
    if (!this.reading) return;
    if (this.buf === undefined) this.buf = chunk;
    else {
      this.buf = Buffer.concat([this.at === 0 ? this.buf : this.buf.subarray(this.at), chunk]);
      this.at = 0;
    }
    this.parse();
  }

  /** The peer will send nothing more: what it sent in part is refused, the rest answered. */
  onEnd(): void {
    this.peerEnded = true;
    if (this.reading && !this.paused && (this.head !== undefined || this.buf !== undefined)) {
      this.refuse({ status: 400, message: "The connection ended inside a request." });
    } else this.afterWrite();
  }

  /** Cuts off a request that arrives too slowly, and closes a keep-alive connection left quiet. */
  sweep(now: number): void {
    const t = this.context.timeouts;
    if (this.startedAt !== 0 && this.reading) {
      const late =
        this.head === undefined
          ? now - this.startedAt > t.headMs
          : now - this.startedAt > t.requestMs || now - this.lastReadAt > t.bodyIdleMs;
      if (late) this.refuse({ status: 408, message: "The request took too long to arrive." });
    } else if (
      this.output.idle &&
      // The keep-alive time is a floor: the last read's time may be behind by the clock's slack.
      now - Math.max(this.quietSince, this.lastReadAt) > t.keepAliveMs + this.context.clockSlackMs
    ) {
      this.reading = false;
      this.output.end();
    }
  }

  /** The server stops: a connection with nothing in flight nor half-sent is closed now. */
  closeIfIdle(): void {
    if (this.output.idle && this.startedAt === 0) {
      this.stopReading();
      this.output.end();
    }
  }

  /** Enough answers are in flight or unread by the client: no more requests are read for now. */
  private full(): boolean {
    return this.output.queue.length >= MAX_IN_FLIGHT || this.output.backlogged;
  }

  private parse(): void {
    while (this.reading && this.buf !== undefined && !this.full()) {
      if (this.head === undefined ? !this.readHead() : !this.readBody()) return;
    }
    if (!this.reading) return;
    if (this.full()) {
      if (!this.paused) {
        this.paused = true;
        this.socket.pause();
      }
    } else if (this.peerEnded && (this.head !== undefined || this.buf !== undefined)) {
      this.refuse({ status: 400, message: "The connection ended inside a request." });
    }
  }

  /** Everything from `at` on is parsed: the buffer is let go. */
  private consumed(at: number): void {
    if (at >= (this.buf as Uint8Array).length) {
      this.buf = undefined;
      this.at = 0;
    } else this.at = at;
  }

  /** Reads a request head off the buffer; false when more bytes are needed (or it was refused). */
  private readHead(): boolean {
    const buf = this.buf as Uint8Array;
    let at = this.at;
    // An empty line before a request line is ignored (RFC 9112 section 2.2).
    while (buf.length - at >= 2 && buf[at] === CR && buf[at + 1] === LF) at += 2;
    if (at === buf.length || (at === buf.length - 1 && buf[at] === CR)) {
      this.consumed(at);
      return false;
    }
    if (this.startedAt === 0) this.startedAt = this.context.now();
    const end = indexOf.call(buf, "\r\n\r\n", at, "latin1");
    const lineEnd = indexOf.call(buf, "\r\n", at, "latin1");
    const lineLength = (lineEnd === -1 ? buf.length : lineEnd) - at;
    if (lineLength > MAX_REQUEST_LINE) return this.refuse({ status: 414, message: "The request line is too long." });
    if ((end === -1 ? buf.length : end) - at > MAX_HEAD) {
      return this.refuse({ status: 431, message: "The request headers are too large." });
    }
    if (end === -1) {
      this.at = at;
      return false;
    }
    const head = parseHead(latin1.call(buf, "latin1", at, end));
    if (isRefusal(head)) return this.refuse(head);
    this.consumed(end + 4);
    if (head.contentLength > this.context.maxBodyBytes) {
      return this.refuse({ status: 413, message: "The request body is too large." });
    }
    if (head.chunked) this.chunked = new ChunkedBody(this.context.maxBodyBytes);
    else if (head.contentLength <= 0) {
      this.dispatch(head, undefined);
      return true;
    }
    this.head = head;
    if (head.expectContinue) {
      if (this.output.queue.length === 0) this.output.write(CONTINUE);
      else this.continueDue = true;
    }
    return true;
  }

  /** Reads the body of the request whose head was read; false when more bytes are needed. */
  private readBody(): boolean {
    const head = this.head as RequestHead;
    const buf = this.buf as Uint8Array;
    const at = this.at;
    const chunked = this.chunked;
    if (chunked !== undefined) {
      const reached = chunked.feed(buf, at);
      if (typeof reached !== "number") return this.refuse(reached);
      this.consumed(reached);
      if (!chunked.done) return false;
      this.dispatch(head, chunked.body());
      return true;
    }
    const length = head.contentLength;
    if (buf.length - at < length) return false;
    // A copy of the body's bytes, not a view of the read buffer (see `buf`).
    const body = slice.call(buf, at, at + length) as Uint8Array;
    this.consumed(at + length);
    this.dispatch(head, body);
    return true;
  }

  private dispatch(head: RequestHead, body: Uint8Array | undefined): void {
    this.head = undefined;
    this.chunked = undefined;
    this.startedAt = 0;
    this.continueDue = false;
    if (!head.keepAlive) this.stopReading();
    const answer = this.context.dispatch(this, head, body);
    if (!head.keepAlive) answer.close = true;
  }

  /** Answers the refusal in its turn, then closes: what follows it on the connection is not read. */
  private refuse(refusal: Refusal): false {
    this.stopReading();
    this.context.refusal(this, refusal);
    return false;
  }

  private stopReading(): void {
    this.reading = false;
    this.buf = undefined;
    this.at = 0;
    this.head = undefined;
    this.chunked = undefined;
    this.startedAt = 0;
  }

  private afterWrite(): void {
    const output = this.output;
    if (output.queue.length === 0) {
      this.quietSince = this.context.now();
      if (this.continueDue) {
        this.continueDue = false;
        output.write(CONTINUE);
      }
      if (this.peerEnded && this.head === undefined) {
        output.end();
        return;
      }
    }
    if (this.paused && !this.full()) {
      this.paused = false;
      this.socket.resume();
      this.parse();
    }
  }
}
