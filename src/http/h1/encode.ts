/** Response heads of HTTP/1.1 (RFC 9112 section 4), written from a fetch `Response`'s headers. */

const REASONS: Record<number, string> = {
  100: "Continue",
  200: "OK",
  201: "Created",
  202: "Accepted",
  204: "No Content",
  301: "Moved Permanently",
  302: "Found",
  303: "See Other",
  304: "Not Modified",
  307: "Temporary Redirect",
  308: "Permanent Redirect",
  400: "Bad Request",
  401: "Unauthorized",
  402: "Payment Required",
  403: "Forbidden",
  404: "Not Found",
  405: "Method Not Allowed",
  406: "Not Acceptable",
  408: "Request Timeout",
  409: "Conflict",
  410: "Gone",
  411: "Length Required",
  412: "Precondition Failed",
  413: "Content Too Large",
  414: "URI Too Long",
  415: "Unsupported Media Type",
  417: "Expectation Failed",
  422: "Unprocessable Content",
  428: "Precondition Required",
  429: "Too Many Requests",
  431: "Request Header Fields Too Large",
  500: "Internal Server Error",
  501: "Not Implemented",
  502: "Bad Gateway",
  503: "Service Unavailable",
  504: "Gateway Timeout",
  505: "HTTP Version Not Supported",
};

const statusLines = new Map<number, string>();

function statusLine(status: number): string {
  let line = statusLines.get(status);
  if (line === undefined) {
    line = `HTTP/1.1 ${status} ${REASONS[status] ?? ""}\r\n`;
    if (status >= 100 && status < 600) statusLines.set(status, line);
  }
  return line;
}

/** Header fields the transport writes itself (framing, connection, the request id, the date). */
const OWN_FIELDS = new Set([
  "content-length",
  "transfer-encoding",
  "connection",
  "keep-alive",
  "date",
  "x-request-id",
  "set-cookie",
]);

/** How the body that follows the head is delimited. */
export type Framing = { readonly length: number } | "chunked" | "close";

export interface HeadFields {
  readonly requestId: string;
  /** The connection closes after this answer. */
  readonly close: boolean;
  /** An HTTP/1.0 client that asked to keep the connection open. */
  readonly keepAlive10: boolean;
}

/** Whether a status may carry a body and Content-Length (RFC 9110 sections 8.6 and 15). */
export function bodyless(status: number): boolean {
  return status < 200 || status === 204 || status === 304;
}

const JSON_200 = `${statusLine(200)}content-type: application/json\r\ncontent-length: `;

/**
 * The head `encodeHead` writes for a 200 of `application/json` with a known length, built with
 * no `Headers` to read (a hot route's answer). Its request id is printable ASCII (request-id.ts).
 */
export function encodeJsonHead(length: number, fields: HeadFields, date: string): string {
  return `${JSON_200}${length}\r\ndate: ${date}\r\nx-request-id: ${fields.requestId}\r\n${
    fields.close ? "connection: close\r\n" : fields.keepAlive10 ? "connection: keep-alive\r\n" : ""
  }\r\n`;
}

/** The response head as latin1 text: status line, the answer's fields, then the transport's own. */
export function encodeHead(
  status: number,
  headers: Headers,
  framing: Framing,
  fields: HeadFields,
  date: string,
): string {
  let head = statusLine(status);
  let cookies = false;
  headers.forEach((value, name) => {
    if (!OWN_FIELDS.has(name)) head += `${name}: ${value}\r\n`;
    else if (name === "set-cookie") cookies = true;
  });
  if (cookies) for (const cookie of headers.getSetCookie()) head += `set-cookie: ${cookie}\r\n`;
  if (framing === "chunked") head += "transfer-encoding: chunked\r\n";
  else if (framing !== "close" && !bodyless(status)) head += `content-length: ${framing.length}\r\n`;
  head += `date: ${date}\r\nx-request-id: ${fields.requestId}\r\n`;
  if (fields.close || framing === "close") head += "connection: close\r\n";
  else if (fields.keepAlive10) head += "connection: keep-alive\r\n";
  return `${head}\r\n`;
}
