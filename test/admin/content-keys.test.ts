import { beforeAll, describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { fingerprintOf } from "../../src/sites/content-keys";
import { basicDocument } from "../fixtures/documents";
import { addConsoleUsers, consoleMailbox, consoleSignIn } from "../helpers/console";
import { signedContent } from "../helpers/content";
import { storeKinds } from "../helpers/databases";
import { siteWorld } from "../helpers/worlds";

// biome-ignore lint/suspicious/noExplicitAny: answers are read as plain JSON.
type Json = Record<string, any>;

const SECRET = "content-secret-one";
const BASE = "/admin/tenants/default/sites/news";

/**
 * Content-signing secrets are shown to nobody after they are saved (issue 36, defect 5: a
 * read-only console viewer read `contentKeys[].secret` on the documents page and signed a
 * descriptor decide accepted). Secrets live sealed in `content_keys`, outside the document
 * history; every read shows a key's id and fingerprint; a known key's secret changes only by an
 * explicit rotation.
 */
describe.each(storeKinds)("content keys: write-only secrets (%s store)", (kind) => {
  const box = consoleMailbox();
  const w = siteWorld({ document: basicDocument(), kind, mailTransport: box.transport });
  beforeAll(async () => {
    await addConsoleUsers(w.h, [
      ["vic@example.com", "viewer"],
      ["ada@example.com", "admin"],
    ]);
  }, 60_000);

  const json = async (res: Response, status = 200) => {
    expect(res.status).toBe(status);
    return (await res.json()) as Json;
  };

  /** The `section` feature's outcome for a descriptor signed with `secret`: `sport` only when it verifies. */
  const sectionWith = async (secret: string, headers: Record<string, string> = {}) => {
    const res = await w.h.request("POST", "/v1/decide", {
      headers: { "x-svc-site-id": "news", "x-api-key": w.key, ...headers },
      body: { features: ["section"], content: signedContent({ id: "a-1", section: "sport" }, secret) },
    });
    return ((await json(res)).decisions.section as { outcome: string }).outcome;
  };

  /** Every byte the store holds of documents and keys, as text. */
  const storedText = async () =>
    JSON.stringify([
      rowsOf(await w.h.deps.database.db.execute(sql`select document::text as d from site_documents`)),
      rowsOf(await w.h.deps.database.db.execute(sql`select secret from content_keys`)),
    ]);

  it("shows a console viewer no secret: not on the documents page, not in a version from the history", async () => {
    const viewer = await consoleSignIn(w.h, box, "vic@example.com");
    const fingerprint = fingerprintOf(SECRET);
    for (const path of ["/console/sites/news/documents", "/console/sites/news/documents?version=1"]) {
      const page = await viewer.get(path);
      expect(page.status).toBe(200);
      expect(page.text).not.toContain(SECRET);
      expect(page.text).toContain(fingerprint);
    }
    // A viewer cannot rotate either (403 on the server, not only a hidden button).
    expect((await viewer.post("/console/sites/news/content-keys/k1/rotate")).status).toBe(403);
  });

  it("answers no secret on any admin read, and stores none in clear", async () => {
    const fingerprint = fingerprintOf(SECRET);
    const version = await json(await w.h.admin("GET", `${BASE}/documents/1`));
    expect(version.document.contentKeys).toEqual([{ id: "k1", fingerprint }]);
    const listed = await json(await w.h.admin("GET", `${BASE}/content-keys`));
    expect(listed.contentKeys).toEqual([{ id: "k1", fingerprint, createdAt: expect.any(String), rotatedAt: null }]);
    // A diff shows a secret given as its fingerprint: the same secret is no change.
    const same = await json(await w.h.admin("POST", `${BASE}/diff`, { document: basicDocument() }));
    expect(same.changes).toEqual([]);
    const added = basicDocument({
      contentKeys: [...basicDocument().contentKeys, { id: "k2", secret: "a-second-secret-value" }],
    });
    const diff = await json(await w.h.admin("POST", `${BASE}/diff`, { document: added }));
    expect(diff.changes).toEqual([
      { op: "add", path: "/contentKeys/1", to: { id: "k2", fingerprint: fingerprintOf("a-second-secret-value") } },
    ]);
    expect(JSON.stringify([version, listed, diff])).not.toContain("secret-value");
    const stored = await storedText();
    expect(stored).not.toContain(SECRET);
    expect(stored).toContain("sealed:v1:");
  });

  it("deploys a document as it reads back, keeping the stored secret, and decide verifies with it", async () => {
    const read = await json(await w.h.admin("GET", `${BASE}/documents/1`));
    const deployed = await json(await w.h.admin("POST", `${BASE}/deploy`, { document: read.document }));
    expect(deployed.deployment.stage).toBe("live");
    expect(await sectionWith(SECRET)).toBe("sport");
    expect(await sectionWith("some-other-secret-value")).toBe("other");
    // The plain document (ids only) deploys too, and so does the original file with its secret.
    const idsOnly = basicDocument({ contentKeys: [{ id: "k1" }] });
    expect((await w.h.admin("POST", `${BASE}/deploy`, { document: idsOnly })).status).toBe(200);
    expect((await w.h.admin("POST", `${BASE}/deploy`, { document: basicDocument() })).status).toBe(200);
    expect(await sectionWith(SECRET)).toBe("sport");
  });

  it("refuses a deploy that changes a known key's secret, or names a new key without one; nothing is stored", async () => {
    const before = (await json(await w.h.admin("GET", `${BASE}/documents`))).documents.length;
    const changed = await json(
      await w.h.admin("POST", `${BASE}/deploy`, {
        document: basicDocument({ contentKeys: [{ id: "k1", secret: "a-different-secret-value" }] }),
      }),
      422,
    );
    expect(changed.error.details).toEqual([
      { path: "/contentKeys/0/secret", message: expect.stringContaining("rotate it") },
    ]);
    expect(JSON.stringify(changed)).not.toContain(SECRET);
    const missing = await json(
      await w.h.admin("POST", `${BASE}/deploy`, {
        document: basicDocument({ contentKeys: [{ id: "k1" }, { id: "k9" }] }),
      }),
      422,
    );
    expect(missing.error.details).toEqual([
      { path: "/contentKeys/1/secret", message: 'the new content key "k9" needs its secret' },
    ]);
    expect((await json(await w.h.admin("GET", `${BASE}/documents`))).documents.length).toBe(before);
    expect(
      (await json(await w.h.admin("GET", `${BASE}/content-keys`))).contentKeys.map((k: { id: string }) => k.id),
    ).toEqual(["k1"]);
    expect(await sectionWith(SECRET)).toBe("sport");
  });

  it("rotates a key explicitly: the new secret is answered once, the old one stops verifying, a rollback keeps the new", async () => {
    const rotated = await json(await w.h.admin("POST", `${BASE}/content-keys/k1/rotate`, {}));
    const fresh = rotated.secret as string;
    expect(fresh).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(rotated.contentKey).toEqual({
      id: "k1",
      fingerprint: fingerprintOf(fresh),
      createdAt: expect.any(String),
      rotatedAt: expect.any(String),
    });
    expect(await sectionWith(SECRET)).toBe("other");
    expect(await sectionWith(fresh)).toBe("sport");
    // Secrets belong to the key, not to a version: rolling back to version 1 keeps the new one.
    expect((await w.h.admin("POST", `${BASE}/documents/1/publish`)).status).toBe(200);
    expect(await sectionWith(SECRET)).toBe("other");
    expect(await sectionWith(fresh)).toBe("sport");
    // The staged document verifies with it too.
    await json(
      await w.h.admin("POST", `${BASE}/deploy`, {
        document: basicDocument({ contentKeys: [{ id: "k1" }] }),
        preview: true,
      }),
    );
    const token = (await json(await w.h.admin("POST", `${BASE}/preview-tokens`, {}))).token as string;
    expect(await sectionWith(fresh, { "x-svc-preview": token })).toBe("sport");
    // A secret given is not echoed back; the read shows its fingerprint, the audit log no secret.
    const given = "a-secret-the-cms-already-has";
    const second = await json(await w.h.admin("POST", `${BASE}/content-keys/k1/rotate`, { secret: given }));
    expect(second.secret).toBeUndefined();
    expect(second.contentKey.fingerprint).toBe(fingerprintOf(given));
    expect(await sectionWith(given)).toBe("sport");
    const audit = JSON.stringify(await json(await w.h.admin("GET", "/admin/audit?limit=20")));
    expect(audit).toContain(`content key k1 rotated to ${fingerprintOf(given)}`);
    expect(audit).not.toContain(given);
    expect(audit).not.toContain(fresh);
    expect((await storedText()).includes(given)).toBe(false);
    await json(await w.h.admin("POST", `${BASE}/content-keys/nope/rotate`, {}), 404);
    await json(await w.h.admin("POST", `${BASE}/content-keys/k1/rotate`, { secret: "short" }), 422);
  });

  it("lets a console writer rotate a key, showing the new secret once", async () => {
    const admin = await consoleSignIn(w.h, box, "ada@example.com");
    await admin.get("/console/sites/news/documents");
    const page = await admin.post("/console/sites/news/content-keys/k1/rotate");
    expect(page.status).toBe(200);
    const secret = page.text.match(/<code id="content-secret">([A-Za-z0-9_-]{43})<\/code>/)?.[1] as string;
    expect(secret).toBeDefined();
    expect(await sectionWith(secret)).toBe("sport");
    const again = await admin.get("/console/sites/news/documents");
    expect(again.text).not.toContain(secret);
    expect(again.text).toContain(fingerprintOf(secret));
  });
});
