import { describe, expect, test } from "bun:test";
import { BUSY_TURN, perTurn, TurnQueue } from "../../src/http/turn-batch";

/** A handler that records when it ran and answers with its request's own text. */
function recordingHandler() {
  const ran: string[] = [];
  const handler = async (request: string): Promise<Response> => {
    ran.push(request);
    if (request.startsWith("fail")) throw new Error("handler failed");
    return new Response(`answer to ${request}`);
  };
  return { ran, handler };
}

const endOfTurn = () => new Promise((resolve) => setImmediate(resolve));
const names = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${i}`);
const texts = (answers: (Response | Promise<Response>)[]) => Promise.all(answers.map(async (a) => (await a).text()));

describe("perTurn", () => {
  test("after a quiet turn, every request of the next turn runs at once", async () => {
    const { ran, handler } = recordingHandler();
    const batched = perTurn(handler);
    const answers = names("q", BUSY_TURN).map((r) => batched(r));
    expect(ran).toEqual(names("q", BUSY_TURN));
    expect(await texts(answers)).toEqual(names("answer to q", BUSY_TURN));
  });

  test("after a busy turn, the next turn's first request runs at once and the others together after the turn, in order", async () => {
    const { ran, handler } = recordingHandler();
    const batched = perTurn(handler);
    const busyTurn = names("b", BUSY_TURN).map((r) => batched(r));
    await endOfTurn();
    expect(ran).toEqual(names("b", BUSY_TURN));

    ran.length = 0;
    const next = ["x", "y", "z"].map((r) => batched(r));
    expect(ran).toEqual(["x"]);
    // The others wait while the turn that queued them is still going, microtasks included.
    await Promise.resolve();
    expect(ran).toEqual(["x"]);
    expect(await texts(next)).toEqual(["answer to x", "answer to y", "answer to z"]);
    expect(ran).toEqual(["x", "y", "z"]);
    expect(await texts(busyTurn)).toEqual(names("answer to b", BUSY_TURN));
  });

  test("a turn with fewer requests ends the queueing: the turn after it runs everything at once", async () => {
    const { ran, handler } = recordingHandler();
    const batched = perTurn(handler);
    names("b", BUSY_TURN).map((r) => batched(r));
    await endOfTurn();
    const quiet = [batched("q0"), batched("q1")];
    expect(ran.slice(BUSY_TURN)).toEqual(["q0"]);
    await endOfTurn();
    expect(ran.slice(BUSY_TURN)).toEqual(["q0", "q1"]);
    const after = [batched("a0"), batched("a1")];
    expect(ran.slice(BUSY_TURN + 2)).toEqual(["a0", "a1"]);
    expect(await texts([...quiet, ...after])).toEqual(["answer to q0", "answer to q1", "answer to a0", "answer to a1"]);
  });

  test("a failing handler fails only its own request, at once or queued", async () => {
    const { ran, handler } = recordingHandler();
    const batched = perTurn(handler);
    const first = await Promise.allSettled(["fail-a", ...names("b", BUSY_TURN)].map((r) => batched(r)));
    expect(first.map((r) => r.status as string)).toEqual(["rejected", ...Array<string>(BUSY_TURN).fill("fulfilled")]);
    await endOfTurn();
    const pending = ["c", "fail-d", "e"].map((r) => batched(r));
    expect(ran.at(-1)).toBe("c");
    const queued = await Promise.allSettled(pending);
    expect(ran.slice(-3)).toEqual(["c", "fail-d", "e"]);
    expect(queued.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect((queued[1] as PromiseRejectedResult).reason.message).toBe("handler failed");
  });

  test("a handler that throws before returning its promise fails only its own request", async () => {
    const batched = perTurn((request: string): Promise<Response> => {
      if (request.startsWith("throw")) throw new Error("thrown synchronously");
      return Promise.resolve(new Response(request));
    });
    const turn = ["throw-0", ...names("b", BUSY_TURN)].map((r) => batched(r));
    expect((await Promise.allSettled(turn))[0]?.status).toBe("rejected");
    await endOfTurn();
    const results = await Promise.allSettled(["a", "throw-1", "c"].map((r) => batched(r)));
    expect(results.map((r) => r.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    expect(await ((results[2] as PromiseFulfilledResult<Response>).value as Response).text()).toBe("c");
  });
});

describe("TurnQueue", () => {
  /** A queue whose items record that they ran, and `offer`: one request of this turn. */
  function recordingQueue() {
    const ran: number[] = [];
    const queue = new TurnQueue<number>((n) => ran.push(n));
    const offer = (n: number) => {
      if (queue.admit()) queue.defer(n);
      else ran.push(n);
    };
    return { ran, offer };
  }

  test("counts a turn's requests: after a busy turn all but the first wait, and run in order at its end", async () => {
    const { ran, offer } = recordingQueue();
    for (let i = 0; i < BUSY_TURN; i++) offer(i);
    // A turn after a quiet one runs everything at once.
    expect(ran).toEqual(names("", BUSY_TURN).map(Number));
    await endOfTurn();
    ran.length = 0;
    for (const n of [100, 101, 102]) offer(n);
    expect(ran).toEqual([100]);
    await endOfTurn();
    expect(ran).toEqual([100, 101, 102]);
    // That turn had fewer than BUSY_TURN: the next runs at once again.
    ran.length = 0;
    for (const n of [200, 201]) offer(n);
    expect(ran).toEqual([200, 201]);
  });

  test("busy turns one after another each run their own waiting requests, once each and in order", async () => {
    // The queue reuses its arrays from turn to turn: nothing of one turn's batch may run again.
    const { ran, offer } = recordingQueue();
    for (let i = 0; i < BUSY_TURN; i++) offer(i);
    await endOfTurn();
    for (let turn = 1; turn <= 4; turn++) {
      ran.length = 0;
      const sent = Array.from({ length: BUSY_TURN + turn }, (_, i) => turn * 100 + i);
      for (const n of sent) offer(n);
      expect(ran).toEqual([turn * 100]);
      await endOfTurn();
      expect(ran).toEqual(sent);
    }
  });
});

describe("perTurn with a handler that answers at once", () => {
  test("a request run at once gets the value itself; a queued one a promise of it", async () => {
    const batched = perTurn((request: string) => `answer to ${request}`);
    const quiet = names("q", BUSY_TURN).map((r) => batched(r));
    expect(quiet).toEqual(names("answer to q", BUSY_TURN));
    await endOfTurn();
    const [first, second] = [batched("x"), batched("y")];
    expect(first).toBe("answer to x");
    expect(second).toBeInstanceOf(Promise);
    expect(await second).toBe("answer to y");
  });
});
