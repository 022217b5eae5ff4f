import { createHmac, timingSafeEqual } from "node:crypto";

export type FakeEngineMode = "ok" | "slow" | "down" | "wrong";

export interface EngineCall {
  readonly kind: "user" | "item";
  readonly userId: string;
  readonly itemId: string | null;
  readonly body: Record<string, unknown>;
}

/**
 * A fake Recombee API on 127.0.0.1: verifies the client's HMAC signature (`hmac_timestamp`,
 * `hmac_sign`: HMAC-SHA1 under the token of the path and query before the signature) and
 * answers Recommend Items to User and to Item from `catalog`, best first. Unknown scenarios are
 * 400 and unknown items 404, as the engine answers them. It can be slow, down (503) or wrong
 * (200 with a body that is not JSON), and records every call it accepted.
 */
export function startFakeRecombee(databaseId: string, token: string) {
  const calls: EngineCall[] = [];
  const state = {
    mode: "ok" as FakeEngineMode,
    slowMs: 1_500,
    catalog: [] as string[],
    scenarios: new Set<string>(["homepage", "read-next"]),
    knownItems: new Set<string>(),
    rejectedSignatures: 0,
  };
  let n = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const raw = request.url.slice(request.url.indexOf("/", url.protocol.length + 2));
      const signAt = raw.lastIndexOf("&hmac_sign=");
      const signed = signAt === -1 ? "" : raw.slice(0, signAt);
      const sign = signAt === -1 ? "" : raw.slice(signAt + "&hmac_sign=".length);
      const expected = createHmac("sha1", token).update(signed).digest("hex");
      const timestamp = Number(url.searchParams.get("hmac_timestamp"));
      if (
        sign.length !== expected.length ||
        !timingSafeEqual(Buffer.from(sign), Buffer.from(expected)) ||
        !Number.isFinite(timestamp) ||
        Math.abs(Date.now() / 1000 - timestamp) > 30
      ) {
        state.rejectedSignatures++;
        return Response.json({ error: "Invalid signature", statusCode: 401 }, { status: 401 });
      }
      const prefix = `/${databaseId}/recomms/`;
      if (!url.pathname.startsWith(prefix) || request.method !== "POST")
        return Response.json({ error: "Not found", statusCode: 404 }, { status: 404 });
      const rest = url.pathname.slice(prefix.length).split("/");
      const body = (await request.json()) as Record<string, unknown>;
      let call: EngineCall;
      if (rest[0] === "users" && rest[2] === "items") {
        call = { kind: "user", userId: decodeURIComponent(rest[1]!), itemId: null, body };
      } else if (rest[0] === "items" && rest[2] === "items") {
        call = { kind: "item", userId: String(body.targetUserId), itemId: decodeURIComponent(rest[1]!), body };
      } else {
        return Response.json({ error: "Not found", statusCode: 404 }, { status: 404 });
      }
      calls.push(call);
      if (state.mode === "slow") await Bun.sleep(state.slowMs);
      if (state.mode === "down") return Response.json({ error: "Unavailable", statusCode: 503 }, { status: 503 });
      if (state.mode === "wrong") return new Response("<html>gateway</html>", { status: 200 });
      if (typeof body.scenario === "string" && !state.scenarios.has(body.scenario))
        return Response.json({ error: `Scenario '${body.scenario}' does not exist`, statusCode: 400 }, { status: 400 });
      if (call.itemId !== null && !state.knownItems.has(call.itemId))
        return Response.json({ error: `Item ${call.itemId} not found`, statusCode: 404 }, { status: 404 });
      const count = Number(body.count);
      const ids = state.catalog.filter((id) => id !== call.itemId).slice(0, count);
      return Response.json({
        recommId: `recomm-${++n}`,
        recomms: ids.map((id) => ({ id })),
        numberNextRecommsCalls: 0,
      });
    },
  });
  return {
    baseUri: `http://127.0.0.1:${server.port}`,
    calls,
    state,
    stop: () => server.stop(true),
  };
}

export type FakeRecombee = ReturnType<typeof startFakeRecombee>;
