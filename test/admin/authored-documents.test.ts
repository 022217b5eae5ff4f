import { describe, expect, it } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { run } from "../../src/cli/run";
import { withoutSecrets } from "../../src/sites/source-secrets";
import { basicDocument } from "../fixtures/documents";
import { storeKinds } from "../helpers/databases";
import { OPERATOR_TOKEN, serveHarness } from "../helpers/harness";
import { scratchDir } from "../helpers/scratch-dirs";
import { siteWorld } from "../helpers/worlds";

// biome-ignore lint/suspicious/noExplicitAny: answers are read as plain JSON.
type Json = Record<string, any>;

const BASE = "/admin/tenants/default/sites/news";

/** A document with its content keys named by id only (what every read shows of them). */
const keyIds = (document: Json) => ({
  ...document,
  contentKeys: (document.contentKeys as Json[]).map((k) => k.id),
});

/**
 * basicDocument with its top-level members in an author's order (long names first, which is
 * not jsonb's: jsonb orders members by length, then bytes), written with tabs and a comment-free
 * odd layout that only the text can keep.
 */
function authoredText(): string {
  const doc = basicDocument() as Record<string, unknown>;
  const names = Object.keys(doc).sort((a, b) => b.length - a.length || b.localeCompare(a));
  const reordered = Object.fromEntries(names.map((n) => [n, doc[n]]));
  return `${JSON.stringify(reordered, null, "\t")}\n\n`;
}

describe.each(storeKinds)("documents as their authors wrote them (%s store)", (kind) => {
  const w = siteWorld({ document: basicDocument(), kind, config: { HOST: "127.0.0.1" } });

  const json = async (res: Response, status = 200): Promise<Json> => {
    const body = (await res.json()) as Json;
    expect({ status: res.status, body }).toMatchObject({ status });
    return body;
  };
  const versions = async () => (await json(await w.h.admin("GET", `${BASE}/documents`))).documents.length as number;

  it("keeps no content key's secret in the author's text; the text read back deploys again and keeps the key", async () => {
    const secret = "authored-secret-0123456789abcdef0123";
    const doc = { ...(basicDocument() as Record<string, unknown>), contentKeys: [{ id: "cms-1", secret }] };
    const text = JSON.stringify(doc, null, "\t");
    const deployed = await json(await w.h.admin("POST", `${BASE}/deploy`, { source: text, preview: true }));
    const read = await json(await w.h.admin("GET", `${BASE}/documents/${deployed.deployment.version}`));
    expect(JSON.stringify(read)).not.toContain(secret);
    expect(JSON.parse(read.source).contentKeys).toEqual([{ id: "cms-1" }]);
    // Staged again as read: the key keeps its stored secret (its fingerprint does not move).
    const keys = await json(await w.h.admin("GET", `${BASE}/content-keys`));
    const again = await json(await w.h.admin("POST", `${BASE}/deploy`, { source: read.source, preview: true }));
    expect(again.deployment.version).toBeGreaterThan(deployed.deployment.version);
    expect(await json(await w.h.admin("GET", `${BASE}/content-keys`))).toEqual(keys);
  });

  it("keeps a deployed source text exactly, beside the document as data in Postgres' order", async () => {
    const text = authoredText();
    const deployed = await json(await w.h.admin("POST", `${BASE}/deploy`, { source: text, preview: true }));
    const version = deployed.deployment.version;
    const read = await json(await w.h.admin("GET", `${BASE}/documents/${version}`));
    // As written, less the content keys' secrets (kept sealed apart: src/sites/source-secrets.ts).
    expect(read.source).toBe(withoutSecrets(text));
    expect(keyIds(read.document)).toEqual(keyIds(JSON.parse(text)));
    // What this keeps that the data alone loses: the author's member order.
    const authorsOrder = Object.keys(JSON.parse(text));
    expect(Object.keys(read.document)).not.toEqual(authorsOrder);
    expect(Object.keys(JSON.parse(read.source))).toEqual(authorsOrder);
  });

  it("keeps a document sent as JSON in the order its members arrived", async () => {
    const doc = JSON.parse(authoredText());
    const deployed = await json(await w.h.admin("POST", `${BASE}/deploy`, { document: doc, preview: true }));
    const read = await json(await w.h.admin("GET", `${BASE}/documents/${deployed.deployment.version}`));
    expect(read.source).toBe(withoutSecrets(JSON.stringify(doc, null, 2)));
  });

  it("refuses a source that is not JSON, one with a NUL, both members or neither (422), and stores nothing", async () => {
    const before = await versions();
    const cases: [unknown, string, RegExp][] = [
      [{ source: '{ "schemaVersion": 1, ' }, "/source", /^not JSON: /],
      [{ source: `{"x":"\u0000"}` }, "/source", /NUL/],
      [{ source: authoredText(), document: basicDocument() }, "/source", /not both/],
      [{ preview: true }, "/document", /send the document/],
    ];
    for (const [body, path, message] of cases) {
      const out = await json(await w.h.admin("POST", `${BASE}/deploy`, body), 422);
      expect(out.error.code).toBe("validation_failed");
      expect(out.error.details[0].path).toBe(path);
      expect(out.error.details[0].message).toMatch(message);
    }
    const invalid = await json(await w.h.admin("POST", `${BASE}/deploy`, { source: '{ "schemaVersion": 9 }' }), 422);
    expect(invalid.error.details.length).toBeGreaterThan(0);
    expect(await versions()).toBe(before);
  });

  it("deploys a file's text from the CLI: npm run svc -- deploy keeps the file as written", async () => {
    const server = serveHarness(w.h);
    try {
      const env = { SVC_URL: server.base, SVC_OPERATOR_TOKEN: OPERATOR_TOKEN };
      const file = join(scratchDir("svc-authored-"), "site.json");
      writeFileSync(file, authoredText());
      let out = "";
      const code = await run(["deploy", "news", file, "--preview"], {
        env,
        stdout: (t) => {
          out += t;
        },
        stderr: () => {},
      });
      expect(code).toBe(0);
      const version = Number(out.match(/version (\d+)/)?.[1]);
      const read = await json(await w.h.admin("GET", `${BASE}/documents/${version}`));
      expect(read.source).toBe(withoutSecrets(authoredText()));
    } finally {
      await server.stop();
    }
  });
});
