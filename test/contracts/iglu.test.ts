import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import Ajv from "ajv";
import { basicDocument, headlineDocument } from "../fixtures/documents";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";

describe.each(storeKinds)("Iglu schema resolution under /v1/iglu (%s store)", (kind) => {
  let h: Harness;
  let drop: () => Promise<void>;
  let key: string;
  let otherKey: string;

  beforeAll(async () => {
    const db = await freshDatabase(kind);
    drop = db.drop;
    h = await startHarness(db, { config: { SVC_IGLU_VENDOR: "com.news.example" } });
    ({ key } = await seedSite(h, "news", headlineDocument()));
    ({ key: otherKey } = await seedSite(h, "other", basicDocument()));
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await drop();
  }, 60_000);

  const get = (path: string, headers: Record<string, string> = { apikey: key }) =>
    h.request("GET", `/v1/iglu${path}`, { headers });
  const SCHEMA = "/schemas/com.news.example/experiment_exposure/jsonschema/1-0-0";

  it("answers the self-describing schema of experiment_exposure 1-0-0 under the configured vendor, cached for long", async () => {
    const res = await get(SCHEMA);
    expect(res.status).toBe(200);
    expect(res.headers.get("cache-control")).toContain("max-age=31536000");
    expect(res.headers.get("cache-control")).toContain("immutable");
    const schema = (await res.json()) as Record<string, unknown>;
    expect(schema.self).toEqual({
      vendor: "com.news.example",
      name: "experiment_exposure",
      format: "jsonschema",
      version: "1-0-0",
    });
    expect(schema.$schema).toBe(
      "http://iglucentral.com/schemas/com.snowplowanalytics.self-desc/schema/jsonschema/1-0-0#",
    );
  });

  it("accepts the key as Authorization: Bearer, x-api-key or apikey, with or without the site header", async () => {
    for (const headers of <Record<string, string>[]>[
      { authorization: `Bearer ${key}` },
      { "x-api-key": key },
      { apikey: key },
      { apikey: key, "x-svc-site-id": "news" },
    ]) {
      expect((await get(SCHEMA, headers)).status).toBe(200);
    }
  });

  it("refuses no key (401), an unknown key (401) and a site header naming another site (403)", async () => {
    const missing = await get(SCHEMA, {});
    expect(missing.status).toBe(401);
    expect(((await missing.json()) as { error: { message: string } }).error.message).toBe("Missing API key.");
    expect((await get(SCHEMA, { apikey: "svc_not-a-key" })).status).toBe(401);
    expect((await get(SCHEMA, { apikey: otherKey, "x-svc-site-id": "news" })).status).toBe(403);
  });

  it("accepts the apikey header on these routes only", async () => {
    const res = await h.request("POST", "/v1/decide", {
      headers: { apikey: key, "x-svc-site-id": "news" },
      body: { features: ["section"] },
    });
    expect(res.status).toBe(401);
  });

  it("lists the iglu: URIs of a model, of a schema and of the whole registry", async () => {
    const uri = "iglu:com.news.example/experiment_exposure/jsonschema/1-0-0";
    for (const path of [
      "/schemas",
      "/schemas/com.news.example/experiment_exposure/jsonschema",
      "/schemas/com.news.example/experiment_exposure/jsonschema/1",
    ]) {
      const res = await get(path);
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual([uri]);
    }
  });

  it.each([
    "/schemas/com.svc/experiment_exposure/jsonschema/1-0-0",
    "/schemas/com.news.example/page_view/jsonschema/1-0-0",
    "/schemas/com.news.example/experiment_exposure/jsonschema/1-0-1",
    "/schemas/com.news.example/experiment_exposure/jsonschema/2",
    "/schemas/com.news.example/experiment_exposure/jsonschema/latest",
  ])("answers 404 in the envelope for an unknown schema: %s", async (path) => {
    const res = await get(path);
    expect(res.status).toBe(404);
    expect(((await res.json()) as { error: { code: string } }).error.code).toBe("not_found");
  });

  it("validates the exposure events decide answers against the resolved schema", async () => {
    const schema = (await (await get(SCHEMA)).json()) as Record<string, unknown>;
    const { $schema: _meta, self, description: _d, ...plain } = schema;
    const ajv = new Ajv({ strict: true });
    const validate = ajv.compile(plain);
    const seen: unknown[] = [];
    for (let i = 0; i < 20; i++) {
      const res = await h.request("POST", "/v1/decide", {
        headers: { "x-svc-site-id": "news", authorization: `Bearer ${key}` },
        body: { features: ["headline"], deviceId: `exposed-${i}` },
      });
      const answer = (await res.json()) as { exposures: { schema: string; data: unknown }[] };
      for (const exposure of answer.exposures) {
        const s = self as { vendor: string; name: string; version: string };
        expect(exposure.schema).toBe(`iglu:${s.vendor}/${s.name}/jsonschema/${s.version}`);
        expect(validate(exposure.data)).toBe(true);
        seen.push(exposure.data);
      }
    }
    expect(seen.length).toBe(20);
    // The schema is not vacuous: a stray member or a wrong type fails it.
    expect(validate({ experiment: "wall", variant: "a", preview: "no" })).toBe(false);
    expect(validate({ experiment: "wall", variant: "a", preview: false, extra: 1 })).toBe(false);
  });
});
