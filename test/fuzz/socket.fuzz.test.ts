import { afterAll, beforeAll, describe, it } from "bun:test";
import { connect } from "node:net";
import fc from "fast-check";
import { storeKinds } from "../helpers/databases";
import { serveHarness } from "../helpers/harness";
import { hostileString, percentEncode, sometimes, toJsonText } from "./arbitraries";
import { fillWorld, PLACEHOLDERS, shown } from "./requests";
import { ROUTES, type RouteSpec, routeName } from "./route-table";
import { buildWorld, type FuzzWorld } from "./world";

/**
 * The same properties over a real socket, where what `app.handle` cannot send lives: HTTP/1.0
 * without Host, forged or broken Host headers, absolute-form and odd request targets, chunked
 * bodies, conflicting framing and bytes Fetch refuses in headers (NUL). Every answer is below
 * 500; a request that is valid HTTP gets the envelope when refused. A request that is not valid
 * HTTP (flagged `malformed`) may be refused by the HTTP parser itself: 400 without a body, or
 * the connection closed, but never a 5xx, a page, or silence.
 */

const SEED = Number(process.env.FUZZ_SEED ?? 20_2026);
const RUNS = Number(process.env.FUZZ_SOCKET_RUNS ?? 300);
const ANSWER_TIME_LIMIT_MS = 5_000;

interface RawCase {
  route: string;
  /** Request line and headers, without the blank line; `__HOST__` stands for 127.0.0.1:port. */
  head: string[];
  body: string;
  /** Not valid HTTP: the parser may refuse it without the envelope. */
  malformed: boolean;
}

const FILLED = (spec: RouteSpec) =>
  spec.path.replace(/:([A-Za-z]+)/g, (_, name: string) => {
    const params = spec.params?.(PLACEHOLDERS) ?? {};
    return encodeURIComponent(params[name] ?? "x");
  });

function credentialLines(spec: RouteSpec): string[] {
  switch (spec.credential) {
    case "key":
      return [`authorization: Bearer ${PLACEHOLDERS.key}`];
    case "session":
      return [`cookie: ${PLACEHOLDERS.cookie}`];
    case "spare-session":
      return [`cookie: ${PLACEHOLDERS.spareCookie}`];
    case "browser":
      return ["origin: https://news.example"];
    case "upstream":
      return [`cookie: idp_token=${PLACEHOLDERS.upstreamToken}`];
    case "operator":
      return ["authorization: Bearer test-operator-token-0123456789abcdef"];
    default:
      return [];
  }
}

const rawCaseArb: fc.Arbitrary<RawCase> = fc
  .record({
    spec: fc.constantFrom(...ROUTES),
    version: fc.constantFrom("HTTP/1.1", "HTTP/1.0"),
    host: fc.oneof(
      { withCrossShrink: true },
      { weight: 3, arbitrary: fc.constant<string | null>("__HOST__") },
      { weight: 2, arbitrary: fc.constant(null) },
      {
        weight: 2,
        arbitrary: fc.constantFrom(
          "",
          "evil.example",
          "localhost:99999",
          "[::1",
          "@evil.example",
          "x".repeat(300),
          "a/b",
          "127.0.0.1:1\u00ff",
          "%00",
          "__HOST__\r\nhost: evil.example",
        ),
      },
    ),
    target: fc.oneof(
      { withCrossShrink: true },
      { weight: 4, arbitrary: fc.constant("path") },
      {
        weight: 2,
        arbitrary: fc.constantFrom(
          "absolute",
          "query-percent",
          "segment-percent",
          "star",
          "double-slash",
          "long-query",
          "fragment",
        ),
      },
      { weight: 1, arbitrary: hostileString.filter((s) => s.length < 2_000).map((s) => `q:${percentEncode(s)}`) },
    ),
    framing: fc.oneof(
      { withCrossShrink: true },
      { weight: 4, arbitrary: fc.constant("length") },
      { weight: 1, arbitrary: fc.constantFrom("chunked", "both", "bad-chunk", "none") },
    ),
    nul: sometimes(fc.constantFrom("site-header", "request-line", "header-name"), 8),
    bodyKind: fc.constantFrom("template", "hostile", "empty"),
    hostile: hostileString.filter((s) => s.length < 5_000),
  })
  .map(({ spec, version, host, target, framing, nul, bodyKind, hostile }) => {
    const path = FILLED(spec);
    const targets: Record<string, string> = {
      path,
      absolute: `http://evil.example${path}`,
      "query-percent": `${path}?a=%&b=%zz`,
      "segment-percent": `${path}/%zz%`,
      star: "*",
      "double-slash": `//${path}`,
      "long-query": `${path}?q=${"a".repeat(20_000)}`,
      fragment: `${path}#frag`,
    };
    const requestTarget = target.startsWith("q:") ? `${path}?x=${target.slice(2)}` : targets[target]!;
    const malformedTarget = target === "segment-percent" || target === "star" || target === "fragment";
    const line = `${spec.method} ${requestTarget}${nul === "request-line" ? "\u0000" : ""} ${version}`;
    const head = [line];
    if (host !== null) head.push(`host: ${host}`);
    head.push(`x-svc-site-id: ${spec.site ?? "news"}${nul === "site-header" ? "\u0000" : ""}`);
    if (nul === "header-name") head.push("x-\u0000: 1");
    head.push(...credentialLines(spec), "connection: close");
    let body = "";
    if (spec.method !== "GET" && bodyKind !== "empty") {
      body = bodyKind === "template" && spec.body ? toJsonText(spec.body(PLACEHOLDERS)) : toJsonText({ x: hostile });
      head.push("content-type: application/json");
    }
    const bytes = Buffer.byteLength(body);
    let framed = body;
    if (framing === "length" || (framing === "none" && body === "")) head.push(`content-length: ${bytes}`);
    if (framing === "chunked") {
      head.push("transfer-encoding: chunked");
      framed = bytes > 0 ? `${bytes.toString(16)}\r\n${body}\r\n0\r\n\r\n` : "0\r\n\r\n";
    }
    if (framing === "both") {
      head.push("transfer-encoding: chunked", `content-length: ${bytes}`);
      framed = `${bytes.toString(16)}\r\n${body}\r\n0\r\n\r\n`;
    }
    if (framing === "bad-chunk") {
      head.push("transfer-encoding: chunked");
      framed = `zz\r\n${body}\r\n`;
    }
    const malformed =
      nul !== null ||
      malformedTarget ||
      framing === "both" ||
      framing === "bad-chunk" ||
      (framing === "none" && body !== "") ||
      (host !== null && host !== "__HOST__") ||
      (host === null && version === "HTTP/1.1");
    return { route: routeName(spec), head, body: framed, malformed };
  });

/** Sends raw bytes and reads until the server closes (every request says `connection: close`). */
function exchange(port: number, bytes: Buffer): Promise<{ raw: string; closedSilently: boolean } | null> {
  return new Promise((resolve) => {
    const socket = connect({ host: "127.0.0.1", port });
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      socket.destroy();
      resolve(null);
    }, ANSWER_TIME_LIMIT_MS);
    const done = () => {
      clearTimeout(timer);
      const raw = Buffer.concat(chunks).toString("latin1");
      resolve({ raw, closedSilently: raw.length === 0 });
    };
    socket.on("data", (c: Buffer) => {
      chunks.push(c);
      // A stream of events never ends: its head is the answer, and the client hangs up.
      const raw = Buffer.concat(chunks).toString("latin1");
      const end = raw.indexOf("\r\n\r\n");
      if (end !== -1 && /\r\ncontent-type: text\/event-stream/i.test(raw.slice(0, end))) {
        socket.destroy();
        done();
      }
    });
    socket.on("end", done);
    socket.on("error", done);
    socket.on("close", done);
    socket.write(bytes);
  });
}

function parse(raw: string): { status: number; headers: Map<string, string>; body: string } {
  const end = raw.indexOf("\r\n\r\n");
  const lines = raw.slice(0, end === -1 ? raw.length : end).split("\r\n");
  const status = Number(lines[0]?.split(" ")[1] ?? 0);
  const headers = new Map<string, string>();
  for (const l of lines.slice(1)) {
    const i = l.indexOf(":");
    if (i > 0) headers.set(l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim());
  }
  let body = end === -1 ? "" : raw.slice(end + 4);
  if (headers.get("transfer-encoding")?.includes("chunked")) {
    let out = "";
    let rest = body;
    for (;;) {
      const nl = rest.indexOf("\r\n");
      const size = Number.parseInt(rest.slice(0, nl), 16);
      if (!(size > 0)) break;
      out += rest.slice(nl + 2, nl + 2 + size);
      rest = rest.slice(nl + 2 + size + 2);
    }
    body = out;
  }
  return { status, headers, body };
}

const isEnvelope = (text: string) => {
  try {
    const e = (JSON.parse(text) as { error?: { code?: unknown; message?: unknown } }).error;
    return typeof e?.code === "string" && typeof e.message === "string";
  } catch {
    return false;
  }
};

describe.each(storeKinds)("fuzz over a socket on the %s store", (kind) => {
  let fw: FuzzWorld;
  let port: number;
  let stopServer: () => Promise<void>;

  beforeAll(async () => {
    fw = await buildWorld(kind);
    const deps = { ...fw.h.deps, config: { ...fw.h.deps.config, host: "127.0.0.1" } };
    const served = serveHarness({ app: fw.h.app, deps });
    port = served.port;
    stopServer = served.stop;
  }, 120_000);
  afterAll(async () => {
    await stopServer?.();
    await fw?.stop();
  }, 60_000);

  it("answers every request below 500, in the envelope unless the HTTP itself is broken, and never hangs", async () => {
    const perRoute = new Map<string, number>();
    /** FUZZ_SURVEY=1: every distinct failure with its shortest request, printed at the end. */
    const survey = new Map<string, string>();
    let cases = 0;
    const property = fc.asyncProperty(rawCaseArb, async (c) => {
      cases++;
      perRoute.set(c.route, (perRoute.get(c.route) ?? 0) + 1);
      const head = c.head.map((l) => fillWorld(l, fw.world).replaceAll("__HOST__", `127.0.0.1:${port}`));
      const bytes = Buffer.from(`${head.join("\r\n")}\r\n\r\n${fillWorld(c.body, fw.world)}`, "utf8");
      const answer = await exchange(port, bytes);
      const problems: string[] = [];
      if (answer === null) problems.push(`no answer within ${ANSWER_TIME_LIMIT_MS} ms`);
      else if (answer.closedSilently) {
        if (!c.malformed) problems.push("the connection closed without an answer");
      } else {
        const { status, headers, body } = parse(answer.raw);
        if (!(status >= 100 && status < 500)) problems.push(`answered ${status || "no status line"}`);
        const documented = ROUTES.find((r) => routeName(r) === c.route)?.nonJson?.includes(status) ?? false;
        const bareParserRefusal = c.malformed && status === 400 && body === "";
        if (status >= 300 && !documented && !bareParserRefusal) {
          if (!headers.get("content-type")?.startsWith("application/json") || !isEnvelope(body)) {
            problems.push(`answered ${status} without the JSON envelope: ${shown(body, 300)}`);
          }
        }
        if (problems.length > 0) problems.push(`answer: ${shown(answer.raw, 600)}`);
      }
      if (problems.length === 0) return;
      if (process.env.FUZZ_SURVEY !== "1") throw new Error(problems.join("\n"));
      const signature = `${problems[0]!.replace(/: .*$/s, "")} (malformed: ${c.malformed})`;
      const shown_ = `${c.route}\n${problems.join("\n")}\n${head.map((l) => `  ${shown(l, 200)}`).join("\n")}`;
      const known = survey.get(signature);
      if (!known || shown_.length < known.length) survey.set(signature, shown_);
    });
    const out = await fc.check(property, { seed: SEED, numRuns: RUNS, path: process.env.FUZZ_PATH });
    console.log(`fuzz socket ${kind}: ${cases} cases over ${perRoute.size} routes (seed ${SEED})`);
    for (const [signature, found] of survey) console.log(`\nfuzz socket survey ${kind}: ${signature}\n${found}`);
    if (out.failed && out.counterexample) {
      const c = (out.counterexample as [RawCase])[0];
      const message = out.errorInstance instanceof Error ? out.errorInstance.message : String(out.errorInstance);
      throw new Error(
        `${c.route} over a socket on the ${kind} store, after ${out.numRuns} cases and ${out.numShrinks} shrinks:\n` +
          `${message}\nrequest (malformed: ${c.malformed}):\n${c.head.map((l) => `  ${shown(l, 300)}`).join("\n")}\n` +
          `  body: ${shown(c.body, 300)}\n(__W_name__ stands for the value made at setup, __HOST__ for 127.0.0.1:port)\n` +
          `replay: FUZZ_SEED=${out.seed} FUZZ_PATH=${out.counterexamplePath}`,
      );
    }
    if (out.failed) throw new Error(String(out.errorInstance));
  }, 120_000);
});
