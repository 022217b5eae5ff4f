import type { FieldReader, HotRequest } from "../../infra/hot-request";
import { tagRequest } from "../request-id";
import type { RequestHead } from "./head";

const utf8 = Buffer.prototype.toString as (this: Uint8Array, encoding: "utf8", start: number, end: number) => string;

/**
 * A field's value read by its lower-case `name` from a head's flat fields (name, value, ...), as
 * `Headers.get` reads it: null when absent, a repeated field's values joined with ", ".
 */
export function fieldValue(fields: readonly string[], name: string): string | null {
  let found: string | null = null;
  for (let i = 0; i < fields.length; i += 2) {
    const sent = fields[i] as string;
    if (sent.length === name.length && (sent === name || sent.toLowerCase() === name)) {
      found = found === null ? (fields[i + 1] as string) : `${found}, ${fields[i + 1]}`;
    }
  }
  return found;
}

/** A head's fields read by lower-case name, as `Headers.get` reads them (no copy made). */
class HeadFields implements FieldReader {
  constructor(private readonly fields: readonly string[]) {}

  get(name: string): string | null {
    return fieldValue(this.fields, name);
  }
}

/**
 * The request a hot route (`NativeRoute.hot`, keyed decide) is handed over the h1 transport: its
 * parsed head and whole body as they are, with no `Request` built. The body was already read
 * (and held to the body limit) by the connection.
 */
export class H1Request implements HotRequest {
  readonly headers: HeadFields;

  constructor(
    private readonly head: RequestHead,
    private readonly bytes: Uint8Array | undefined,
    requestId: string,
  ) {
    this.headers = new HeadFields(head.fields);
    tagRequest(this, requestId);
  }

  get method(): string {
    return this.head.method;
  }

  get url(): string {
    return `http://${this.head.host}${this.head.target}`;
  }

  get body(): ReadableStream<Uint8Array> | null {
    const bytes = this.bytes;
    return bytes === undefined ? null : new Blob([bytes]).stream();
  }

  /**
   * The body parsed as JSON; rejects as `Request.json()` does on malformed or absent text. A
   * leading byte order mark is dropped, as the fetch standard's UTF-8 decode drops it.
   */
  json(): Promise<unknown> {
    try {
      return Promise.resolve(this.jsonNow());
    } catch (error) {
      return Promise.reject(error);
    }
  }

  /** `json()` at once: the value, or the error thrown. */
  jsonNow(): unknown {
    const bytes = this.bytes;
    if (bytes === undefined) return JSON.parse("");
    const start = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0;
    return JSON.parse(utf8.call(bytes, "utf8", start, bytes.byteLength));
  }
}
