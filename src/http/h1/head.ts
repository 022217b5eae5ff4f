/**
 * The request head of HTTP/1.1 (RFC 9112 sections 3 and 5), parsed strictly. Framing is decided
 * here (section 6.3), so every ambiguity a proxy in front could read differently (request
 * smuggling, section 11.2) is a refusal, never a guess.
 */

/** A request the transport refuses before any handler sees it; the connection is then closed. */
export interface Refusal {
  readonly status: number;
  readonly message: string;
}

export interface RequestHead {
  readonly method: string;
  readonly target: string;
  readonly http10: boolean;
  /**
   * Field lines in order, flat: each name as sent, then its value without surrounding whitespace
   * (one array for a head, not one per field).
   */
  readonly fields: string[];
  /** The one Host field's value; undefined when absent, null when repeated. */
  readonly host: string | null | undefined;
  /** The declared body length; -1 without Content-Length. */
  readonly contentLength: number;
  readonly chunked: boolean;
  /** Whether the connection stays open after this request's answer (section 9.3). */
  readonly keepAlive: boolean;
  readonly expectContinue: boolean;
}

/** Longest request line (method, target, version) before 414. */
export const MAX_REQUEST_LINE = 8192;
/** Longest head (request line and field lines) before 431. */
export const MAX_HEAD = 16_384;
const MAX_FIELDS = 100;

const TCHAR = "!#$%&'*+\\-.^_`|~0-9A-Za-z";
/**
 * A whole head as the grammar allows it: a request line of single spaces, then field lines of a
 * token name, a colon and a value of visible characters, spaces, tabs and obs-text. Whitespace
 * before the colon, obs-fold (a line starting with whitespace), bare CR or LF, NUL and the other
 * control characters all fail it.
 */
const HEAD_GRAMMAR = new RegExp(
  `^[${TCHAR}]+ [\\x21-\\x7e]+ HTTP/\\d\\.\\d(?:\\r\\n[${TCHAR}]+:[\\t\\x20-\\x7e\\x80-\\xff]*)*$`,
);
const REQUEST_LINE = new RegExp(`^[${TCHAR}]+ [\\x21-\\x7e]+ HTTP/\\d\\.\\d$`);
const TOKEN = new RegExp(`^[${TCHAR}]+$`);
const DIGITS = /^\d{1,15}$/;
/**
 * The request-target forms (RFC 9112 section 3.2): origin-form, absolute-form and asterisk-form;
 * authority-form is CONNECT's, not served. The app answers the last two 400 (no route reads them).
 */
const TARGET_FORM = /^(?:\/|\*$|[A-Za-z][A-Za-z0-9+.-]*:\/\/)/;

/**
 * The methods served; any other token is 501 (section 3.1). CONNECT and TRACE are not: this
 * server is no proxy and echoes nothing.
 */
const METHODS = ["GET", "POST", "HEAD", "PUT", "DELETE", "OPTIONS", "PATCH"];

/**
 * Field names most clients send on every request, as they send them. A name found here is this
 * string, not a new one cut from the head (a request's head is otherwise a dozen new strings).
 */
const COMMON_NAMES = [
  "host",
  "Host",
  "accept",
  "Accept",
  "x-api-key",
  "connection",
  "Connection",
  "user-agent",
  "User-Agent",
  "content-type",
  "Content-Type",
  "x-request-id",
  "authorization",
  "Authorization",
  "x-svc-site-id",
  "content-length",
  "Content-Length",
  "accept-encoding",
  "Accept-Encoding",
  "x-forwarded-for",
  "X-Forwarded-For",
];
const NAMES_BY_LENGTH: string[][] = [];
for (const name of COMMON_NAMES) {
  const sameLength = NAMES_BY_LENGTH[name.length] ?? [];
  sameLength.push(name);
  NAMES_BY_LENGTH[name.length] = sameLength;
}

/** The field name `text` holds from `start` to `end`: a common one as it is, or a new string. */
function fieldName(text: string, start: number, end: number): string {
  const common = NAMES_BY_LENGTH[end - start];
  if (common !== undefined) {
    for (let i = 0; i < common.length; i++) {
      const name = common[i] as string;
      if (text.startsWith(name, start)) return name;
    }
  }
  return text.slice(start, end);
}

/** The method the request line starts with, when it is one served (`space`: where it ends). */
function methodOf(text: string, space: number): string | undefined {
  for (let i = 0; i < METHODS.length; i++) {
    const method = METHODS[i] as string;
    if (method.length === space && text.startsWith(method)) return method;
  }
  return undefined;
}

const refuse = (status: number, message: string): Refusal => ({ status, message });

function trimOws(value: string): string {
  return owsSlice(value, 0, value.length);
}

/** `text` from `start` to `end` without the spaces and tabs at either end. */
function owsSlice(text: string, start: number, end: number): string {
  while (start < end && (text.charCodeAt(start) === 32 || text.charCodeAt(start) === 9)) start++;
  while (end > start && (text.charCodeAt(end - 1) === 32 || text.charCodeAt(end - 1) === 9)) end--;
  return text.slice(start, end);
}

/** Whether a comma-separated field value names `token` (case-insensitive), e.g. Connection: close. */
function listHas(value: string, token: string): boolean {
  for (const item of value.split(",")) if (trimOws(item).toLowerCase() === token) return true;
  return false;
}

/**
 * Parses one request head: `text` is its bytes as latin1, without the empty line that ends it.
 * Returns the head, or the refusal to answer (400, 413 is the caller's, 417, 431, 501, 505).
 */
export function parseHead(text: string): RequestHead | Refusal {
  if (!HEAD_GRAMMAR.test(text)) return diagnose(text);
  let lineEnd = text.indexOf("\r\n");
  if (lineEnd === -1) lineEnd = text.length;
  if (lineEnd > MAX_REQUEST_LINE) return refuse(414, "The request line is too long.");
  // The grammar held: method SP target SP version, with no space inside any of the three.
  const firstSpace = text.indexOf(" ");
  const lastSpace = text.lastIndexOf(" ", lineEnd - 1);
  const versioned = lineEnd - lastSpace - 1 === 8;
  const http10 = versioned && text.startsWith("HTTP/1.0", lastSpace + 1);
  if (!http10 && !(versioned && text.startsWith("HTTP/1.1", lastSpace + 1))) {
    return refuse(505, "Only HTTP/1.1 and HTTP/1.0 are served.");
  }
  const method = methodOf(text, firstSpace);
  if (method === undefined) return refuse(501, "The request method is not implemented.");
  const target = text.slice(firstSpace + 1, lastSpace);
  if (!TARGET_FORM.test(target)) return refuse(400, "The request target is not valid.");
  const fields: string[] = [];
  let host: string | null | undefined;
  let contentLength = -1;
  let transferEncoding: string | undefined;
  let close = false;
  let keepAliveAsked = false;
  let expectContinue = false;
  // The grammar held, so every line after the first is `name:value` and ends at a CRLF or the end.
  for (let start = lineEnd + 2; start < text.length; start = lineEnd + 2) {
    lineEnd = text.indexOf("\r\n", start);
    if (lineEnd === -1) lineEnd = text.length;
    if (fields.length === MAX_FIELDS * 2) return refuse(431, "The request has too many header fields.");
    const colon = text.indexOf(":", start);
    const name = fieldName(text, start, colon);
    const value = owsSlice(text, colon + 1, lineEnd);
    fields.push(name, value);
    switch (name.length) {
      case 4:
        if (name.toLowerCase() === "host") host = host === undefined ? value : null;
        break;
      case 6:
        // An HTTP/1.0 client's expectation is ignored (RFC 9110 section 10.1.1).
        if (!http10 && name.toLowerCase() === "expect") {
          if (value.toLowerCase() !== "100-continue") return refuse(417, "Only Expect: 100-continue is served.");
          expectContinue = true;
        }
        break;
      case 10:
        if (name.toLowerCase() === "connection") {
          // As llhttp reads it: an option followed by a tab at the line's end is no option.
          const options = text.charCodeAt(lineEnd - 1) === 9 ? value.slice(0, value.lastIndexOf(",") + 1) : value;
          if (listHas(options, "close")) close = true;
          if (listHas(options, "keep-alive")) keepAliveAsked = true;
        }
        break;
      case 14:
        if (name.toLowerCase() === "content-length") {
          if (contentLength !== -1) return refuse(400, "Content-Length is repeated.");
          // A tab after the value is OWS to the grammar, but llhttp refuses it: so do we.
          if (!DIGITS.test(value) || text.charCodeAt(lineEnd - 1) === 9) {
            return refuse(400, "Content-Length is not a decimal length.");
          }
          contentLength = Number(value);
        }
        break;
      case 17:
        if (name.toLowerCase() === "transfer-encoding") {
          if (transferEncoding !== undefined) return refuse(400, "Transfer-Encoding is repeated.");
          if (text.charCodeAt(lineEnd - 1) === 9) return refuse(400, "Transfer-Encoding is not valid.");
          transferEncoding = value;
        }
        break;
    }
  }
  let chunked = false;
  if (transferEncoding !== undefined) {
    if (http10) return refuse(400, "Transfer-Encoding is not valid in HTTP/1.0.");
    if (contentLength !== -1) return refuse(400, "Transfer-Encoding and Content-Length are both present.");
    const codings = transferEncoding.split(",").map((c) => trimOws(c).toLowerCase());
    if (codings.length === 1 && codings[0] === "chunked") chunked = true;
    else if (codings.every((c) => TOKEN.test(c)) && !codings.includes("chunked")) {
      return refuse(501, "Only the chunked transfer coding is served.");
    } else return refuse(400, "Transfer-Encoding is not valid.");
  }
  return {
    method,
    target,
    http10,
    fields,
    host,
    contentLength,
    chunked,
    keepAlive: !close && (!http10 || keepAliveAsked),
    // A 100 is for HTTP/1.1 clients about to send a body (section 10.1.1 of RFC 9110).
    expectContinue: expectContinue && (chunked || contentLength > 0),
  };
}

/** Which part of a head that failed the grammar to name in the refusal. */
function diagnose(text: string): Refusal {
  const end = text.indexOf("\r\n");
  const requestLine = end === -1 ? text : text.slice(0, end);
  if (requestLine.length > MAX_REQUEST_LINE) return refuse(414, "The request line is too long.");
  if (!REQUEST_LINE.test(requestLine)) return refuse(400, "The request line is not valid HTTP/1.1.");
  return refuse(400, "A header field line is not valid HTTP/1.1.");
}

export function isRefusal(parsed: RequestHead | Refusal): parsed is Refusal {
  return "status" in parsed;
}
