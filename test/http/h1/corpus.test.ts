import { afterAll, describe, expect, it } from "bun:test";
import { decodeSeen, SEEN_HEADER, startRecordingServer } from "./recording-app";
import { send } from "./wire";

/**
 * The request framing corpus, over real sockets against the h1 transport: cases written from
 * RFC 9112 (section 6.3, message body length; section 11.2, request smuggling; sections 2.2, 3,
 * 5 and 7.1) and from the kinds of cases in llhttp's request fixtures (test/request/*.md of
 * nodejs/llhttp: content-length, transfer-encoding, invalid, connection, pipelining). Every
 * request is sent, then the client half-closes: the server answers what it accepted, in order.
 */
const MAX_BODY = 1024;
const server = startRecordingServer({ maxBodyBytes: MAX_BODY });
afterAll(() => server.server.stop(true));

const H = "Host: h\r\n";
const post = (fields: string, body = "") => `POST /p HTTP/1.1\r\n${H}${fields}\r\n${body}`;
const chunked = (body: string, fields = "") => post(`Transfer-Encoding: chunked\r\n${fields}`, body);

async function exchange(bytes: string) {
  const out = await send(server.port, Buffer.from(bytes, "latin1"), { end: true });
  const seen = out.answers.map((a) => decodeSeen(a.headers[SEEN_HEADER])).filter((s) => s !== undefined);
  return { ...out, seen, statuses: out.answers.map((a) => a.status) };
}

describe("requests the h1 transport accepts, framed as RFC 9112 frames them", () => {
  it.each([
    ["a GET", `GET /a HTTP/1.1\r\n${H}\r\n`, [""]],
    ["a body by its Content-Length", post("Content-Length: 5\r\n", "hello"), ["hello"]],
    ["a Content-Length with leading zeros", post("Content-Length: 005\r\n", "hello"), ["hello"]],
    ["a Content-Length of 0", post("Content-Length: 0\r\n"), [""]],
    [
      "chunks with lower- and uppercase sizes",
      chunked("a\r\n0123456789\r\nA\r\nabcdefghij\r\n0\r\n\r\n"),
      ["0123456789abcdefghij"],
    ],
    ["a last chunk written 000", chunked("5\r\nhello\r\n000\r\n\r\n"), ["hello"]],
    ["chunk extensions, bare, token and quoted", chunked('5;a;b=c;d="e \\"f\\""\r\nhello\r\n0;z\r\n\r\n'), ["hello"]],
    ["trailer fields after the last chunk", chunked("5\r\nhello\r\n0\r\nVary: *\r\nX-T: 1\r\n\r\n"), ["hello"]],
    ["Transfer-Encoding in capitals", post("Transfer-Encoding: CHUNKED\r\n", "1\r\nx\r\n0\r\n\r\n"), ["x"]],
    ["empty lines before a request line (section 2.2)", `\r\n\r\nGET / HTTP/1.1\r\n${H}\r\n`, [""]],
    ["obs-text in a field value", `GET / HTTP/1.1\r\n${H}X-Name: caf\xe9\r\n\r\n`, [""]],
    [
      "a body on GET, read by its length and not handed on",
      `GET /a HTTP/1.1\r\n${H}Content-Length: 3\r\n\r\nabcGET /b HTTP/1.1\r\n${H}\r\n`,
      ["", ""],
    ],
  ])("accepts %s", async (_name, bytes, bodies) => {
    const out = await exchange(bytes);
    expect(out.statuses).toEqual(bodies.map(() => 200));
    expect(out.seen.map((s) => Buffer.from(s.body, "base64").toString("latin1"))).toEqual(bodies);
  });

  it("answers pipelined requests in the order they were sent", async () => {
    const bytes = ["/1", "/2", "/3"].map((t) => `GET ${t} HTTP/1.1\r\n${H}\r\n`).join("");
    const out = await exchange(bytes);
    expect(out.seen.map((s) => s.target)).toEqual(["/1", "/2", "/3"]);
  });

  it("hands on field values without the whitespace around them", async () => {
    const out = await exchange(`GET / HTTP/1.1\r\n${H}X-A: \t padded \t\r\n\r\n`);
    expect(out.seen[0]?.headers).toContainEqual(["x-a", "padded"]);
  });
});

/** Refused requests: the status, and that nothing of the request reached a handler. */
describe("requests the h1 transport refuses in the envelope, then closes the connection", () => {
  it.each([
    // RFC 9112 section 6.3: a repeated or listed Content-Length.
    ["Content-Length twice, same value", post("Content-Length: 2\r\nContent-Length: 2\r\n", "ab"), 400],
    ["Content-Length twice, different values", post("Content-Length: 2\r\nContent-Length: 3\r\n", "abc"), 400],
    ["a Content-Length list", post("Content-Length: 2, 2\r\n", "ab"), 400],
    ["a signed Content-Length", post("Content-Length: +2\r\n", "ab"), 400],
    ["a negative Content-Length", post("Content-Length: -1\r\n"), 400],
    ["a hex Content-Length", post("Content-Length: 0x2\r\n", "ab"), 400],
    ["a Content-Length with a space inside", post("Content-Length: 1 2\r\n", "ab"), 400],
    ["a Content-Length of 16 digits", post("Content-Length: 1000000000000000\r\n"), 400],
    ["a tab after the Content-Length", post("Content-Length: 2\t\r\n", "ab"), 400],
    // Section 6.3 and 11.2: Transfer-Encoding with Content-Length (CL.TE and TE.CL smuggling).
    [
      "Transfer-Encoding and Content-Length (CL.TE)",
      post("Content-Length: 6\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\nG"),
      400,
    ],
    [
      "Content-Length and Transfer-Encoding (TE.CL)",
      post("Transfer-Encoding: chunked\r\nContent-Length: 3\r\n", "8\r\nSMUGGLED\r\n0\r\n\r\n"),
      400,
    ],
    ["whitespace before the colon of Transfer-Encoding", post("Transfer-Encoding : chunked\r\n", "0\r\n\r\n"), 400],
    [
      "Transfer-Encoding repeated",
      post("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n", "0\r\n\r\n"),
      400,
    ],
    ["chunked listed twice", post("Transfer-Encoding: chunked, chunked\r\n", "0\r\n\r\n"), 400],
    ["chunked after another coding", post("Transfer-Encoding: gzip, chunked\r\n", "0\r\n\r\n"), 400],
    ["chunked not last", post("Transfer-Encoding: chunked, gzip\r\n", "0\r\n\r\n"), 400],
    ["an empty Transfer-Encoding", post("Transfer-Encoding:\r\n", "0\r\n\r\n"), 400],
    ["an unknown coding", post("Transfer-Encoding: identity\r\n"), 501],
    ["a coding that only contains chunked", post("Transfer-Encoding: xchunked\r\n", "0\r\n\r\n"), 501],
    ["a tab after chunked", post("Transfer-Encoding: chunked\t\r\n", "0\r\n\r\n"), 400],
    ["Transfer-Encoding in HTTP/1.0", `POST / HTTP/1.0\r\n${H}Transfer-Encoding: chunked\r\n\r\n0\r\n\r\n`, 400],
    // Section 7.1: chunk sizes, extensions, endings and trailers.
    ["a chunk size of 17 hex digits (overflow)", chunked("10000000000000005\r\nhello\r\n0\r\n\r\n"), 400],
    ["a chunk size that is not hex", chunked("g\r\nx\r\n0\r\n\r\n"), 400],
    ["text after a chunk size without a semicolon", chunked("2 erfrferferf\r\naa\r\n0\r\n\r\n"), 400],
    ["whitespace before a chunk extension", chunked("2 ;a\r\naa\r\n0\r\n\r\n"), 400],
    ["a chunk extension without a name", chunked("2;\r\naa\r\n0\r\n\r\n"), 400],
    ["an unbalanced quote in a chunk extension", chunked('2;a="b\r\naa\r\n0\r\n\r\n'), 400],
    ["chunk data longer than its size", chunked("2\r\naaa\r\n0\r\n\r\n"), 400],
    ["a bare LF after a chunk size", chunked("2\naa\r\n0\r\n\r\n"), 400],
    ["Content-Length in the trailers", chunked("2\r\naa\r\n0\r\nContent-Length: 5\r\n\r\n"), 400],
    // Sections 2.2 and 5: line endings, obs-fold, field names and values.
    ["a bare LF after the request line", `GET / HTTP/1.1\n${H}\r\n`, 400],
    ["a bare LF between fields", `POST / HTTP/1.1\r\n${H}x:x\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n`, 400],
    ["a bare CR between fields", `GET / HTTP/1.1\r\n${H}Foo: 1\rBar: 2\r\n\r\n`, 400],
    ["obs-fold with a space", `GET / HTTP/1.1\r\n${H}X-A: 1\r\n folded\r\n\r\n`, 400],
    ["obs-fold with a tab", `GET / HTTP/1.1\r\n${H}X-A: 1\r\n\tfolded\r\n\r\n`, 400],
    [
      "a space before the first field (a hidden Content-Length)",
      `POST /hello HTTP/1.1\r\n${H}Foo: bar\r\n Content-Length: 38\r\n\r\n`,
      400,
    ],
    ["whitespace between a field name and its colon", `GET / HTTP/1.1\r\n${H}X-A : 1\r\n\r\n`, 400],
    ["NUL in a field value", `GET / HTTP/1.1\r\n${H}X-A: a\0b\r\n\r\n`, 400],
    ["NUL in a field name", `GET / HTTP/1.1\r\n${H}X\0A: 1\r\n\r\n`, 400],
    ["a control byte in a field value", `GET / HTTP/1.1\r\n${H}X-A: a\x01b\r\n\r\n`, 400],
    ["DEL in a field value", `GET / HTTP/1.1\r\n${H}X-A: a\x7fb\r\n\r\n`, 400],
    ["an empty field name", `GET / HTTP/1.1\r\n${H}: value\r\n\r\n`, 400],
    ["a field name with a delimiter", `GET / HTTP/1.1\r\n${H}Fo@: x\r\n\r\n`, 400],
    // Section 3: the request line.
    ["two spaces in the request line", `GET  / HTTP/1.1\r\n${H}\r\n`, 400],
    ["a space after the version", `GET / HTTP/1.1 \r\n${H}\r\n`, 400],
    ["another protocol", `GET / ICE/1.0\r\n${H}\r\n`, 400],
    ["HTTP/1.2", `GET / HTTP/1.2\r\n${H}\r\n`, 505],
    ["HTTP/2.0 in a request line", `GET / HTTP/2.0\r\n${H}\r\n`, 505],
    ["an unknown method", `MKCOLA / HTTP/1.1\r\n${H}\r\n`, 501],
    ["a method in lower case (methods are case-sensitive)", `get / HTTP/1.1\r\n${H}\r\n`, 501],
    ["a target of no request-target form", `GET 9 HTTP/1.1\r\n${H}\r\n`, 400],
    ["a target byte past ASCII", `GET /caf\xe9 HTTP/1.1\r\n${H}\r\n`, 400],
    ["a request line over 8 KB (414)", `GET /${"a".repeat(9000)} HTTP/1.1\r\n${H}\r\n`, 414],
    ["a head over 16 KB (431)", `GET / HTTP/1.1\r\n${H}X-Big: ${"b".repeat(17_000)}\r\n\r\n`, 431],
    ["more than 100 fields (431)", `GET / HTTP/1.1\r\n${H}${"X-F: 1\r\n".repeat(100)}\r\n`, 431],
    // The body limit: 413 before a declared body is read, and for chunks past it.
    ["a declared body over the limit (413)", post(`Content-Length: ${MAX_BODY + 1}\r\n`), 413],
    [
      "chunks that pass the limit (413)",
      chunked(
        `${(MAX_BODY - 10).toString(16)}\r\n${"a".repeat(MAX_BODY - 10)}\r\n20\r\n${"b".repeat(32)}\r\n0\r\n\r\n`,
      ),
      413,
    ],
    ["an Expect other than 100-continue (417)", post("Expect: teapot\r\nContent-Length: 1\r\n", "a"), 417],
    ["a request cut off by the client", post("Content-Length: 100\r\n", "abc"), 400],
  ])("refuses %s", async (_name, bytes, status) => {
    const out = await exchange(`${bytes}GET /after HTTP/1.1\r\n${H}\r\n`);
    expect(out.seen).toEqual([]);
    expect(out.statuses).toEqual([status]);
    const answer = out.answers[0];
    expect(answer?.headers["content-type"]).toBe("application/json");
    expect(answer?.headers.connection).toBe("close");
    const body = JSON.parse(answer?.body.toString() ?? "") as { error: { code: string; message: string } };
    expect(body.error.code).toBe(status === 413 ? "payload_too_large" : "bad_request");
    expect(out.closed).toBe(true);
  });

  it("answers the requests before a refused one, then the refusal", async () => {
    const out = await exchange(
      `GET /1 HTTP/1.1\r\n${H}\r\nGET /2 HTTP/1.1\r\n${H}X: a\0\r\n\r\nGET /3 HTTP/1.1\r\n${H}\r\n`,
    );
    expect(out.statuses).toEqual([200, 400]);
    expect(out.seen.map((s) => s.target)).toEqual(["/1"]);
  });
});

describe("requests the transport answers 400 itself and reads on (RFC 9112 section 3.2)", () => {
  it.each([
    ["no Host in HTTP/1.1", "GET /x HTTP/1.1\r\n\r\n"],
    ["two Host fields", `GET /x HTTP/1.1\r\n${H}${H}\r\n`],
    ["a Host that is no authority", "GET /x HTTP/1.1\r\nHost: a/b\r\n\r\n"],
    ["an absolute-form target", `GET http://h/x HTTP/1.1\r\n${H}\r\n`],
    ["the asterisk-form", `OPTIONS * HTTP/1.1\r\n${H}\r\n`],
  ])("answers %s with 400 in the envelope and the next request as usual", async (_name, bytes) => {
    const out = await exchange(`${bytes}GET /next HTTP/1.1\r\n${H}\r\n`);
    expect(out.statuses).toEqual([400, 200]);
    expect(JSON.parse(out.answers[0]?.body.toString() ?? "").error.code).toBe("bad_request");
    expect(out.seen.map((s) => s.target)).toEqual(["/next"]);
  });
});
