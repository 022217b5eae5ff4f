import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { type ChildProcess, spawn } from "node:child_process";
import fc from "fast-check";
import { decodeSeen, SEEN_HEADER, type Seen, startRecordingServer } from "./recording-app";
import { type Exchange, send } from "./wire";

/**
 * Differential fuzz: the same random and mutated request bytes go to our transport and to Node's
 * own HTTP server (llhttp, as Node ships it), each behind an app that answers with what it was
 * handed. Both must hand on the same requests (method, target, header fields, body) in the same
 * order. Where they differ, our transport may only have refused where Node accepted, and only
 * for one of the deliberate stricter rules below (docs/known-limits.md); it never accepts what
 * Node refuses and never frames a request differently. Bounded: CASES runs or TIME_LIMIT_MS.
 */
const CASES = Number(process.env.H1_FUZZ_CASES ?? 2000);
const TIME_LIMIT_MS = Number(process.env.H1_FUZZ_SECONDS ?? 20) * 1000;

/** Our refusals of what llhttp accepts, by the message our envelope gives. */
const STRICTER = new Set([
  // A coding list (`gzip, chunked`): llhttp takes chunked as the final coding; we serve no other.
  "Transfer-Encoding is not valid.",
  // llhttp joins an empty Transfer-Encoding line with a later one.
  "Transfer-Encoding is repeated.",
  // Node 20's llhttp takes an empty Transfer-Encoding beside a Content-Length.
  "Transfer-Encoding and Content-Length are both present.",
  // Node 20's llhttp takes a chunk extension without a name (`;=x`).
  "A chunk extension is not valid.",
  // Node reads any Expect naming 100-continue among other text as 100-continue; we answer 417.
  "Only Expect: 100-continue is served.",
  // llhttp refuses Content-Length and Transfer-Encoding in trailers; we refuse Host, Connection,
  // Expect and Trailer there too.
  "A trailer field names the request's framing or routing.",
  "Only the chunked transfer coding is served.",
  // RFC 9112 section 6.1: Transfer-Encoding in HTTP/1.0 is faulty framing.
  "Transfer-Encoding is not valid in HTTP/1.0.",
  // llhttp takes HTTP/2.0 in a request line, and extension methods (PROPFIND, TRACE...).
  "Only HTTP/1.1 and HTTP/1.0 are served.",
  "The request method is not implemented.",
  // llhttp takes a bare LF before the request line and repeated spaces inside it.
  "The request line is not valid HTTP/1.1.",
]);

// HEAD is left to the corpus: an answer to HEAD carries the Content-Length of a body it does not
// send, so a reader that does not know which request each answer is for cannot frame it.
const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"] as const;
const TARGETS = ["/", "/a", "/a/b?x=1&y=2", "/p%20q", "/native", "/a/../b", "/%7e?", "/x;y"];
const FIELDS = [
  "X-A: 1",
  "x-a: 2",
  "Accept: */*",
  "Connection: keep-alive",
  "X-Tab:\tv\t",
  "X-Empty:",
  "X-Obs: caf\xe9",
  "Expect: 100-continue",
  "Cookie: a=b; c=d",
];
/** Whole lines a mutation may insert at a line start. */
const LINES = [
  "Content-Length: 0",
  "Content-Length: 3",
  "Content-Length: 30",
  "Content-Length: +3",
  "Content-Length: 3 3",
  "Transfer-Encoding: chunked",
  "Transfer-Encoding: gzip, chunked",
  "Transfer-Encoding: chunked, gzip",
  "transfer-encoding:  Chunked ",
  "Transfer-Encoding:",
  " folded",
  "\tfolded",
  "Host: h",
  "Connection: close",
  "Expect: 100-continue",
  "X-Nul: a\0b",
  "0",
  "",
];
const BYTES = [0x00, 0x01, 0x09, 0x0a, 0x0b, 0x0d, 0x20, 0x22, 0x2b, 0x2c, 0x2d, 0x30, 0x31, 0x39, 0x3a, 0x3b, 0x3d];
const MORE_BYTES = [0x41, 0x46, 0x61, 0x66, 0x7f, 0x80, 0xff];

const framing = fc.oneof(
  fc.constant({ kind: "none" as const }),
  fc.record({ kind: fc.constant("length" as const), body: fc.uint8Array({ maxLength: 40 }) }),
  fc.record({
    kind: fc.constant("chunked" as const),
    chunks: fc.array(fc.uint8Array({ minLength: 1, maxLength: 20 }), { maxLength: 3 }),
    extension: fc.constantFrom("", ";a", ";a=b", ';a="q \\" r"'),
    upper: fc.boolean(),
    trailer: fc.boolean(),
  }),
);

const request = fc.record({
  method: fc.constantFrom(...METHODS),
  target: fc.constantFrom(...TARGETS),
  version: fc.constantFrom("HTTP/1.1", "HTTP/1.1", "HTTP/1.0"),
  fields: fc.array(fc.constantFrom(...FIELDS), { maxLength: 4 }),
  framing,
});

type Request = typeof request extends fc.Arbitrary<infer T> ? T : never;

function serialise(r: Request): Buffer {
  const lines = [`${r.method} ${r.target} ${r.version}`, "Host: h", ...r.fields];
  const parts: Buffer[] = [];
  const f = r.framing;
  if (f.kind === "length") lines.push(`Content-Length: ${f.body.byteLength}`);
  if (f.kind === "chunked") lines.push("Transfer-Encoding: chunked");
  parts.push(Buffer.from(`${lines.join("\r\n")}\r\n\r\n`, "latin1"));
  if (f.kind === "length") parts.push(Buffer.from(f.body));
  if (f.kind === "chunked") {
    for (const chunk of f.chunks) {
      const size = chunk.byteLength.toString(16);
      parts.push(Buffer.from(`${f.upper ? size.toUpperCase() : size}${f.extension}\r\n`, "latin1"));
      parts.push(Buffer.from(chunk), Buffer.from("\r\n"));
    }
    parts.push(Buffer.from(`0\r\n${f.trailer ? "X-Trailer: t\r\n" : ""}\r\n`, "latin1"));
  }
  return Buffer.concat(parts);
}

const mutation = fc.record({
  op: fc.constantFrom("replace", "insert", "delete", "line"),
  at: fc.nat(),
  byte: fc.constantFrom(...BYTES, ...MORE_BYTES),
  line: fc.constantFrom(...LINES),
});

function mutate(bytes: Buffer, mutations: readonly (typeof mutation extends fc.Arbitrary<infer T> ? T : never)[]) {
  let out = bytes;
  for (const m of mutations) {
    const at = m.at % (out.length + 1);
    if (m.op === "replace" && at < out.length)
      out = Buffer.concat([out.subarray(0, at), Buffer.of(m.byte), out.subarray(at + 1)]);
    else if (m.op === "insert") out = Buffer.concat([out.subarray(0, at), Buffer.of(m.byte), out.subarray(at)]);
    else if (m.op === "delete" && at < out.length) out = Buffer.concat([out.subarray(0, at), out.subarray(at + 1)]);
    else if (m.op === "line") {
      const start = out.indexOf("\r\n", at);
      if (start === -1) continue;
      out = Buffer.concat([
        out.subarray(0, start + 2),
        Buffer.from(`${m.line}\r\n`, "latin1"),
        out.subarray(start + 2),
      ]);
    }
  }
  return out;
}

const seenOf = (exchange: Exchange): Seen[] =>
  exchange.answers.flatMap((a) => {
    const seen = decodeSeen(a.headers[SEEN_HEADER]);
    return seen === undefined ? [] : [seen];
  });

const refusalOf = (exchange: Exchange): string | undefined => {
  const last = exchange.answers.at(-1);
  if (last === undefined || last.status < 400) return undefined;
  try {
    return (JSON.parse(last.body.toString()) as { error: { message: string } }).error.message;
  } catch {
    return undefined;
  }
};

describe("differential fuzz: our HTTP/1.1 framing against Node's llhttp", () => {
  let reference: ChildProcess;
  let nodePort: number;
  const ours = startRecordingServer({ maxBodyBytes: 1024 });

  beforeAll(async () => {
    const node = Bun.which("node");
    if (node === null) throw new Error("the differential fuzz needs `node` on PATH (Node's llhttp is the reference)");
    reference = spawn(node, [`${import.meta.dir}/node-reference.mjs`], { stdio: ["ignore", "pipe", "inherit"] });
    nodePort = await new Promise((resolve) =>
      reference.stdout?.once("data", (line) => resolve((JSON.parse(String(line)) as { port: number }).port)),
    );
  });
  afterAll(async () => {
    reference?.kill();
    await ours.server.stop(true);
  });

  it(
    "hands on the same requests as Node for random and mutated bytes, or refuses by a stricter rule",
    async () => {
      let tried = 0;
      let identical = 0;
      const stricter = new Map<string, number>();
      const property = fc.asyncProperty(
        fc.array(request, { minLength: 1, maxLength: 3 }),
        fc.array(mutation, { maxLength: 3 }),
        async (requests, mutations) => {
          tried++;
          const bytes = mutate(Buffer.concat(requests.map(serialise)), mutations);
          const [a, b] = await Promise.all([
            send(ours.port, bytes, { end: true, limitMs: 5_000 }),
            send(nodePort, bytes, { end: true, limitMs: 5_000 }),
          ]);
          const mine = seenOf(a);
          const node = seenOf(b);
          if (Bun.deepEquals(mine, node)) {
            identical++;
            return;
          }
          const message = refusalOf(a);
          const prefix = mine.length < node.length && Bun.deepEquals(mine, node.slice(0, mine.length));
          if (prefix && message !== undefined && STRICTER.has(message)) {
            stricter.set(message, (stricter.get(message) ?? 0) + 1);
            return;
          }
          // HTTP/1.0 with both close and keep-alive: RFC 9112 section 9.3 checks close first;
          // llhttp lets keep-alive win in HTTP/1.0. We close after it, Node reads on.
          const text = bytes.toString("latin1");
          const closeAndKeepAlive =
            text.includes("HTTP/1.0\r\n") &&
            /\nconnection:[^\r\n]*close/i.test(text) &&
            /\nconnection:[^\r\n]*keep-alive/i.test(text);
          if (prefix && closeAndKeepAlive) {
            stricter.set("close wins over keep-alive", (stricter.get("close wins over keep-alive") ?? 0) + 1);
            return;
          }
          throw new Error(
            `framing differs for ${JSON.stringify(bytes.toString("latin1"))}:\n ours ${JSON.stringify(mine)} (${message})\n node ${JSON.stringify(node)}`,
          );
        },
      );
      await fc.assert(property, { numRuns: CASES, interruptAfterTimeLimit: TIME_LIMIT_MS });
      console.log(
        `differential fuzz: ${tried} cases tried, ${identical} framed identically, ${tried - identical} refused by a stricter rule:`,
        Object.fromEntries(stricter),
      );
      expect(tried).toBeGreaterThan(0);
      expect(identical).toBeGreaterThan(tried / 2);
    },
    TIME_LIMIT_MS + 40_000,
  );
});
