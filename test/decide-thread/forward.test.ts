/**
 * Requests the request thread hands to the app (src/decide-thread/forward.ts), over a
 * MessageChannel's two ports: method, URL, fields, body, peer and request id arrive; an answer
 * comes back whole, or chunk by chunk for a stream of events, which its client's going cancels.
 */
import { afterEach, describe, expect, it } from "bun:test";
import { Channel, type Endpoint } from "../../src/decide-thread/channel";
import { forwarder, type Peer, serveForwarded } from "../../src/decide-thread/forward";
import { requestIdFor, tagRequest } from "../../src/http/request-id";

const open: MessagePort[] = [];
afterEach(() => {
  for (const port of open.splice(0)) port.close();
});

const PEER: Peer = { address: "192.0.2.7", family: "IPv4", port: 51_000 };

/** The thread's `fetch` and the app behind it, with what the app saw and the errors it raised. */
function forwarded(app: (request: Request) => Response | Promise<Response>) {
  const { port1, port2 } = new MessageChannel();
  open.push(port1, port2);
  const peers = new WeakMap<Request, Peer>();
  const seen: { request: Request; peer: Peer | undefined; id: string; body: string }[] = [];
  const errors: Error[] = [];
  serveForwarded(
    new Channel(port2 as unknown as Endpoint),
    async (request) => {
      seen.push({ request, peer: peers.get(request), id: requestIdFor(request), body: await request.clone().text() });
      return app(request);
    },
    peers,
    (error) => errors.push(error),
  );
  const fetch = forwarder(new Channel(port1 as unknown as Endpoint), () => PEER);
  return { fetch, seen, errors };
}

describe("a request handed to the app", () => {
  it("arrives with its method, URL, fields, body, peer and request id, and its answer comes back whole", async () => {
    const { fetch, seen } = forwarded(
      () => new Response(JSON.stringify({ ok: true }), { status: 201, headers: { "x-answer": "yes" } }),
    );
    const request = new Request("http://127.0.0.1:8080/admin/tenants?x=1", {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": "198.51.100.1" },
      body: '{"id":"t-1"}',
    });
    tagRequest(request, "req-42");
    const response = await fetch(request);
    expect(response.status).toBe(201);
    expect(response.headers.get("x-answer")).toBe("yes");
    expect(await response.json()).toEqual({ ok: true });
    const [one] = seen;
    expect(one?.request.method).toBe("POST");
    expect(one?.request.url).toBe("http://127.0.0.1:8080/admin/tenants?x=1");
    expect(one?.request.headers.get("x-forwarded-for")).toBe("198.51.100.1");
    expect(one?.body).toBe('{"id":"t-1"}');
    expect(one?.peer).toEqual(PEER);
    expect(one?.id).toBe("req-42");
  });

  it("answers a body-less status and a GET with no body", async () => {
    const { fetch, seen } = forwarded(() => new Response(null, { status: 204 }));
    const response = await fetch(new Request("http://127.0.0.1/health"));
    expect(response.status).toBe(204);
    expect(await response.text()).toBe("");
    expect(seen[0]?.body).toBe("");
  });

  it("streams a stream of events chunk by chunk, and cancels it on the app's side when its client goes", async () => {
    let cancelled = false;
    let push: ((text: string) => void) | undefined;
    const { fetch } = forwarded(
      () =>
        new Response(
          new ReadableStream<Uint8Array>({
            start(controller) {
              push = (text) => controller.enqueue(new TextEncoder().encode(text));
              push(": open\n\n");
            },
            cancel() {
              cancelled = true;
            },
          }),
          { headers: { "content-type": "text/event-stream" } },
        ),
    );
    const response = await fetch(new Request("http://127.0.0.1/v1/interventions/stream"));
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    expect(decoder.decode((await reader.read()).value)).toBe(": open\n\n");
    // A later event arrives while the stream stays open.
    push?.("event: gift\ndata: {}\n\n");
    expect(decoder.decode((await reader.read()).value)).toBe("event: gift\ndata: {}\n\n");
    await reader.cancel();
    for (let i = 0; i < 50 && !cancelled; i++) await Bun.sleep(10);
    expect(cancelled).toBe(true);
  });

  it("fails the request, not the thread, when the app throws", async () => {
    const { fetch, errors } = forwarded(() => {
      throw new Error("the app broke");
    });
    await expect(fetch(new Request("http://127.0.0.1/boom"))).rejects.toThrow("the app failed to answer");
    expect(errors.map((error) => error.message)).toEqual(["the app broke"]);
  });
});
