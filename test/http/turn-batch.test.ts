import { describe, expect, test } from "bun:test";
import { perTurn } from "../../src/http/turn-batch";

/** A handler that records when it ran and answers with its request's own text. */
function recordingHandler() {
  const ran: string[] = [];
  const handler = async (request: string): Promise<Response> => {
    ran.push(request);
    if (request === "fail") throw new Error("handler failed");
    return new Response(`answer to ${request}`);
  };
  return { ran, handler };
}

describe("perTurn", () => {
  test("the first request of a turn runs at once; the turn's others together after it, in arrival order", async () => {
    const { ran, handler } = recordingHandler();
    const batched = perTurn(handler);
    const answers = [batched("a"), batched("b"), batched("c")];
    expect(ran).toEqual(["a"]);
    // The others wait while the turn that queued them is still going, microtasks included.
    await Promise.resolve();
    expect(ran).toEqual(["a"]);
    const texts = await Promise.all(answers.map(async (a) => (await a).text()));
    expect(ran).toEqual(["a", "b", "c"]);
    expect(texts).toEqual(["answer to a", "answer to b", "answer to c"]);
  });

  test("the first request of the next turn runs at once again", async () => {
    const { ran, handler } = recordingHandler();
    const batched = perTurn(handler);
    const first = [batched("a"), batched("b")];
    await new Promise((resolve) => setImmediate(resolve));
    expect(ran).toEqual(["a", "b"]);
    const second = [batched("c"), batched("d")];
    expect(ran).toEqual(["a", "b", "c"]);
    const texts = await Promise.all([...first, ...second].map(async (a) => (await a).text()));
    expect(texts).toEqual(["answer to a", "answer to b", "answer to c", "answer to d"]);
    expect(ran).toEqual(["a", "b", "c", "d"]);
  });

  test("a failing handler fails only its own request", async () => {
    const { ran, handler } = recordingHandler();
    const batched = perTurn(handler);
    // Failing at once (first of its turn) and failing in a batch.
    const results = await Promise.allSettled([batched("fail"), batched("b"), batched("fail"), batched("d")]);
    expect(ran).toEqual(["fail", "b", "fail", "d"]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "fulfilled", "rejected", "fulfilled"]);
    expect((results[2] as PromiseRejectedResult).reason.message).toBe("handler failed");
  });

  test("a handler that throws before returning its promise fails only its own request", async () => {
    const batched = perTurn((request: string): Promise<Response> => {
      if (request === "throw") throw new Error("thrown synchronously");
      return Promise.resolve(new Response(request));
    });
    const results = await Promise.allSettled([batched("throw"), batched("b"), batched("throw")]);
    expect(results.map((r) => r.status)).toEqual(["rejected", "fulfilled", "rejected"]);
    expect(await ((results[1] as PromiseFulfilledResult<Response>).value as Response).text()).toBe("b");
  });
});
