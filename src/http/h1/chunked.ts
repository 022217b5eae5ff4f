import type { Refusal } from "./head";

/**
 * The chunked transfer coding of a request body (RFC 9112 section 7.1), decoded as bytes arrive.
 * Refused: a size that is not hex or has more than 16 digits, bare LF or CR, a chunk not ended
 * by CRLF, a malformed chunk extension or trailer field, and a body past the limit (413).
 */

const TCHAR = "!#$%&'*+\\-.^_`|~0-9A-Za-z";
/**
 * What may follow a chunk size on its line: extensions `;name` or `;name=token|"quoted"`. The
 * grammar allows whitespace around `;` and `=` (BWS); it is refused, as llhttp does, because
 * parsers that disagree on it disagree on where the chunk starts.
 */
const EXTENSIONS = new RegExp(
  `^(?:;[${TCHAR}]+(?:=(?:[${TCHAR}]+|"(?:[\\t \\x21\\x23-\\x5b\\x5d-\\x7e\\x80-\\xff]|\\\\[\\t \\x21-\\x7e\\x80-\\xff])*"))?)*$`,
);
const TRAILER_FIELD = new RegExp(`^[${TCHAR}]+:[\\t\\x20-\\x7e\\x80-\\xff]*$`);
/**
 * Fields that frame or route a request, refused in trailers (RFC 9110 section 6.5.1): a
 * Content-Length there is the start of a desync with any parser that honours it.
 */
const HEAD_ONLY = new Set(["content-length", "transfer-encoding", "host", "connection", "expect", "trailer"]);
/** Longest chunk-size line (with its extensions), and all trailer fields together. */
const MAX_LINE = 4096;
const MAX_TRAILERS = 16_384;

enum State {
  Size,
  Data,
  DataEnd,
  Trailers,
  Done,
}

const CR = 13;
const LF = 10;

function hexValue(byte: number): number {
  if (byte >= 48 && byte <= 57) return byte - 48;
  if (byte >= 97 && byte <= 102) return byte - 87;
  if (byte >= 65 && byte <= 70) return byte - 55;
  return -1;
}

export class ChunkedBody {
  private state = State.Size;
  private remaining = 0;
  private trailerBytes = 0;
  private size = 0;
  private readonly parts: Uint8Array[] = [];

  constructor(private readonly maxBytes: number) {}

  get done(): boolean {
    return this.state === State.Done;
  }

  /** The decoded body, once `done`. */
  body(): Uint8Array {
    return this.parts.length === 1 ? (this.parts[0] as Uint8Array) : Buffer.concat(this.parts);
  }

  /**
   * Consumes what it can of `buf` from `offset`; returns the offset reached (the bytes after
   * the body once `done`), or a refusal.
   */
  feed(buf: Uint8Array, offset: number): number | Refusal {
    let at = offset;
    while (at < buf.length && this.state !== State.Done) {
      if (this.state === State.Data) {
        const take = Math.min(this.remaining, buf.length - at);
        this.parts.push(buf.subarray(at, at + take));
        at += take;
        this.remaining -= take;
        if (this.remaining === 0) this.state = State.DataEnd;
        continue;
      }
      if (this.state === State.DataEnd) {
        if (buf.length - at < 2) return at;
        if (buf[at] !== CR || buf[at + 1] !== LF) return { status: 400, message: "A chunk is not ended by CRLF." };
        at += 2;
        this.state = State.Size;
        continue;
      }
      const lineEnd = buf.indexOf(LF, at);
      const limit = this.state === State.Size ? MAX_LINE : MAX_TRAILERS - this.trailerBytes;
      if (lineEnd === -1) {
        if (buf.length - at > limit) return { status: 400, message: "A chunk line is too long." };
        return at;
      }
      if (lineEnd - at > limit) return { status: 400, message: "A chunk line is too long." };
      if (lineEnd === at || buf[lineEnd - 1] !== CR) return { status: 400, message: "A bare LF in a chunked body." };
      const line = Buffer.prototype.toString.call(buf, "latin1", at, lineEnd - 1);
      const next = lineEnd + 1;
      if (this.state === State.Size) {
        const refused = this.sizeLine(line);
        if (refused !== undefined) return refused;
      } else if (line === "") this.state = State.Done;
      else {
        if (!TRAILER_FIELD.test(line)) return { status: 400, message: "A trailer field line is not valid." };
        if (HEAD_ONLY.has(line.slice(0, line.indexOf(":")).toLowerCase())) {
          return { status: 400, message: "A trailer field names the request's framing or routing." };
        }
        this.trailerBytes += next - at;
      }
      at = next;
    }
    return at;
  }

  private sizeLine(line: string): Refusal | undefined {
    let digits = 0;
    let size = 0;
    while (digits < line.length) {
      const value = hexValue(line.charCodeAt(digits));
      if (value === -1) break;
      size = size * 16 + value;
      digits++;
    }
    if (digits === 0 || digits > 16) return { status: 400, message: "A chunk size is not valid." };
    if (!EXTENSIONS.test(line.slice(digits))) return { status: 400, message: "A chunk extension is not valid." };
    if (size > this.maxBytes - this.size) return { status: 413, message: "The request body is too large." };
    this.size += size;
    this.remaining = size;
    this.state = size === 0 ? State.Trailers : State.Data;
    return undefined;
  }
}
