import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";

// The listening server answers POST /v1/decide from a Bun native route (no Elysia lifecycle);
// these calls go over a real socket, so they reach that route, not `app.handle`.
describe("POST /v1/decide on a listening server (native route)", () => {
  let h: Harness;
  let drop: () => Promise<void>;
  let key: string;
  let base: string;
  let server: { stop(): unknown } | null = null;

  beforeAll(async () => {
    const db = await freshDatabase("embedded");
    drop = db.drop;
    h = await startHarness(db, { config: { SVC_MAX_BODY_BYTES: "2048" } });
    ({ key } = await seedSite(h, "news", basicDocument()));
    const app = h.app.listen({ port: 0, hostname: "127.0.0.1" });
    server = app.server;
    base = `http://127.0.0.1:${app.server?.port}`;
  }, 60_000);
  afterAll(async () => {
    await server?.stop();
    await h.stop();
    await drop();
  }, 60_000);

  const post = (body: string, headers: Record<string, string> = {}) =>
    fetch(`${base}/v1/decide`, {
      method: "POST",
      headers: { "x-svc-site-id": "news", "x-api-key": key, "content-type": "application/json", ...headers },
      body,
    });

  it("decides, and counts the call against the meter", async () => {
    const body = JSON.stringify({ features: ["teaser"], deviceId: "dev-native" });
    const first = await (await post(body)).json();
    const second = await post(body);
    expect(second.status).toBe(200);
    expect(second.headers.get("content-type")).toBe("application/json");
    expect(first.decisions.teaser.meters).toEqual({ calls: { allowance: 2, count: 0 } });
    expect((await second.json()).decisions.teaser.meters).toEqual({ calls: { allowance: 2, count: 1 } });
  });

  it("answers every refusal in the envelope, the key checked before the body", async () => {
    const missing = await post("{not json", { "x-api-key": "" });
    expect(missing.status).toBe(401);
    expect(await missing.json()).toMatchObject({
      error: { code: "unauthorized", message: "Invalid or missing API key." },
    });
    const malformed = await post('{"features": [');
    expect(malformed.status).toBe(400);
    expect((await malformed.json()).error.message).toBe("The request body is not valid JSON.");
    // A declared length is read and parsed in one step: blank and non-JSON bodies are still 400,
    // an empty body (length 0) is no body at all, so the schema answers.
    for (const text of ["   ", "features=teaser", '{"features": ["teaser"]} x']) {
      const bad = await post(text);
      expect(bad.status).toBe(400);
      expect((await bad.json()).error).toMatchObject({
        code: "bad_request",
        message: "The request body is not valid JSON.",
      });
    }
    const empty = await post("");
    expect(empty.status).toBe(422);
    expect((await empty.json()).error.code).toBe("validation_failed");
    const invalid = await post(JSON.stringify({ features: [7] }));
    expect(invalid.status).toBe(422);
    expect((await invalid.json()).error.details.map((d: { path: string }) => d.path)).toContain("/features/0");
    for (const context of [[1], "x", null, 3]) {
      const notObject = await post(JSON.stringify({ features: ["teaser"], context }));
      expect(notObject.status).toBe(422);
      expect((await notObject.json()).error.details).toEqual([{ path: "/context", message: "Expected object" }]);
    }
    const nested = await post(JSON.stringify({ features: ["teaser"], context: { a: { b: [1] }, "": 2 } }));
    expect(nested.status).toBe(200);
    const large = await post(JSON.stringify({ features: ["x".repeat(3000)] }));
    expect(large.status).toBe(413);
    expect((await large.json()).error.code).toBe("payload_too_large");
  });

  it("leaves other methods on the path to the app (404 in the envelope)", async () => {
    const res = await fetch(`${base}/v1/decide`, { headers: { "x-svc-site-id": "news", "x-api-key": key } });
    expect(res.status).toBe(404);
    expect((await res.json()).error.code).toBe("not_found");
  });
});
