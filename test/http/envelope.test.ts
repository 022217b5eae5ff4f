import { describe, expect, it } from "bun:test";
import { Elysia, t } from "elysia";
import { jsonApi, unmatchedErrors } from "../../src/http/error-plugins";
import { basicDocument } from "../fixtures/documents";
import { memoryLogger } from "../helpers/harness";
import { siteWorld } from "../helpers/worlds";

describe("error envelope over the app", () => {
  const w = siteWorld({ document: basicDocument(), config: { SVC_MAX_BODY_BYTES: "2048" } });

  const headers = () => ({ "x-svc-site-id": "news", authorization: `Bearer ${w.key}` });

  it("answers 400 bad_request for a malformed JSON body", async () => {
    const res = await w.h.request("POST", "/v1/decide", { headers: headers(), rawBody: '{"features": [' });
    expect(res.status).toBe(400);
    expect(await res.json()).toEqual({
      error: { code: "bad_request", message: "The request body is not valid JSON.", requestId: expect.any(String) },
    });
  });

  it("answers 422 validation_failed with the failing paths in details", async () => {
    const res = await w.h.request("POST", "/v1/decide", {
      headers: headers(),
      body: { features: ["ok", 7], userId: "" },
    });
    expect(res.status).toBe(422);
    const body = await res.json();
    expect(body.error.code).toBe("validation_failed");
    const paths = body.error.details.map((d: { path: string }) => d.path);
    expect(paths).toContain("/features/1");
    expect(paths).toContain("/userId");
    // Elysia's default reply echoes the whole schema; ours must not.
    expect(JSON.stringify(body)).not.toContain("expected");
  });

  it("answers 404 not_found for an unknown route", async () => {
    const res = await w.h.request("GET", "/v1/nothing-here");
    expect(res.status).toBe(404);
    expect((await res.json()).error.code).toBe("not_found");
  });

  it("answers 413 payload_too_large for a body over the limit, before reading it", async () => {
    const res = await w.h.request("POST", "/v1/decide", {
      headers: headers(),
      body: { features: ["x".repeat(3000)] },
    });
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({
      error: { code: "payload_too_large", message: "The request body is too large.", requestId: expect.any(String) },
    });
  });
});

describe("body limits without a declared length (chunked)", () => {
  const w = siteWorld({ document: basicDocument(), config: { SVC_MAX_BODY_BYTES: "2048" } });

  const streamed = (text: string) =>
    w.h.app.handle(
      new Request("http://localhost/v1/decide", {
        method: "POST",
        headers: { "x-svc-site-id": "news", "x-api-key": w.key, "content-type": "application/json" },
        body: new ReadableStream({
          start(controller) {
            for (let i = 0; i < text.length; i += 500)
              controller.enqueue(new TextEncoder().encode(text.slice(i, i + 500)));
            controller.close();
          },
        }),
        duplex: "half",
      } as RequestInit),
    );

  it("answers 413 in the envelope for a chunked body over the limit", async () => {
    const res = await streamed(JSON.stringify({ features: ["x".repeat(5000)] }));
    expect(res.status).toBe(413);
    expect(await res.json()).toEqual({
      error: { code: "payload_too_large", message: "The request body is too large.", requestId: expect.any(String) },
    });
  });

  it("reads a chunked body under the limit, and answers 400 for malformed chunked JSON", async () => {
    expect((await streamed(JSON.stringify({ features: ["teaser"], deviceId: "d" }))).status).toBe(200);
    expect((await streamed('{"features": [')).status).toBe(400);
  });
});

describe("error envelope for unexpected errors", () => {
  it("answers 500 without stack or SQL, and logs the error with a request id", async () => {
    const logger = memoryLogger();
    const app = new Elysia()
      .use(jsonApi({ config: { maxBodyBytes: 1024 }, logger }))
      .get("/boom", () => {
        throw new Error('relation "secret_table" does not exist');
      })
      .post("/typed", ({ body }) => body, { body: t.Object({ a: t.Number() }) });
    const res = await app.handle(new Request("http://localhost/boom"));
    expect(res.status).toBe(500);
    const body = await res.json();
    expect(body.error.code).toBe("internal_error");
    expect(JSON.stringify(body)).not.toContain("secret_table");
    expect(JSON.stringify(body)).not.toContain("at ");
    const requestId = body.error.requestId;
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    const logged = logger.lines.find((l) => l.includes(requestId));
    expect(logged).toBeDefined();
    expect(logged).toContain("secret_table");
  });
});

describe("route groups carry their own parser and error rendering", () => {
  const logger = memoryLogger();
  // A JSON group, and a group that reads its own form bodies and renders its own errors.
  const jsonGroup = () =>
    new Elysia({ prefix: "/api" })
      .use(jsonApi({ config: { maxBodyBytes: 1024 }, logger }))
      .post("/echo", ({ body }) => body, { body: t.Object({ a: t.Number() }) });
  const formGroup = () =>
    new Elysia({ prefix: "/form" })
      .onError({ as: "local" }, () => new Response("<p>page error</p>", { status: 400 }))
      .post("/in", async ({ request }) => new Response(`got ${(await request.formData()).get("a")}`), {
        parse: "none",
      });
  // The app's own renderer (src/app.ts: `unmatchedErrors`, registered after every group).
  const appErrors = () => unmatchedErrors(logger);
  const orders = {
    "JSON group first": () => new Elysia().use(jsonGroup()).use(formGroup()).use(appErrors()),
    "form group first": () => new Elysia().use(formGroup()).use(jsonGroup()).use(appErrors()),
  };

  for (const [name, build] of Object.entries(orders)) {
    it(`behaves the same whatever the registration order (${name})`, async () => {
      const app = build();
      const bad = await app.handle(
        new Request("http://localhost/api/echo", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: "{nope",
        }),
      );
      expect(bad.status).toBe(400);
      expect((await bad.json()).error.code).toBe("bad_request");
      const invalid = await app.handle(
        new Request("http://localhost/api/echo", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: '{"a":"x"}',
        }),
      );
      expect(invalid.status).toBe(422);
      expect((await invalid.json()).error.code).toBe("validation_failed");
      const form = await app.handle(
        new Request("http://localhost/form/in", {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: "a=1",
        }),
      );
      expect(form.status).toBe(200);
      expect(await form.text()).toBe("got 1");
      // The form group's own page, not the app's envelope; the app's renderer answers no route.
      const formError = await app.handle(new Request("http://localhost/form/in", { method: "POST", body: "a=1" }));
      expect(await formError.text()).toBe("<p>page error</p>");
      const none = await app.handle(new Request("http://localhost/nowhere"));
      expect(none.status).toBe(404);
      expect((await none.json()).error.code).toBe("not_found");
    });
  }
});
