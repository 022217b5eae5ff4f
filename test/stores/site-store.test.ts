import { expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import type { Db } from "../../db/client";
import { AppError } from "../../src/infra/errors";
import { SealedText } from "../../src/mail/sealed-text";
import { fingerprintOf } from "../../src/sites/content-keys";
import { MemorySiteStore } from "../../src/sites/memory-store";
import { DrizzleSiteStore, type SiteStore } from "../../src/sites/store";
import { rejects, storeContract } from "../helpers/store-contract";

const sealed = new SealedText("test-secret-test-secret-test-secret-0123", "content-key");
const T0 = Date.UTC(2026, 10, 26, 12);
const LIST_ID = "0193a0c4-1d2e-7f00-8000-00000000aa01";

interface World {
  store: SiteStore;
  /** A content key with its secret in clear, as migration 0015 left them. */
  holdClearKey(tenantId: string, siteId: string, keyId: string, secret: string): Promise<void>;
}

/** The error a promise rejects with (null when it resolves). */
async function refusal(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
    return null;
  } catch (error) {
    return error;
  }
}

/** The paths of a 422's issues, or null when it is not one. */
const issuePaths = (error: unknown): string[] | null =>
  error instanceof AppError && error.code === "validation_failed"
    ? (error.details as { path: string }[]).map((i) => i.path)
    : null;

storeContract<World>(
  "the site store",
  (_kind, db) => {
    if (db === null) {
      const memory = new MemorySiteStore(sealed);
      return { store: memory, holdClearKey: async (...args) => memory.holdClearKey(...args) };
    }
    return {
      store: new DrizzleSiteStore(db as Db, sealed),
      async holdClearKey(tenantId, siteId, keyId, secret) {
        await db.execute(sql`insert into content_keys (tenant_id, site_id, key_id, secret)
          values (${tenantId}, ${siteId}, ${keyId}, ${secret})`);
      },
    };
  },
  (world) => {
    const store = () => world().store;
    /** A tenant with one site, named after the test. */
    const site = async (tenant: string, id = "s") => {
      expect(await store().createTenant(tenant, [], false)).toBe("created");
      expect(await store().createSite(tenant, id)).toBe("created");
    };
    const deploy = (tenant: string, document: unknown, stage: "live" | "preview" = "live", at = T0) =>
      store().storeDocument(tenant, "s", document, stage, JSON.stringify(document), at);

    it("creates tenants with their hosts, refuses a taken host or id, and keeps one default", async () => {
      expect(await store().createTenant("ta", ["a.example", "www.a.example"], true, "https://a.example")).toBe(
        "created",
      );
      expect(await store().createTenant("ta", ["other.example"], false)).toBe("exists");
      expect(await store().createTenant("tb", ["www.a.example", "b.example"], false)).toBe("host_taken");
      expect(await store().createTenant("ta", ["a.example"], false)).toBe("host_taken");
      expect(await rejects(store().createTenant("tc", ["c.example", "c.example"], false))).toBe(true);
      expect(await store().createTenant("tb", ["b.example"], true)).toBe("created");
      const listed = (await store().listTenants()).filter((t) => ["ta", "tb", "tc"].includes(t.id));
      expect(listed).toEqual([
        {
          id: "ta",
          isDefault: false,
          hosts: ["a.example", "www.a.example"],
          identityProvider: null,
          publicUrl: "https://a.example",
        },
        { id: "tb", isDefault: true, hosts: ["b.example"], identityProvider: null, publicUrl: null },
      ]);
      // The refused tenants wrote nothing: their hosts are free.
      expect(await store().createTenant("td", ["other.example", "c.example"], false)).toBe("created");
    });

    it("lists tenants by id and sets or clears a tenant's public URL and identity provider", async () => {
      for (const id of ["tz2", "tz1", "tz3"]) expect(await store().createTenant(id, [], false)).toBe("created");
      expect((await store().listTenants()).map((t) => t.id).filter((id) => id.startsWith("tz"))).toEqual([
        "tz1",
        "tz2",
        "tz3",
      ]);
      const idp = { issuer: "https://idp.example", jwksUrl: "https://idp.example/jwks" };
      expect(await store().setPublicUrl("tz1", "https://one.example")).toBe(true);
      expect(await store().setIdentityProvider("tz1", idp)).toBe(true);
      expect(await store().setPublicUrl("nobody", "https://x.example")).toBe(false);
      expect(await store().setIdentityProvider("nobody", idp)).toBe(false);
      const one = async () => (await store().listTenants()).find((t) => t.id === "tz1");
      expect(await one()).toMatchObject({ publicUrl: "https://one.example", identityProvider: idp });
      expect(await store().setPublicUrl("tz1", null)).toBe(true);
      expect(await store().setIdentityProvider("tz1", null)).toBe(true);
      expect(await one()).toMatchObject({ publicUrl: null, identityProvider: null });
    });

    it("creates sites once, only under a tenant, lists them by id and disables them", async () => {
      expect(await store().createSite("ts", "news")).toBe("no_tenant");
      await site("ts", "news");
      expect(await store().createSite("ts", "news")).toBe("exists");
      expect(await store().createSite("ts", "blog")).toBe("created");
      expect(await store().setDisabled("ts", "blog", true)).toBe(true);
      expect(await store().setDisabled("ts", "none", true)).toBe(false);
      expect(await store().listSites("ts")).toEqual([
        { tenantId: "ts", id: "blog", disabled: true, liveVersion: null, previewVersion: null },
        { tenantId: "ts", id: "news", disabled: false, liveVersion: null, previewVersion: null },
      ]);
      expect(await store().listSites("nobody")).toEqual([]);
    });

    it("stores versions, lists them newest first and publishes or rolls back", async () => {
      await site("tv");
      expect(await deploy("tv", { v: 1 })).toBe(1);
      expect(await deploy("tv", { v: 2 }, "preview", T0 + 1000)).toBe(2);
      expect(await deploy("tv", { v: 3 }, "preview", T0 + 2000)).toBe(3);
      expect((await store().listSites("tv"))[0]).toMatchObject({ liveVersion: 1, previewVersion: 3 });
      expect(await store().listDocuments("tv", "s")).toEqual([
        { version: 3, stage: "preview", createdAt: new Date(T0 + 2000).toISOString(), live: false, preview: true },
        { version: 2, stage: "preview", createdAt: new Date(T0 + 1000).toISOString(), live: false, preview: false },
        { version: 1, stage: "live", createdAt: new Date(T0).toISOString(), live: true, preview: false },
      ]);
      expect((await store().listDocuments("tv", "s", 2)).map((d) => d.version)).toEqual([3, 2]);
      expect(await store().listDocuments("tv", "none")).toEqual([]);
      // Publishing the staged preview leaves nothing staged; rolling back keeps it.
      expect(await store().setLiveVersion("tv", "s", 3)).toBe(true);
      expect((await store().listSites("tv"))[0]).toMatchObject({ liveVersion: 3, previewVersion: null });
      expect(await deploy("tv", { v: 4 }, "preview")).toBe(4);
      expect(await store().setLiveVersion("tv", "s", 1)).toBe(true);
      expect((await store().listSites("tv"))[0]).toMatchObject({ liveVersion: 1, previewVersion: 4 });
      expect(await store().setLiveVersion("tv", "s", 9)).toBe(false);
      expect(await store().setLiveVersion("tv", "none", 1)).toBe(false);
    });

    it("loads a version as jsonb holds it, with its author's text", async () => {
      await site("tl");
      const source = '{ "zz": 1, "b": [{ "ccc": true, "a": null }], "aa": "x" }';
      expect(await store().storeDocument("tl", "s", JSON.parse(source), "live", source, T0)).toBe(1);
      const loaded = await store().loadDocument("tl", "s", 1);
      expect(loaded).toEqual({
        version: 1,
        stage: "live",
        createdAt: new Date(T0).toISOString(),
        document: { b: [{ a: null, ccc: true }], aa: "x", zz: 1 },
        source,
      });
      // jsonb's member order: shorter keys first.
      const document = loaded?.document as { b: object[]; zz: number };
      expect(Object.keys(document)).toEqual(["b", "aa", "zz"]);
      expect(Object.keys(document.b[0] as object)).toEqual(["a", "ccc"]);
      document.zz = 2;
      const again = (await store().loadDocument("tl", "s", 1))?.document;
      expect((again as { zz: number }).zz).toBe(1);
      expect(await store().loadDocument("tl", "s", 2)).toBeNull();
      expect(await store().loadDocument("tl", "none", 1)).toBeNull();
    });

    it("keeps content keys' secrets out of the documents, and refuses a changed or missing secret", async () => {
      await site("tk");
      const keys = [
        { id: "b", secret: "secret-b" },
        { id: "a", secret: "secret-a" },
      ];
      const source = JSON.stringify({ contentKeys: keys });
      expect(await store().storeDocument("tk", "s", { contentKeys: keys }, "live", source, T0)).toBe(1);
      const stored = await store().loadDocument("tk", "s", 1);
      expect(stored?.document).toEqual({ contentKeys: [{ id: "b" }, { id: "a" }] });
      expect(stored?.source).not.toContain("secret-");
      expect((await store().contentKeys("tk", "s")).map((k) => [k.id, k.fingerprint, k.rotatedAt])).toEqual([
        ["a", fingerprintOf("secret-a"), null],
        ["b", fingerprintOf("secret-b"), null],
      ]);
      // A known id deploys without its secret, or with the same one; a new key comes after.
      expect(
        await deploy("tk", { contentKeys: [{ id: "a" }, { id: "b", secret: "secret-b" }, { id: "0", secret: "z" }] }),
      ).toBe(2);
      expect((await store().contentKeys("tk", "s")).map((k) => k.id)).toEqual(["a", "b", "0"]);
      const changed = await refusal(deploy("tk", { contentKeys: [{ id: "a", secret: "other" }, { id: "new" }] }));
      expect(issuePaths(changed)).toEqual(["/contentKeys/0/secret", "/contentKeys/1/secret"]);
      // The same new key twice: a unique index refuses it.
      const twice = await refusal(
        deploy("tk", {
          contentKeys: [
            { id: "c", secret: "1" },
            { id: "c", secret: "2" },
          ],
        }),
      );
      expect(twice).not.toBeNull();
      expect(issuePaths(twice)).toBeNull();
      expect((await store().listDocuments("tk", "s")).length).toBe(2);
      expect((await store().contentKeys("tk", "s")).map((k) => k.id)).toEqual(["a", "b", "0"]);
      expect(await store().contentKeyFingerprints("tk", "s")).toEqual(
        new Map([
          ["a", fingerprintOf("secret-a")],
          ["b", fingerprintOf("secret-b")],
          ["0", fingerprintOf("z")],
        ]),
      );
      expect(await store().contentKeys("tk", "none")).toEqual([]);
    });

    it("rotates a content key's secret, which loadSites hands out and stamps", async () => {
      await site("tr");
      expect(await deploy("tr", { contentKeys: [{ id: "k", secret: "old" }] })).toBe(1);
      const [before] = await store().loadSites({ tenantId: "tr", siteId: "s" });
      expect(before?.contentSecrets).toEqual(new Map([["k", "old"]]));
      expect(before?.contentKeyStamp).toBe(`k=${fingerprintOf("old")}`);
      const rotated = await store().rotateContentKey("tr", "s", "k", "new");
      expect(rotated).toMatchObject({ id: "k", fingerprint: fingerprintOf("new") });
      expect(rotated?.rotatedAt).not.toBeNull();
      expect(Date.parse(rotated?.createdAt ?? "")).toBeLessThanOrEqual(Date.parse(rotated?.rotatedAt ?? ""));
      expect(await store().rotateContentKey("tr", "s", "none", "x")).toBeNull();
      expect(await store().rotateContentKey("tr", "other", "k", "x")).toBeNull();
      const [after] = await store().loadSites({ tenantId: "tr", siteId: "s" });
      expect(after?.contentSecrets).toEqual(new Map([["k", "new"]]));
      expect(after?.contentKeyStamp).toBe(`k=${fingerprintOf("new")}`);
      expect((await store().contentKeys("tr", "s"))[0]?.rotatedAt).toBe(rotated?.rotatedAt ?? "");
      // The stored document still deploys as it is: the key keeps its rotated secret.
      expect(await deploy("tr", { contentKeys: [{ id: "k" }] })).toBe(2);
      expect(issuePaths(await refusal(deploy("tr", { contentKeys: [{ id: "k", secret: "old" }] })))).toEqual([
        "/contentKeys/0/secret",
      ]);
    });

    it("seals secrets left in clear, once", async () => {
      await site("tc");
      await world().holdClearKey("tc", "s", "legacy", "clear-secret");
      expect(await store().sealContentKeys()).toBe(1);
      expect(await store().sealContentKeys()).toBe(0);
      expect(await store().contentKeyFingerprints("tc", "s")).toEqual(
        new Map([["legacy", fingerprintOf("clear-secret")]]),
      );
      const [loaded] = await store().loadSites({ tenantId: "tc", siteId: "s" });
      expect(loaded?.contentSecrets.get("legacy")).toBe("clear-secret");
    });

    it("gives newsletter lists stable ids and refuses another list's id", async () => {
      await site("tn");
      await site("tn2");
      const v1 = await deploy("tn", {
        newsletters: [{ slug: "daily" }, { slug: "weekly", id: LIST_ID.toUpperCase() }],
      });
      type Lists = { newsletters: { slug: string; id: string }[] };
      const lists = async (tenant: string, version: number) =>
        ((await store().loadDocument(tenant, "s", version))?.document as Lists | undefined)?.newsletters;
      const first = await lists("tn", v1);
      expect(first?.[1]).toEqual({ slug: "weekly", id: LIST_ID });
      expect(first?.[0]?.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-/);
      // A deploy that drops a list and brings it back keeps its id.
      await deploy("tn", { newsletters: [{ slug: "weekly" }] });
      const v3 = await deploy("tn", { newsletters: [{ slug: "daily" }, { slug: "weekly" }] });
      expect(await lists("tn", v3)).toEqual(first);
      const fresh = "0193a0c4-1d2e-7f00-8000-00000000aa02";
      const refused = await refusal(
        deploy("tn2", {
          newsletters: [
            { slug: "new", id: fresh },
            { slug: "mine", id: LIST_ID },
          ],
        }),
      );
      expect(issuePaths(refused)).toEqual(["/newsletters/1/id"]);
      expect(issuePaths(await refusal(deploy("tn", { newsletters: [{ slug: "daily", id: fresh }] })))).toEqual([
        "/newsletters/0/id",
      ]);
      // The refused deploy wrote nothing: its new list's id is still free.
      const v = await deploy("tn2", { newsletters: [{ slug: "other", id: fresh }] });
      expect(await lists("tn2", v)).toEqual([{ slug: "other", id: fresh }]);
      expect(await refusal(deploy("tn2", { newsletters: [{ slug: "x" }, { slug: "x" }] }))).not.toBeNull();
      expect((await store().listDocuments("tn2", "s")).map((d) => d.version)).toEqual([v]);
    });

    it("loads every site, or one, with its live and preview documents", async () => {
      await site("tw", "a");
      await site("tw2", "a");
      expect(await store().storeDocument("tw", "a", { v: 1 }, "live", "{}", T0)).toBe(1);
      expect(await store().storeDocument("tw", "a", { v: 2 }, "preview", "{}", T0)).toBe(2);
      const all = await store().loadSites();
      const ours = all.filter((s) => s.tenantId.startsWith("tw")).sort((a, b) => (a.tenantId < b.tenantId ? -1 : 1));
      expect(ours.map(({ contentSecrets, ...rest }) => ({ ...rest, secrets: contentSecrets.size }))).toEqual([
        {
          tenantId: "tw",
          id: "a",
          disabled: false,
          liveVersion: 1,
          previewVersion: 2,
          live: { v: 1 },
          preview: { v: 2 },
          contentKeyStamp: "",
          secrets: 0,
        },
        {
          tenantId: "tw2",
          id: "a",
          disabled: false,
          liveVersion: null,
          previewVersion: null,
          live: null,
          preview: null,
          contentKeyStamp: "",
          secrets: 0,
        },
      ]);
      const one = await store().loadSites({ tenantId: "tw2", siteId: "a" });
      expect(one.map((s) => [s.tenantId, s.id])).toEqual([["tw2", "a"]]);
      expect(await store().loadSites({ tenantId: "tw", siteId: "none" })).toEqual([]);
    });
  },
);
