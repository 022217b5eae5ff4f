import { connect } from "node:net";

/** One answer read off the wire. */
export interface WireAnswer {
  status: number;
  headers: Record<string, string>;
  /** Raw header lines, as sent. */
  head: string;
  body: Buffer;
}

export interface Exchange {
  answers: WireAnswer[];
  /** Interim 1xx answers seen before final ones. */
  interim: number[];
  /** The server closed the connection. */
  closed: boolean;
}

/**
 * Reads HTTP/1.1 answers off `bytes`: Content-Length, chunked, or (HTTP/1.0-style) to the close.
 * `headRequests` lists, per answer, whether it answers a HEAD (no body follows its head).
 */
export function readAnswers(bytes: Buffer, closed: boolean, headRequests: readonly boolean[] = []): Exchange {
  const answers: WireAnswer[] = [];
  const interim: number[] = [];
  let at = 0;
  for (;;) {
    const end = bytes.indexOf("\r\n\r\n", at);
    if (end === -1) break;
    const head = bytes.toString("latin1", at, end);
    const lines = head.split("\r\n");
    const status = Number((lines[0] as string).slice(9, 12));
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(":");
      headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
    }
    let next = end + 4;
    if (status < 200) {
      interim.push(status);
      at = next;
      continue;
    }
    let body: Buffer = Buffer.alloc(0);
    if (headRequests[answers.length] === true || status === 204 || status === 304) {
      // No body follows.
    } else if (headers["transfer-encoding"] === "chunked") {
      const parts: Buffer[] = [];
      let complete = false;
      for (;;) {
        const lineEnd = bytes.indexOf("\r\n", next);
        if (lineEnd === -1) break;
        const size = Number.parseInt(bytes.toString("latin1", next, lineEnd), 16);
        if (size === 0) {
          if (bytes.length < lineEnd + 4) break;
          next = lineEnd + 4;
          complete = true;
          break;
        }
        if (bytes.length < lineEnd + 2 + size + 2) break;
        parts.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
        next = lineEnd + 2 + size + 2;
      }
      body = Buffer.concat(parts);
      if (!complete) {
        answers.push({ status, headers, head, body, partial: true } as WireAnswer);
        break;
      }
    } else if (headers["content-length"] !== undefined) {
      const length = Number(headers["content-length"]);
      if (bytes.length < next + length) break;
      body = bytes.subarray(next, next + length);
      next += length;
    } else {
      if (!closed) break;
      body = bytes.subarray(next);
      next = bytes.length;
    }
    answers.push({ status, headers, head, body });
    at = next;
  }
  return { answers, interim, closed };
}

/** A chunked answer still streaming is read as far as it came; it is complete once its last chunk is in. */
const complete = (answer: WireAnswer & { partial?: boolean }) => answer.partial !== true;

export interface SendOptions {
  /** Half-close after writing (the server then answers what it has and closes). */
  end?: boolean;
  /** Resolve once this many final answers have arrived (without waiting for the close). */
  answers?: number;
  headRequests?: readonly boolean[];
  /** Called with the socket once connected, to write more later. */
  onOpen?: (write: (bytes: string | Buffer) => void) => void;
  /** Stop waiting after this long (a safety net for a test that would otherwise hang). */
  limitMs?: number;
  /** Called for each interim (1xx) answer as it arrives. */
  onInterim?: (status: number) => void;
  /** Called with everything received so far, on each read. */
  onData?: (received: Buffer) => void;
}

/** Writes `bytes` to 127.0.0.1:`port` and reads what comes back until the close (or `answers`). */
export function send(port: number, bytes: string | Buffer, options: SendOptions = {}): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: "127.0.0.1", allowHalfOpen: true });
    let received = Buffer.alloc(0);
    let settled = false;
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(limit);
      socket.destroy();
      resolve(readAnswers(received, closed, options.headRequests));
    };
    const limit = setTimeout(() => finish(false), options.limitMs ?? 10_000);
    let interims = 0;
    socket.on("data", (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      options.onData?.(received);
      const { answers, interim } = readAnswers(received, false, options.headRequests);
      for (; interims < interim.length; interims++) options.onInterim?.(interim[interims] as number);
      if (options.answers !== undefined && answers.filter((a) => complete(a)).length >= options.answers) {
        finish(false);
      }
    });
    socket.on("end", () => finish(true));
    socket.on("close", () => finish(true));
    socket.on("error", () => finish(true));
    socket.on("connect", () => {
      if (bytes.length > 0) socket.write(bytes);
      options.onOpen?.((more) => socket.write(more));
      if (options.end) socket.end();
    });
  });
}
