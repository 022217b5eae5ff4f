import { beforeAll, describe, expect, it } from "bun:test";
import { giftDocument } from "../fixtures/documents";
import { storeKinds } from "../helpers/databases";
import { servedSuite } from "../helpers/served-suite";
import { answerValidator, expectValidOpenApi, type Json, openApiDocument, operationsOf } from "./openapi-fixture";

/** The statuses the spec lists per route (Endpoints), and ours for the routes it leaves open. */
const SPEC_STATUSES: Record<string, number[]> = {
  "post /v1/decide": [200, 400, 401, 403, 404, 413, 422, 429, 500, 503],
  "post /v1/gift-links": [201, 400, 401, 403, 404, 409, 413, 422, 500, 503],
  "post /v1/gift-links/revoke": [200, 400, 401, 403, 404, 413, 422, 500, 503],
  "get /v1/decide/interventions": [200, 400, 401, 403, 404, 422, 429, 500, 503],
};

describe.each(storeKinds)("GET /v1/decide/openapi.json, the keyed decide cut (%s store)", (kind) => {
  const suite = servedSuite(kind, { config: { HOST: "127.0.0.1" }, site: giftDocument() });
  let doc: Json;

  beforeAll(async () => {
    const res = await fetch(`${suite.server.base}/v1/decide/openapi.json`);
    doc = await openApiDocument(res);
  }, 60_000);

  const operations = () => operationsOf(doc);

  it("is a valid OpenAPI 3.1 document (a maintained validator)", async () => {
    expect(doc.openapi).toStartWith("3.1");
    await expectValidOpenApi(doc);
  });

  it("describes keyed decide, the gift-link routes and the interventions stream, and nothing else", () => {
    expect(
      operations()
        .map(({ method, path }) => `${method} ${path}`)
        .sort(),
    ).toEqual(Object.keys(SPEC_STATUSES).sort());
  });

  it("words the security schemes as the spec does, and asks for the key on every route", () => {
    expect(doc.components.securitySchemes.apiKey).toMatchObject({ type: "http", scheme: "bearer" });
    expect(doc.components.securitySchemes.apiKeyHeader).toMatchObject({
      type: "apiKey",
      in: "header",
      name: "x-api-key",
    });
    expect(doc.components.securitySchemes.session).toMatchObject({
      type: "apiKey",
      in: "cookie",
      name: "svc.session_token",
    });
    for (const { op } of operations()) expect(op.security).toEqual([{ apiKey: [] }, { apiKeyHeader: [] }]);
  });

  it("lists every status the spec lists per route, errors in the envelope, Retry-After on 429 and 503", () => {
    for (const { method, path, op } of operations()) {
      const listed = Object.keys(op.responses)
        .map(Number)
        .sort((a, b) => a - b);
      expect({ route: `${method} ${path}`, listed }).toEqual({
        route: `${method} ${path}`,
        listed: SPEC_STATUSES[`${method} ${path}`] ?? [],
      });
      for (const status of listed.filter((s) => s >= 400)) {
        expect(op.responses[status]).toEqual({ $ref: `#/components/responses/${status}` });
      }
    }
    const responses = doc.components.responses;
    expect(responses["422"].content["application/json"].schema).toEqual({ $ref: "#/components/schemas/ErrorEnvelope" });
    expect(responses["429"].headers["Retry-After"].required).toBe(true);
    expect(responses["503"].headers["Retry-After"]).toBeDefined();
    expect(doc.components.schemas.ErrorEnvelope.properties.error.required).toEqual(["code", "message", "requestId"]);
  });

  it("generates the decide body from the model the route validates with", () => {
    const ref = doc.paths["/v1/decide"].post.requestBody.content["application/json"].schema;
    expect(ref).toEqual({ $ref: "#/components/schemas/DecideBody" });
    const body = doc.components.schemas.DecideBody;
    expect(body.required).toEqual(["features"]);
    expect(Object.keys(body.properties)).toEqual(
      expect.arrayContaining(["features", "content", "context", "userId", "giftLink"]),
    );
  });

  it("answers each documented example request with its documented status, and 200 answers match their schema", async () => {
    const ajv = answerValidator();
    let replayed = 0;
    for (const { method, path, op } of operations()) {
      const headers: Record<string, string> = { authorization: `Bearer ${suite.key}` };
      const query = new URLSearchParams();
      for (const p of op.parameters ?? []) {
        const example = p.example ?? p.schema?.examples?.[0];
        if (example === undefined) continue;
        if (p.in === "header") headers[p.name] = example;
        if (p.in === "query") query.set(p.name, example);
      }
      const url = `${suite.server.base}${path}${query.size > 0 ? `?${query}` : ""}`;
      const json = op.requestBody?.content?.["application/json"];
      if (json === undefined) {
        // No body: the parameters' examples, answered with the route's success status.
        const res = await fetch(url, { method: method.toUpperCase(), headers });
        expect({ route: `${method} ${path}`, status: res.status }).toEqual({ route: `${method} ${path}`, status: 200 });
        await res.body?.cancel();
        replayed++;
        continue;
      }
      for (const [name, example] of Object.entries(json.examples as Json)) {
        const res = await fetch(url, {
          method: method.toUpperCase(),
          headers: { ...headers, "content-type": "application/json" },
          body: JSON.stringify(example.value),
        });
        const answer = await res.json();
        expect({ route: `${method} ${path}`, example: name, status: res.status }).toEqual({
          route: `${method} ${path}`,
          example: name,
          status: example["x-expected-status"],
        });
        const schema = op.responses[String(res.status)]?.content?.["application/json"]?.schema;
        if (res.status < 300) {
          // The answer's schema with the document's components, so its $refs resolve.
          const validate = ajv.compile({ ...schema, components: doc.components });
          expect({ example: name, valid: validate(answer), errors: validate.errors ?? null }).toEqual({
            example: name,
            valid: true,
            errors: null,
          });
        } else expect(answer.error.code).toBeString();
        replayed++;
      }
    }
    expect(replayed).toBeGreaterThanOrEqual(6);
  });
});
