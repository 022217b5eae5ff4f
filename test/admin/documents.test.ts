import { beforeAll, describe, expect, it } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { siteDocuments } from "../../db/schema";
import { run } from "../../src/cli/run";
import { fingerprintOf } from "../../src/sites/content-keys";
import { basicDocument } from "../fixtures/documents";
import { signedContent } from "../helpers/content";
import { storeKinds } from "../helpers/databases";
import { OPERATOR_TOKEN, serveHarness } from "../helpers/harness";
import { scratchDir } from "../helpers/scratch-dirs";
import { siteWorld } from "../helpers/worlds";

// biome-ignore lint/suspicious/noExplicitAny: answers are read as plain JSON.
type Json = Record<string, any>;

const BASE = "/admin/tenants/default/sites/news";

/** basicDocument whose `section` feature answers `sport` for content of another section. */
function withSection(section: string) {
  const doc = basicDocument();
  doc.features.section.rules = [{ when: { fact: "content.section", eq: section }, then: "sport" }];
  return doc;
}

describe.each(storeKinds)("document history, publish and rollback (%s store)", (kind) => {
  const w = siteWorld({ document: basicDocument(), kind, config: { HOST: "127.0.0.1" } });

  beforeAll(async () => {
    expect((await w.h.admin("POST", `${BASE}/deploy`, { document: withSection("news") })).status).toBe(200);
    expect(
      (await w.h.admin("POST", `${BASE}/deploy`, { document: withSection("culture"), preview: true })).status,
    ).toBe(200);
  }, 60_000);

  const json = async (res: Response, status = 200): Promise<Json> => {
    const body = (await res.json()) as Json;
    expect({ status: res.status, body }).toMatchObject({ status });
    return body;
  };

  /** The `section` feature's outcome for a news article, as keyed decide answers it now. */
  const sectionOutcome = async (): Promise<string> => {
    const res = await w.h.request("POST", "/v1/decide", {
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${w.key}` },
      body: { features: ["section"], deviceId: "d-1", content: signedContent({ id: "a-1", section: "news" }) },
    });
    return ((await json(res)) as Json).decisions.section.outcome;
  };

  it("lists every stored version newest first, with which one is live and which staged", async () => {
    const out = await json(await w.h.admin("GET", `${BASE}/documents`));
    expect(out).toMatchObject({ site: "news", tenant: "default", liveVersion: 2, previewVersion: 3 });
    expect(out.documents.map((d: Json) => [d.version, d.stage, d.live, d.preview])).toEqual([
      [3, "preview", false, true],
      [2, "live", true, false],
      [1, "live", false, false],
    ]);
    for (const d of out.documents) expect(new Date(d.createdAt).toISOString()).toBe(d.createdAt);
  });

  it("reads one version with its document", async () => {
    const out = await json(await w.h.admin("GET", `${BASE}/documents/1`));
    expect(out).toMatchObject({ version: 1, stage: "live", live: false, preview: false });
    // The content key reads as its id and fingerprint: its secret is never answered.
    expect(out.document).toEqual(
      basicDocument({ contentKeys: [{ id: "k1", fingerprint: fingerprintOf("content-secret-one") }] }),
    );
    const missing = await json(await w.h.admin("GET", `${BASE}/documents/99`), 404);
    expect(missing.error).toMatchObject({ code: "not_found", message: "Unknown document version." });
  });

  it("diffs a document against the live one, each change at its JSON pointer", async () => {
    const out = await json(await w.h.admin("POST", `${BASE}/diff`, { document: withSection("culture") }));
    expect(out).toEqual({
      live: 2,
      changes: [{ op: "replace", path: "/features/section/rules/0/when/eq", from: "news", to: "culture" }],
    });
    const doc = withSection("news") as Json;
    delete doc.catalog.basic.internal;
    doc.meters.articles.allowance = 5;
    doc.catalog.basic["a/b~c"] = 1;
    const changes = (await json(await w.h.admin("POST", `${BASE}/diff`, { document: doc }))).changes;
    expect(changes).toContainEqual({ op: "replace", path: "/meters/articles/allowance", from: 3, to: 5 });
    expect(changes).toContainEqual({ op: "remove", path: "/catalog/basic/internal", from: "x" });
    expect(changes).toContainEqual({ op: "add", path: "/catalog/basic/a~1b~0c", to: 1 });
    expect(changes.length).toBe(3);
  });

  it("refuses an invalid document to diff with each error at its JSON pointer (422)", async () => {
    const doc = withSection("news") as Json;
    doc.meters.articles.allowance = "three";
    const out = await json(await w.h.admin("POST", `${BASE}/diff`, { document: doc }), 422);
    expect(out.error.code).toBe("validation_failed");
    expect(out.error.details.map((d: Json) => d.path)).toContain("/meters/articles/allowance");
  });

  it("publishes the staged version, which every process swaps to, and nothing is left staged", async () => {
    expect(await sectionOutcome()).toBe("sport");
    const out = await json(await w.h.admin("POST", `${BASE}/documents/3/publish`));
    expect(out.deployment).toEqual({ site: "news", tenant: "default", version: 3, stage: "live", previousVersion: 2 });
    expect(await sectionOutcome()).toBe("other");
    const listed = await json(await w.h.admin("GET", `${BASE}/documents`));
    expect(listed).toMatchObject({ liveVersion: 3, previewVersion: null });
    expect(w.h.deps.registry.site("default", "news")).toMatchObject({
      liveVersion: 3,
      previewVersion: null,
      preview: null,
    });
  });

  it("rolls back to an earlier version, and the audit log says from which", async () => {
    const out = await json(await w.h.admin("POST", `${BASE}/documents/2/publish`));
    expect(out.deployment).toMatchObject({ version: 2, previousVersion: 3 });
    expect(await sectionOutcome()).toBe("sport");
    const audit = await json(await w.h.admin("GET", "/admin/audit?tenant=default&site=news&limit=5"));
    const [latest, before] = audit.entries as Json[];
    expect(latest).toMatchObject({
      action: "POST /tenants/:tenant/sites/:site/documents/:version/publish",
      target: "tenant=default site=news version=2",
      summary: "live version 2 (was 3)",
    });
    expect(before?.summary).toBe("live version 3 (was 2)");
    // A diff reads: it is not recorded.
    expect(audit.entries.some((e: Json) => e.action.endsWith("/diff"))).toBe(false);
  });

  it("refuses to publish a stored version that fails today's checks (422), and nothing changes", async () => {
    await w.h.deps.database.db
      .insert(siteDocuments)
      .values({ tenantId: "default", siteId: "news", version: 4, stage: "live", document: { schemaVersion: 1 } });
    const out = await json(await w.h.admin("POST", `${BASE}/documents/4/publish`), 422);
    expect(out.error.code).toBe("validation_failed");
    expect(out.error.details.length).toBeGreaterThan(0);
    expect((await json(await w.h.admin("GET", `${BASE}/documents`))).liveVersion).toBe(2);
    expect(await sectionOutcome()).toBe("sport");
  });

  it.each([
    ["GET", "/documents/0"],
    ["GET", "/documents/-1"],
    ["GET", "/documents/1.5"],
    ["GET", "/documents/abc"],
    ["GET", "/documents/1e3"],
    ["GET", "/documents/9999999999"],
    ["POST", "/documents/0/publish"],
    ["POST", "/documents/2147483648/publish"],
    ["POST", "/documents/%201/publish"],
  ])("answers 422 in the envelope for a version that is not a positive whole number: %s %s", async (method, path) => {
    const out = await json(await w.h.admin(method, `${BASE}${path}`), 422);
    expect(out.error.code).toBe("validation_failed");
  });

  it.each([
    ["GET", "/admin/tenants/default/sites/nope/documents", 404],
    ["GET", "/admin/tenants/nope/sites/news/documents/1", 404],
    ["POST", "/admin/tenants/default/sites/nope/documents/1/publish", 404],
    ["POST", "/admin/tenants/default/sites/news/documents/77/publish", 404],
    ["GET", `/admin/tenants/default/sites/${"s".repeat(129)}/documents`, 422],
    ["GET", "/admin/tenants/default/sites/ne%00ws/documents", 400],
    ["GET", "/admin/tenants/default/sites/news/documents/%00", 400],
  ])("answers %s %s with %i in the envelope", async (method, path, status) => {
    const out = await json(await w.h.admin(method, path), status);
    expect(typeof out.error.message).toBe("string");
  });

  it.each([
    ["no body", undefined, 422],
    ["an array", [], 422],
    ["a string", "x", 422],
    ["no document", {}, 422],
    ["a NUL in a value", { document: { ...basicDocument(), identity: { mode: "svc\u0000only" } } }, 422],
    ["a document of the wrong type", { document: [basicDocument()] }, 422],
    ["an overlong site id", { document: basicDocument() }, 422, "s".repeat(129)],
    ["an unknown site", { document: basicDocument() }, 404, "nope"],
  ] as [string, unknown, number, string?][])(
    "answers a diff with %s %i in the envelope",
    async (_name, body, status, site = "news") => {
      const out = await json(await w.h.admin("POST", `/admin/tenants/default/sites/${site}/diff`, body), status);
      expect(typeof out.error.code).toBe("string");
    },
  );

  it("refuses without the operator token (401)", async () => {
    const res = await w.h.request("GET", `${BASE}/documents`);
    expect(res.status).toBe(401);
    const publish = await w.h.request("POST", `${BASE}/documents/1/publish`, {
      headers: { authorization: "Bearer x" },
    });
    expect(publish.status).toBe(401);
  });

  it("lists, diffs and publishes from the CLI: npm run svc -- documents | diff | publish", async () => {
    const server = serveHarness(w.h);
    try {
      const env = { SVC_URL: server.base, SVC_OPERATOR_TOKEN: OPERATOR_TOKEN };
      const cli = async (...args: string[]) => {
        let out = "";
        let err = "";
        const code = await run(args, {
          env,
          stdout: (t) => {
            out += t;
          },
          stderr: (t) => {
            err += t;
          },
        });
        return { code, out, err };
      };
      const listed = await cli("documents", "news");
      expect(listed.code).toBe(0);
      const lines = listed.out.trim().split("\n");
      expect(lines[0]).toBe("VERSION\tDEPLOYED AS\tCREATED\tNOW");
      expect(lines.find((l) => l.startsWith("2\t"))).toEndWith("\tlive");
      const file = join(scratchDir("svc-documents-"), "site.json");
      writeFileSync(file, JSON.stringify(withSection("culture")));
      const diffed = await cli("diff", "news", file);
      expect(diffed).toEqual({
        code: 0,
        out: 'against live version 2: 1 change(s)\n~ /features/section/rules/0/when/eq "news" -> "culture"\n',
        err: "",
      });
      expect(await cli("publish", "news", "1")).toEqual({
        code: 0,
        out: "published news version 1 (live was version 2)\n",
        err: "",
      });
      const json = JSON.parse((await cli("documents", "news", "--json")).out);
      expect(json.liveVersion).toBe(1);
      const refused = await cli("publish", "news", "0");
      expect(refused.code).toBe(1);
      expect(refused.err).toContain("validation_failed");
    } finally {
      await server.stop();
    }
  });
});
