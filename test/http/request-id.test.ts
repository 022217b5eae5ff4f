import { describe, expect, it } from "bun:test";
import { basicDocument } from "../fixtures/documents";
import { OPERATOR_TOKEN } from "../helpers/harness";
import { servedSuite } from "../helpers/served-suite";

/** Every error body names the request id its answer's `x-request-id` header carries. */
describe("the request id in every error body, over a listening server", () => {
  const served = servedSuite("embedded", { site: basicDocument() });

  const refusals: [string, () => Promise<Response>, number][] = [
    ["no route", () => fetch(`${served.server.base}/v1/nothing-here`), 404],
    [
      "keyed decide without a key",
      () =>
        fetch(`${served.server.base}/v1/decide`, { method: "POST", headers: { "x-svc-site-id": "news" }, body: "{}" }),
      401,
    ],
    [
      "keyed decide with malformed JSON",
      () =>
        fetch(`${served.server.base}/v1/decide`, {
          method: "POST",
          headers: { "x-svc-site-id": "news", "x-api-key": served.key, "content-type": "application/json" },
          body: "{nope",
        }),
      400,
    ],
    [
      "an admin route without the operator token",
      () => fetch(`${served.server.base}/admin/tenants`, { headers: { authorization: "Bearer wrong" } }),
      401,
    ],
    [
      "a body failing its schema",
      () =>
        fetch(`${served.server.base}/admin/tenants`, {
          method: "POST",
          headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-type": "application/json" },
          body: '{"id": 7}',
        }),
      422,
    ],
    [
      "an unknown site",
      () => fetch(`${served.server.base}/v1/id/config`, { headers: { "x-svc-site-id": "ghost" } }),
      404,
    ],
  ];

  for (const [name, send, status] of refusals) {
    it(`names the answer's x-request-id: ${name}`, async () => {
      const res = await send();
      expect(res.status).toBe(status);
      const id = res.headers.get("x-request-id");
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      expect((await res.json()).error.requestId).toBe(id as string);
    });
  }

  it("keeps the client's own valid x-request-id in the body and the header", async () => {
    const res = await fetch(`${served.server.base}/v1/nothing-here`, { headers: { "x-request-id": "trace-42" } });
    expect(res.headers.get("x-request-id")).toBe("trace-42");
    expect((await res.json()).error.requestId).toBe("trace-42");
  });
});
