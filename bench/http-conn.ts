/**
 * A raw HTTP/1.1 keep-alive connection over `Bun.connect`. Responses are matched to the tags of
 * the requests sent, first in first out, so it can pipeline; the bench nevertheless keeps ONE
 * request in flight per connection: Bun 1.4.5's server never answers pipelined requests whose
 * handler awaits across an event-loop turn (a timer, a Postgres round trip), so pipelining would
 * measure that bug instead of the server. Parses only what the bench needs (status,
 * Content-Length or chunked framing, the presence of Retry-After).
 */
import type { Socket } from "bun";

export type OnResponse = (tag: number, status: number, retryAfter: boolean, nowMs: number) => void;

const CRLF = Buffer.from("\r\n");
const HEADER_END = Buffer.from("\r\n\r\n");

/**
 * The bytes of one POST (pre-built once, written many times). The Host is 127.0.0.1 without a
 * port, so one set of requests serves the decide and the ceiling servers alike.
 */
export function buildRequest(path: string, headers: Record<string, string>, body: string): Uint8Array {
  const bodyBytes = Buffer.from(body, "utf8");
  let head = `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\n`;
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
  head += `content-length: ${bodyBytes.length}\r\n\r\n`;
  return Buffer.concat([Buffer.from(head, "latin1"), bodyBytes]);
}

/**
 * Many pre-built requests in ONE buffer with offsets: a single object for the collector to
 * skip, where 100,000 separate buffers made full collections in the sender slow enough to show
 * up as send lag in long runs.
 */
export class RequestPool {
  private constructor(
    private readonly bytes: Uint8Array,
    private readonly offsets: Uint32Array,
  ) {}

  static from(requests: Iterable<Uint8Array>, count: number): RequestPool {
    const parts: Uint8Array[] = [];
    const offsets = new Uint32Array(count + 1);
    let total = 0;
    let i = 0;
    for (const r of requests) {
      parts.push(r);
      total += r.length;
      offsets[++i] = total;
    }
    if (i !== count) throw new Error(`RequestPool.from: expected ${count} requests, got ${i}`);
    const bytes = new Uint8Array(total);
    for (let k = 0; k < count; k++) bytes.set(parts[k] as Uint8Array, offsets[k] as number);
    return new RequestPool(bytes, offsets);
  }

  get size(): number {
    return this.offsets.length - 1;
  }

  /** Every request's bytes, and request i's offsets at [i, i + 1] (for the open-loop sender's plan). */
  raw(): { bytes: Uint8Array; offsets: Uint32Array } {
    return { bytes: this.bytes, offsets: this.offsets };
  }

  /** A view of request `i` (no copy). */
  get(i: number): Uint8Array {
    return this.bytes.subarray(this.offsets[i] as number, this.offsets[i + 1] as number);
  }
}

/** End offset of a chunked body starting at `p`, or -1 when not all of it is in `buf`. */
function chunkedEnd(buf: Buffer, p: number): number {
  let pos = p;
  for (;;) {
    const lineEnd = buf.indexOf(CRLF, pos);
    if (lineEnd < 0) return -1;
    const size = Number.parseInt(buf.toString("latin1", pos, lineEnd), 16);
    if (Number.isNaN(size)) throw new Error("malformed chunk size");
    if (size === 0) {
      // No trailers are expected: the last chunk is followed by one empty line.
      const end = lineEnd + 4;
      return end <= buf.length ? end : -1;
    }
    pos = lineEnd + 2 + size + 2;
    if (pos > buf.length) return -1;
  }
}

export class HttpConnection {
  private socket: Socket<undefined> | null = null;
  private tags = new Int32Array(1024);
  private head = 0;
  private count = 0;
  private outQueue: Uint8Array[] = [];
  private pending: Buffer | null = null;
  closed = false;
  error: string | null = null;

  private constructor(private readonly onResponse: OnResponse) {}

  static async open(port: number, onResponse: OnResponse): Promise<HttpConnection> {
    const conn = new HttpConnection(onResponse);
    conn.socket = await Bun.connect({
      hostname: "127.0.0.1",
      port,
      socket: {
        data: (_s, chunk) => conn.onData(chunk),
        drain: () => conn.flushQueue(),
        close: () => {
          conn.closed = true;
        },
        error: (_s, err) => {
          conn.error = String(err);
          conn.closed = true;
        },
        end: () => {
          conn.closed = true;
        },
      },
    });
    conn.socket.setNoDelay(true);
    return conn;
  }

  /** Requests sent and not yet answered. */
  get inFlight(): number {
    return this.count;
  }

  /** Sends (or queues, under backpressure) one request; its response will carry `tag`. */
  send(bytes: Uint8Array, tag: number): boolean {
    if (this.closed || !this.socket) return false;
    this.push(tag);
    if (this.outQueue.length > 0) {
      this.outQueue.push(bytes);
      return true;
    }
    const written = this.socket.write(bytes);
    if (written < bytes.length) this.outQueue.push(bytes.subarray(Math.max(0, written)));
    return true;
  }

  /** Tags of requests that will never be answered (after a close). */
  abandon(): number[] {
    const out: number[] = [];
    while (this.count > 0) out.push(this.shift());
    return out;
  }

  close(): void {
    this.closed = true;
    this.socket?.end();
  }

  private flushQueue(): void {
    const socket = this.socket;
    if (!socket) return;
    while (this.outQueue.length > 0) {
      const bytes = this.outQueue[0] as Uint8Array;
      const written = socket.write(bytes);
      if (written < bytes.length) {
        this.outQueue[0] = bytes.subarray(Math.max(0, written));
        return;
      }
      this.outQueue.shift();
    }
  }

  private push(tag: number): void {
    if (this.count === this.tags.length) {
      const bigger = new Int32Array(this.tags.length * 2);
      for (let i = 0; i < this.count; i++) bigger[i] = this.tags[(this.head + i) % this.tags.length] as number;
      this.tags = bigger;
      this.head = 0;
    }
    this.tags[(this.head + this.count) % this.tags.length] = tag;
    this.count++;
  }

  private shift(): number {
    const tag = this.tags[this.head] as number;
    this.head = (this.head + 1) % this.tags.length;
    this.count--;
    return tag;
  }

  private onData(chunk: Buffer): void {
    const now = performance.now();
    const buf = this.pending ? Buffer.concat([this.pending, chunk]) : chunk;
    let pos = 0;
    while (pos < buf.length) {
      const headerEnd = buf.indexOf(HEADER_END, pos);
      if (headerEnd < 0) break;
      const head = buf.toString("latin1", pos, headerEnd).toLowerCase();
      const status = Number(head.slice(9, 12));
      const bodyStart = headerEnd + 4;
      let end: number;
      const cl = head.indexOf("\r\ncontent-length:");
      if (cl >= 0) {
        const lineEnd = head.indexOf("\r\n", cl + 2);
        end = bodyStart + Number(head.slice(cl + 17, lineEnd < 0 ? undefined : lineEnd).trim());
      } else if (head.includes("\r\ntransfer-encoding: chunked")) {
        end = chunkedEnd(buf, bodyStart);
        if (end < 0) break;
      } else {
        end = bodyStart;
      }
      if (end > buf.length) break;
      const retryAfter = head.includes("\r\nretry-after:");
      if (this.count > 0) this.onResponse(this.shift(), status, retryAfter, now);
      pos = end;
    }
    this.pending = pos < buf.length ? Buffer.from(buf.subarray(pos)) : null;
  }
}
