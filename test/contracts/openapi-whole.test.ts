import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { Elysia } from "elysia";
import { describeApi, UNDESCRIBED_PREFIXES } from "../../src/contracts/openapi-document";
import { contractKey, ROUTE_CONTRACTS } from "../../src/contracts/route-contracts";
import { freshDatabase } from "../helpers/databases";
import { type Harness, OPERATOR_TOKEN, seedSite, startHarness } from "../helpers/harness";
import { mailbox } from "../helpers/sign-in";
import { newsletterDocument } from "../newsletters/fixture";
import { answerValidator, expectValidOpenApi, type Json, openApiDocument, operationsOf } from "./openapi-fixture";

describe("GET /openapi.json, the whole public and admin API", () => {
  let h: Harness;
  let drop: () => Promise<void>;
  let doc: Json;
  let key: string;
  const box = mailbox();

  beforeAll(async () => {
    const db = await freshDatabase("embedded");
    drop = db.drop;
    h = await startHarness(db, { config: { HOST: "127.0.0.1" }, mailTransport: box.transport });
    ({ key } = await seedSite(h, "news", newsletterDocument()));
    const res = await h.request("GET", "/openapi.json");
    doc = await openApiDocument(res);
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await drop();
  }, 60_000);

  const operations = () => operationsOf(doc);

  it("is a valid OpenAPI 3.1 document (a maintained validator)", async () => {
    expect(doc.openapi).toBe("3.1.0");
    await expectValidOpenApi(doc);
  });

  it("describes every route the app registers, and nothing else (preflights and the console's pages aside)", () => {
    const registered = h.app.routes
      .filter((r) => r.method !== "OPTIONS" && !UNDESCRIBED_PREFIXES.some((p) => r.path.startsWith(p)))
      .map((r) => `${r.method.toLowerCase()} ${r.path.replace(/:(\w+)/g, "{$1}")}`)
      .sort();
    const described = operations()
      .map(({ method, path }) => `${method} ${path}`)
      .sort();
    expect(described).toEqual(registered);
    expect(described.length).toBeGreaterThan(110);
    for (const area of [
      "post /v1/decide",
      "post /svc/v1/decide",
      "get /v1/id/get-session",
      "post /svc/v1/org/update",
      "put /v1/newsletters/subscriptions",
      "get /v1/grants",
      "post /svc/v1/checkout",
      "post /v1/streaming/{pipeline}",
      "post /v1/content/sync",
      "get /v1/recommendations",
      "post /ofrep/v1/evaluate/flags",
      "get /v1/iglu/schemas",
      "get /metrics",
      "post /admin/tenants/{tenant}/sites/{site}/deploy",
    ]) {
      expect(described).toContain(area);
    }
  });

  it("lists every status of the route's contract, errors in the envelope, Retry-After on 429 and 503", () => {
    for (const { method, path, op } of operations()) {
      const contract = ROUTE_CONTRACTS[contractKey(method, path)];
      expect({ route: `${method} ${path}`, listed: Object.keys(op.responses).map(Number) }).toEqual({
        route: `${method} ${path}`,
        listed: [...(contract?.statuses ?? [])],
      });
      for (const [status, response] of Object.entries(op.responses as Json)) {
        if (Number(status) < 400) continue;
        // Readiness answers its checks on 503 too, not the envelope.
        if (`${method} ${path}` === "get /ready") continue;
        const envelope = response.$ref === `#/components/responses/${status}`;
        const ofrep =
          path.startsWith("/ofrep/") &&
          JSON.stringify(response).includes("#/components/schemas/OfrepFailure") &&
          JSON.stringify(response).includes("#/components/schemas/ErrorEnvelope");
        expect({ route: `${method} ${path}`, status, inEnvelope: envelope || ofrep }).toEqual({
          route: `${method} ${path}`,
          status,
          inEnvelope: true,
        });
      }
    }
    const responses = doc.components.responses;
    expect(responses["429"].headers["Retry-After"].required).toBe(true);
    expect(responses["503"].headers["Retry-After"]).toBeDefined();
  });

  it("names the bodies and answers as component schemas", () => {
    let named = 0;
    for (const { method, path, op } of operations()) {
      const medias = [
        ...Object.values((op.requestBody?.content ?? {}) as Json),
        ...Object.entries(op.responses as Json)
          .filter(([s]) => Number(s) < 300)
          .flatMap(([, r]) => Object.entries((r.content ?? {}) as Json))
          .filter(([type]) => type === "application/json")
          .map(([, m]) => m),
      ];
      for (const media of medias) {
        if (media.schema?.["x-svc-unmodelled"] === true) continue;
        const isRef = typeof media.schema?.$ref === "string" || media.schema?.oneOf?.every((s: Json) => s.$ref);
        expect({ route: `${method} ${path}`, named: isRef }).toEqual({ route: `${method} ${path}`, named: true });
        named++;
      }
    }
    expect(named).toBeGreaterThan(40);
    for (const name of ["DecideBody", "DecideAnswer", "ExplainAnswer", "DecisionEntry", "ErrorEnvelope"]) {
      expect(doc.components.schemas[name]).toBeDefined();
    }
    // The twins of a browser-facing route share one schema.
    expect(doc.paths["/svc/v1/org/update"].post.requestBody).toEqual(doc.paths["/v1/org/update"].post.requestBody);
  });

  it("answers keyed decide as a discriminated answer: decisions or explain, never both", () => {
    const ok = doc.paths["/v1/decide"].post.responses["200"].content["application/json"].schema;
    expect(ok.oneOf).toEqual([
      { $ref: "#/components/schemas/DecideAnswer" },
      { $ref: "#/components/schemas/ExplainAnswer" },
    ]);
    const { DecideAnswer, ExplainAnswer } = doc.components.schemas;
    expect(DecideAnswer.required).toContain("decisions");
    expect(DecideAnswer.required).not.toContain("explain");
    expect(ExplainAnswer.required).toContain("explain");
    expect(ExplainAnswer.required).not.toContain("decisions");
    // Each names the other's member as optional, with the same type: a client reads either without a cast.
    expect(ExplainAnswer.properties.decisions.patternProperties).toEqual(
      DecideAnswer.properties.decisions.patternProperties,
    );
    expect(JSON.stringify(DecideAnswer)).toContain("#/components/schemas/DecisionEntry");
  });

  it("asks for the credential each route group takes", () => {
    const security = (method: string, path: string) => doc.paths[path][method].security;
    expect(security("post", "/v1/decide")).toEqual([{ apiKey: [] }, { apiKeyHeader: [] }]);
    expect(security("post", "/admin/tenants")).toEqual([{ operator: [] }]);
    expect(security("post", "/v1/org/update")).toEqual([{ session: [] }, { sessionToken: [] }]);
    expect(security("get", "/health")).toEqual([]);
  });

  it("fails to describe a route no contract covers", () => {
    expect(() => describeApi(new Elysia().get("/v1/undescribed", () => "x"))).toThrow(
      "no contract for get /v1/undescribed",
    );
  });

  it("serves the explorer and its assets itself: no CDN, so it works offline", async () => {
    const page = await h.request("GET", "/openapi");
    expect(page.status).toBe(200);
    expect(page.headers.get("content-type")).toStartWith("text/html");
    const html = await page.text();
    expect(html).not.toMatch(/(src|href)="https?:/);
    const assets = [...html.matchAll(/(?:src|href)="(\/openapi\/assets\/[^"]+)"/g)].map((m) => m[1] as string);
    expect(assets.sort()).toEqual(["/openapi/assets/swagger-ui-bundle.js", "/openapi/assets/swagger-ui.css"]);
    for (const asset of assets) {
      const res = await h.request("GET", asset);
      expect(res.status).toBe(200);
      expect((await res.text()).length).toBeGreaterThan(10_000);
    }
    expect(html).toContain('"url":"/openapi.json"');
    expect(html).toContain('"validatorUrl":null');
    const unknown = await h.request("GET", "/openapi/assets/index.html");
    expect(unknown.status).toBe(404);
    expect(((await unknown.json()) as Json).error.code).toBe("not_found");
  });

  it("describes the real answers of the routes modelled in route-contracts.ts", async () => {
    const ajv = answerValidator();
    const site = { "x-svc-site-id": "news" };
    const keyed = { ...site, authorization: `Bearer ${key}` };
    const calls: [string, string, Record<string, string>, unknown][] = [
      ["GET", "/health", {}, undefined],
      ["GET", "/ready", {}, undefined],
      ["POST", "/svc/v1/decide", { ...site, origin: "https://news.example" }, { features: ["section"] }],
      ["GET", "/v1/newsletters/lists", site, undefined],
      ["GET", "/v1/id/config", site, undefined],
      ["GET", "/v1/id/traits", site, undefined],
      ["GET", "/v1/iglu/schemas", keyed, undefined],
      ["GET", "/v1/iglu/schemas/com.svc/experiment_exposure/jsonschema", keyed, undefined],
      ["GET", "/v1/iglu/schemas/com.svc/experiment_exposure/jsonschema/1-0-0", keyed, undefined],
      ["GET", "/svc/v1/newsletters/subscriptions", site, undefined],
      ["GET", "/v1/id/get-session", site, undefined],
      ["POST", "/ofrep/v1/evaluate/flags/section", keyed, { context: { targetingKey: "device-1" } }],
      [
        "POST",
        "/ofrep/v1/evaluate/flags",
        keyed,
        { context: { targetingKey: "device-1", "svc.features": ["section"] } },
      ],
    ];
    // A signed-in owner of an organization, for the identity and organization routes.
    expect(
      (await h.request("POST", "/v1/id/sign-in/magic-link", { headers: site, body: { email: "owner@example.com" } }))
        .status,
    ).toBe(200);
    await h.deps.outbox.drain();
    const consumed = await h.request("POST", "/v1/id/magic-link/consume", {
      headers: site,
      body: { token: box.lastToken() },
    });
    const cookie = consumed.headers
      .getSetCookie()
      .map((c) => c.split(";")[0])
      .join("; ");
    const created = await h.admin("POST", "/admin/tenants/default/organizations", {
      name: "Owners",
      slug: "owners",
      ownerEmail: "owner@example.com",
    });
    expect(created.status).toBe(201);
    const createdBody = (await created.json()) as Json;
    const organizationId = createdBody.organization.id as string;
    const organizationsSchema = (status: number) =>
      doc.paths["/admin/tenants/{tenant}/organizations"][status === 201 ? "post" : "get"].responses[status].content[
        "application/json"
      ].schema;
    const validCreated = ajv.compile({ ...organizationsSchema(201), components: doc.components });
    expect({ valid: validCreated(createdBody), errors: validCreated.errors ?? null }).toEqual({
      valid: true,
      errors: null,
    });
    const listed = await (await h.admin("GET", "/admin/tenants/default/organizations")).json();
    const validListed = ajv.compile({ ...organizationsSchema(200), components: doc.components });
    expect({ valid: validListed(listed), errors: validListed.errors ?? null }).toEqual({ valid: true, errors: null });
    const session = { ...site, cookie, origin: "https://news.example" };
    calls.push(
      ["GET", "/v1/id/get-session", session, undefined],
      ["PATCH", "/v1/id/user-details", session, { name: "Owner" }],
      ["POST", "/v1/org/set-active", session, { organizationId }],
      ["GET", "/v1/org/list-members", session, undefined],
      ["POST", "/v1/org/update", session, { name: "Owners Ltd" }],
      ["POST", "/v1/org/invite-member", session, { email: "member@example.com", role: "member" }],
      ["GET", "/v1/org/list-invitations", session, undefined],
      ["GET", "/v1/grants", session, undefined],
      ["POST", "/v1/id/sign-out", session, undefined],
    );
    expect(consumed.status).toBe(200);
    const consumeSchema =
      doc.paths["/v1/id/magic-link/consume"].post.responses["200"].content["application/json"].schema;
    const validConsume = ajv.compile({ ...consumeSchema, components: doc.components });
    expect({ valid: validConsume(await consumed.json()), errors: validConsume.errors ?? null }).toEqual({
      valid: true,
      errors: null,
    });
    const operator = { authorization: `Bearer ${OPERATOR_TOKEN}` };
    const issued = await h.admin("POST", "/admin/tenants/default/sites/news/keys", { name: "described" });
    const keyId = ((await issued.clone().json()) as Json).id as string;
    const admin: [string, string, Record<string, string>, unknown, number][] = [
      ["GET", "/admin/tenants", operator, undefined, 200],
      ["POST", "/admin/tenants", operator, { id: "described" }, 201],
      ["GET", "/admin/tenants/default/sites", operator, undefined, 200],
      ["POST", "/admin/tenants/default/sites", operator, { id: "described" }, 201],
      ["GET", "/admin/tenants/default/sites/news/keys", operator, undefined, 200],
      ["POST", `/admin/tenants/default/sites/news/keys/${keyId}/revoke`, operator, undefined, 200],
    ];
    const adminTemplate = (path: string) =>
      path
        .replace("/tenants/default/sites/news/keys/", "/tenants/{tenant}/sites/{site}/keys/")
        .replace(/\/keys\/[0-9a-f-]{36}\/revoke$/, "/keys/{keyId}/revoke")
        .replace("/tenants/default/sites/news/keys", "/tenants/{tenant}/sites/{site}/keys")
        .replace("/tenants/default/sites", "/tenants/{tenant}/sites");
    const validateAnswer = (path: string, method: string, status: number, answer: unknown) => {
      const schema = doc.paths[path][method.toLowerCase()].responses[status]?.content?.["application/json"]?.schema;
      expect({ path, status, modelled: schema?.$ref !== undefined }).toEqual({ path, status, modelled: true });
      const validate = ajv.compile({ ...schema, components: doc.components });
      expect({ path, valid: validate(answer), errors: validate.errors ?? null }).toEqual({
        path,
        valid: true,
        errors: null,
      });
    };
    validateAnswer("/admin/tenants/{tenant}/sites/{site}/keys", "POST", 201, await issued.json());
    const user = await h.admin("POST", "/admin/tenants/default/users", { email: "granted@example.com" });
    const userBody = (await user.json()) as Json;
    validateAnswer("/admin/tenants/{tenant}/users", "POST", 201, userBody);
    const grants = `/admin/tenants/default/users/${userBody.user.id}/grants`;
    const userAdmin: [string, string, unknown, string][] = [
      ["POST", grants, { grant: "premium" }, "/admin/tenants/{tenant}/users/{user}/grants"],
      ["GET", grants, undefined, "/admin/tenants/{tenant}/users/{user}/grants"],
      ["DELETE", `${grants}/premium`, undefined, "/admin/tenants/{tenant}/users/{user}/grants/{grant}"],
      [
        "POST",
        "/admin/tenants/default/sites/news/preview-tokens",
        {},
        "/admin/tenants/{tenant}/sites/{site}/preview-tokens",
      ],
    ];
    for (const [method, path, body, template] of userAdmin) {
      const res = await h.admin(method, path, body);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      validateAnswer(template, method, 200, await res.json());
    }
    for (const [method, path, headers, body, status] of admin) {
      const res = await h.request(method, path, { headers, body });
      expect({ path, status: res.status }).toEqual({ path, status });
      validateAnswer(adminTemplate(path), method, status, await res.json());
    }
    for (const [method, path, headers, body] of calls) {
      const res = await h.request(method, path, { headers, body });
      const answer = await res.json();
      const template = path
        .replace("/flags/section", "/flags/{key}")
        .replace("com.svc/experiment_exposure/jsonschema/1-0-0", "{vendor}/{name}/jsonschema/{version}")
        .replace("com.svc/experiment_exposure/jsonschema", "{vendor}/{name}/jsonschema");
      const schema =
        doc.paths[template][method.toLowerCase()].responses[res.status]?.content?.["application/json"]?.schema;
      expect({ path, status: res.status, modelled: schema?.$ref !== undefined }).toEqual({
        path,
        status: 200,
        modelled: true,
      });
      const validate = ajv.compile({ ...schema, components: doc.components });
      expect({ path, valid: validate(answer), errors: validate.errors ?? null }).toEqual({
        path,
        valid: true,
        errors: null,
      });
    }
  });

  it("models every JSON answer: no operation answers a generic object", () => {
    expect(JSON.stringify(doc)).not.toContain("x-svc-unmodelled");
    expect(doc.paths["/admin/db/backup"].get.responses["200"].content).toEqual({
      "application/gzip": { schema: { type: "string", format: "binary" } },
    });
  });

  it("describes the real answers of the operator plane's routes", async () => {
    const ajv = answerValidator();
    /** Calls an operator route and checks its answer against the document's named schema. */
    const check = async (method: string, path: string, template: string, body?: unknown) => {
      const res = await h.admin(method, path, body);
      expect({ path, status: res.status }).toEqual({ path, status: 200 });
      const schema = doc.paths[template][method.toLowerCase()].responses["200"].content["application/json"].schema;
      expect({ path, named: typeof schema.$ref === "string" }).toEqual({ path, named: true });
      const validate = ajv.compile({ ...schema, components: doc.components });
      const answer = await res.json();
      expect({ path, valid: validate(answer), errors: validate.errors ?? null }).toEqual({
        path,
        valid: true,
        errors: null,
      });
      return answer as Json;
    };
    const tenant = "/admin/tenants/{tenant}";
    const site = `${tenant}/sites/{site}`;
    const idp = { issuer: "https://login.example", jwksUrl: "https://login.example/jwks.json" };
    await check("PUT", "/admin/tenants/default/identity-provider", `${tenant}/identity-provider`, idp);
    await check("DELETE", "/admin/tenants/default/identity-provider", `${tenant}/identity-provider`);
    await check("PUT", "/admin/tenants/default/public-url", `${tenant}/public-url`, {
      publicUrl: "https://id.news.example",
    });
    await check("DELETE", "/admin/tenants/default/public-url", `${tenant}/public-url`);

    expect((await h.admin("POST", "/admin/tenants/default/sites", { id: "modelled" })).status).toBe(201);
    const modelled = "/admin/tenants/default/sites/modelled";
    await check("POST", `${modelled}/deploy`, `${site}/deploy`, { document: newsletterDocument() });
    await check("POST", `${modelled}/deploy`, `${site}/deploy`, { document: newsletterDocument(), preview: true });
    await check("POST", `${modelled}/diff`, `${site}/diff`, { document: newsletterDocument() });
    const history = await check("GET", `${modelled}/documents`, `${site}/documents`);
    expect(history.documents).toHaveLength(2);
    await check("GET", `${modelled}/documents/1`, `${site}/documents/{version}`);
    await check("GET", `${modelled}/impact`, `${site}/impact`);
    await check("POST", `${modelled}/documents/2/publish`, `${site}/documents/{version}/publish`);
    await check("POST", `${modelled}/explain`, `${site}/explain`, { features: ["section"], deviceId: "device-1" });
    await check("POST", `${modelled}/disable`, `${site}/disable`);
    await check("POST", `${modelled}/enable`, `${site}/enable`);

    const listmonk = { url: "http://127.0.0.1:9", username: "api", password: "env:LISTMONK_PASSWORD" };
    await check("PUT", "/admin/tenants/default/services/listmonk", `${tenant}/services/{service}`, listmonk);
    await check("GET", "/admin/tenants/default/services", `${tenant}/services`);
    await check("DELETE", "/admin/tenants/default/services/listmonk", `${tenant}/services/{service}`);

    await h.deps.contentStore.put("default", "news", {
      id: "story-1",
      type: "story",
      headline: "A headline",
      description: null,
      image: null,
      url: "https://news.example/a",
      publishedAt: "2026-11-20T10:00:00.000Z",
      sections: ["news"],
      tags: [],
      authors: [{ id: "author-1", name: null }],
      contentType: null,
      language: "en",
      deleted: false,
      cmsVersion: 1,
      readAt: "2026-11-21T12:00:00.000Z",
    });
    await check("GET", "/admin/tenants/default/sites/news/content", `${site}/content`);
    await check("GET", "/admin/tenants/default/sites/news/content/story-1", `${site}/content/{id}`);
    await h.deps.recommendations.usage.countCall("default", h.clock.now());
    await check("GET", "/admin/tenants/default/recommendations/usage", `${tenant}/recommendations/usage`);

    const consoleUser = { email: "editor@example.com", role: "admin" };
    await check("POST", "/admin/tenants/default/console-users", `${tenant}/console-users`, consoleUser);
    await check("GET", "/admin/tenants/default/console-users", `${tenant}/console-users`);
    await check("DELETE", "/admin/tenants/default/console-users/editor@example.com", `${tenant}/console-users/{email}`);
    const audit = await check("GET", "/admin/audit?limit=3", "/admin/audit");
    expect(audit.entries.length).toBeGreaterThan(0);
    await check("GET", "/admin/db/stats", "/admin/db/stats");
    const backup = await h.admin("GET", "/admin/db/backup");
    expect(backup.status).toBe(200);
    expect(backup.headers.get("content-type")).toBe("application/gzip");

    for (const path of ["/openapi.json", "/v1/decide/openapi.json"]) await check("GET", path, path);
  }, 60_000);
});
