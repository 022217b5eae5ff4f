import { describe, expect, it } from "bun:test";
import { connect } from "node:net";
import { BUSY_TURN } from "../../src/http/turn-batch";
import { basicDocument } from "../fixtures/documents";
import { type StoreKind, storeKinds } from "../helpers/databases";
import { servedSuite } from "../helpers/served-suite";

/** Connections open at once, and requests each writes in one TCP write, per round. */
const CONNECTIONS = 24;
const PIPELINED = 4;
const ROUNDS = 10;

interface Sent {
  text: string;
  /** What its answer must be: the status, and the unanswered feature name that tags it. */
  status: number;
  tag: string;
}

interface Answer {
  status: number;
  body: string;
}

/**
 * Reads HTTP/1.1 answers off one connection (each with a content-length, as the server sends
 * them) until `count` have arrived or the connection ends.
 */
function exchange(port: number, payload: string, count: number): Promise<{ answers: Answer[]; closed: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    let buffer = Buffer.alloc(0);
    const answers: Answer[] = [];
    let settled = false;
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      socket.destroy();
      resolve({ answers, closed });
    };
    socket.on("data", (chunk: Buffer) => {
      buffer = Buffer.concat([buffer, chunk]);
      for (;;) {
        const end = buffer.indexOf("\r\n\r\n");
        if (end < 0) break;
        const head = buffer.subarray(0, end).toString("latin1");
        const length = Number(/\r\ncontent-length: *(\d+)/i.exec(head)?.[1] ?? Number.NaN);
        if (Number.isNaN(length)) throw new Error(`an answer without content-length: ${head}`);
        if (buffer.length < end + 4 + length) break;
        answers.push({
          status: Number(head.slice(9, 12)),
          body: buffer.subarray(end + 4, end + 4 + length).toString("utf8"),
        });
        buffer = buffer.subarray(end + 4 + length);
      }
      if (answers.length >= count) finish(false);
    });
    socket.on("close", () => finish(true));
    socket.on("error", () => finish(true));
    socket.on("connect", () => socket.write(payload));
  });
}

// Clients may pipeline HTTP/1.1 requests (several in one write, before any answer). Every such
// request gets its own answer, in order, also when its handler awaits past its own event-loop
// turn: a store read (an unknown key value, and on the server store a first-seen subject) or the
// per-turn batching that sustained load turns on (src/http/turn-batch.ts).
describe.each(storeKinds)("pipelined requests on a listening server (%s store)", (kind: StoreKind) => {
  const served = servedSuite(kind, { site: basicDocument() });

  let sequence = 0;
  /** Every third request carries an unknown key (a store read, then 401); the others decide. */
  function nextRequest(): Sent {
    const n = sequence++;
    const tag = `tag_${n}`;
    // A subject never seen before: on the server store its meters are read from Postgres.
    const body = JSON.stringify({ features: ["paywall", tag], deviceId: `reader-${n}` });
    const unknownKey = n % 3 === 1;
    const apiKey = unknownKey ? `svc_unknown_${n}_${served.key.slice(-8)}` : served.key;
    return {
      text:
        `POST /v1/decide HTTP/1.1\r\nHost: 127.0.0.1:${served.server.port}\r\nx-svc-site-id: news\r\nx-api-key: ${apiKey}\r\n` +
        `content-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      status: unknownKey ? 401 : 200,
      tag,
    };
  }

  it("answers every request of every pipelining connection, in order, under sustained load", async () => {
    expect(CONNECTIONS).toBeGreaterThan(BUSY_TURN);
    let sent = 0;
    let answered = 0;
    const wrong: string[] = [];
    const connection = async () => {
      for (let round = 0; round < ROUNDS; round++) {
        const requests = Array.from({ length: PIPELINED }, nextRequest);
        sent += requests.length;
        const { answers, closed } = await exchange(
          served.server.port,
          requests.map((r) => r.text).join(""),
          requests.length,
        );
        answered += answers.length;
        if (answers.length < requests.length) {
          wrong.push(`${requests.length - answers.length} unanswered (connection ${closed ? "closed" : "open"})`);
          continue;
        }
        requests.forEach((request, i) => {
          const answer = answers[i] as Answer;
          const body = JSON.parse(answer.body);
          const right =
            answer.status === request.status &&
            (request.status === 200
              ? body.unanswered?.[0] === request.tag && body.decisions?.paywall?.outcome !== undefined
              : body.error?.code === "unauthorized");
          if (!right) wrong.push(`${request.tag}: ${answer.status} ${answer.body.slice(0, 120)}`);
        });
      }
    };
    await Promise.all(Array.from({ length: CONNECTIONS }, connection));
    expect(wrong.slice(0, 5)).toEqual([]);
    expect(answered).toBe(sent);
    expect(sent).toBe(CONNECTIONS * PIPELINED * ROUNDS);
  }, 30_000);
});
