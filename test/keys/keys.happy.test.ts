import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { randomUUID } from "node:crypto";
import { generateKeyValue, hashSecret, keyPrefix } from "../../src/keys/key-value";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";

interface Listing {
  id: string;
  name: string;
  prefix: string;
  permissions: string[];
  status: string;
  requests: number;
  lastUsed: string | null;
  expires: string | null;
}

describe.each(storeKinds)("API key issue, listing and usage (%s store)", (kind) => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let h: Harness;

  beforeAll(async () => {
    db = await freshDatabase(kind);
    h = await startHarness(db);
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await db.drop();
  }, 60_000);

  const decideWith = (key: string) =>
    h.request("POST", "/v1/decide", {
      headers: { "x-svc-site-id": "news", "x-api-key": key },
      body: { features: [] },
    });
  const listedRequests = async (id: string) =>
    ((await (await h.admin("GET", "/admin/tenants/default/sites/news/keys")).json()).keys as Listing[]).find(
      (k) => k.id === id,
    )?.requests;

  it("issues a value of svc_ plus 40 base62 characters and stores only its hash", async () => {
    const { key, keyId } = await seedSite(h, "news", basicDocument());
    expect(key).toMatch(/^svc_[0-9A-Za-z]{40}$/);
    const row = await h.deps.keyStore.byId(keyId);
    expect(row?.hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(row)).not.toContain(key);
    expect(JSON.stringify(row)).not.toContain(key.slice(10));
  });

  it("lists name, first characters, permissions, status, requests, last used date and expiry", async () => {
    const plain = await (await h.admin("POST", "/admin/tenants/default/sites/news/keys", { name: "plain" })).json();
    const streaming = await (
      await h.admin("POST", "/admin/tenants/default/sites/news/keys", {
        name: "ingest",
        permissions: ["streaming:write"],
        expiresInDays: 30,
      })
    ).json();
    const res = await h.admin("GET", "/admin/tenants/default/sites/news/keys");
    const { keys } = (await res.json()) as { keys: Listing[] };
    const a = keys.find((k) => k.id === plain.id)!;
    const b = keys.find((k) => k.id === streaming.id)!;
    expect(a).toMatchObject({
      name: "plain",
      permissions: ["default"],
      status: "active",
      requests: 0,
      lastUsed: null,
      expires: null,
    });
    expect(a.prefix).toBe(plain.key.slice(0, 10));
    expect(a.prefix).toMatch(/^svc_.{6}$/);
    expect(b.permissions).toEqual(["streaming:write"]);
    expect(b.expires).toBe(new Date(h.clock.now() + 30 * 86_400_000).toISOString());
    // The value itself is never listed.
    expect(JSON.stringify(keys)).not.toContain(plain.key);
  });

  it.each([
    [{ name: "" }, "/name"],
    [{ name: "x".repeat(101) }, "/name"],
    [{ name: "ok", expiresInDays: 0 }, "/expiresInDays"],
    [{ name: "ok", expiresInDays: 3651 }, "/expiresInDays"],
    [{ name: "ok", expiresInDays: 1.5 }, "/expiresInDays"],
    [{ name: "ok", permissions: ["admin"] }, "/permissions/0"],
  ])("refuses an invalid issue request %j with 422 and issues nothing", async (body, path) => {
    const before = (await (await h.admin("GET", "/admin/tenants/default/sites/news/keys")).json()).keys.length;
    const res = await h.admin("POST", "/admin/tenants/default/sites/news/keys", body);
    expect(res.status).toBe(422);
    expect(JSON.stringify((await res.json()).error.details)).toContain(path);
    const after = (await (await h.admin("GET", "/admin/tenants/default/sites/news/keys")).json()).keys.length;
    expect(after).toBe(before);
  });

  it("refuses the admin API without the operator token", async () => {
    for (const path of ["/admin/tenants", "/admin/tenants/default/sites/news/keys"]) {
      const res = await h.request("GET", path, { headers: { authorization: "Bearer wrong" } });
      expect(res.status).toBe(401);
    }
    const res = await h.request("POST", "/admin/tenants/default/users", { body: { email: "a@b.example" } });
    expect(res.status).toBe(401);
  });

  it("counts requests in memory without a write per request, and the counts and last-used date survive a restart", async () => {
    // No flush timer: this test flushes when it says so.
    h.deps.flusher.stop();
    const issued = await (await h.admin("POST", "/admin/tenants/default/sites/news/keys", { name: "counted" })).json();
    for (let i = 0; i < 5; i++) expect((await decideWith(issued.key)).status).toBe(200);
    // Not yet flushed: the stored row has no requests, the listing adds the in-memory count.
    expect((await h.deps.keyStore.byId(issued.id))?.requestCount).toBe(0);
    expect(await listedRequests(issued.id)).toBe(5);

    // A graceful stop flushes; a new process on the same store reads the same values.
    await h.stop();
    h = await startHarness(db);
    const after = (await (await h.admin("GET", "/admin/tenants/default/sites/news/keys")).json()).keys as Listing[];
    const row = after.find((k) => k.id === issued.id)!;
    expect(row.requests).toBe(5);
    expect(row.lastUsed).toBe("2026-11-21");
    // Revoking keeps the count and last use.
    const revoked = await (await h.admin("POST", `/admin/tenants/default/sites/news/keys/${issued.id}/revoke`)).json();
    expect(revoked.key).toMatchObject({ status: "revoked", requests: 5, lastUsed: "2026-11-21" });
  });

  it("lists every request while their usage write is in flight, and after it commits or fails", async () => {
    h.deps.flusher.stop();
    const issued = await (
      await h.admin("POST", "/admin/tenants/default/sites/news/keys", { name: "in flight" })
    ).json();
    for (let i = 0; i < 5; i++) expect((await decideWith(issued.key)).status).toBe(200);
    const store = h.deps.keyStore;
    const addUsage = store.addUsage.bind(store);
    // The usage write, held open until the test lets it go on (or fail).
    const held: { release: ((outcome: "commit" | "fail") => void) | null } = { release: null };
    const hold = () => {
      let entered!: () => void;
      let release!: (outcome: "commit" | "fail") => void;
      const started = new Promise<void>((resolve) => {
        entered = resolve;
      });
      const released = new Promise<"commit" | "fail">((resolve) => {
        release = resolve;
      });
      held.release = release;
      store.addUsage = async (usage) => {
        entered();
        if ((await released) === "fail") {
          throw Object.assign(new Error("write CONNECTION_CLOSED"), { code: "CONNECTION_CLOSED" });
        }
        return addUsage(usage);
      };
      return { started, release };
    };
    try {
      const committing = hold();
      const flushing = h.deps.flusher.flushAll();
      await committing.started;
      // In flight: nothing stored yet, and the listing still counts the five.
      expect((await store.byId(issued.id))?.requestCount).toBe(0);
      expect(await listedRequests(issued.id)).toBe(5);
      // A request while the write is in flight adds to it.
      expect((await decideWith(issued.key)).status).toBe(200);
      expect(await listedRequests(issued.id)).toBe(6);
      committing.release("commit");
      await flushing;
      expect((await store.byId(issued.id))?.requestCount).toBe(5);
      expect(await listedRequests(issued.id)).toBe(6);

      // A write that fails: counted while in flight, and after, since its usage goes back.
      const failing = hold();
      const failed = h.deps.flusher.flushAll();
      await failing.started;
      expect(await listedRequests(issued.id)).toBe(6);
      failing.release("fail");
      await failed;
      expect((await store.byId(issued.id))?.requestCount).toBe(5);
      expect(await listedRequests(issued.id)).toBe(6);
      expect(h.logger.lines.some((l) => l.includes("counter flush failed") && l.includes("key-usage"))).toBe(true);
    } finally {
      store.addUsage = addUsage;
      // Should an assertion fail mid-flight, the held write must not hang the harness's stop.
      held.release?.("fail");
    }
    await h.deps.flusher.flushAll();
    expect((await store.byId(issued.id))?.requestCount).toBe(6);
    expect(await listedRequests(issued.id)).toBe(6);
  });

  it("holds every usable key from its start, the keys it issues, and keys issued by another process", async () => {
    const post = async (name: string) =>
      (await (await h.admin("POST", "/admin/tenants/default/sites/news/keys", { name })).json()) as {
        id: string;
        key: string;
      };
    const kept = await post("kept");
    const gone = await post("gone");
    await h.admin("POST", `/admin/tenants/default/sites/news/keys/${gone.id}/revoke`);
    // A key already expired (written to the store directly: the API issues whole days ahead).
    const expiredValue = generateKeyValue();
    await h.deps.keyStore.insert({
      id: randomUUID(),
      tenantId: "default",
      siteId: "news",
      name: "expired",
      prefix: keyPrefix(expiredValue),
      hash: hashSecret(expiredValue),
      permissions: [],
      expiresAt: new Date(h.clock.now() - 60_000),
    });
    // Issued here: held at once, no read on its first use.
    expect(h.deps.keys.authenticate(kept.key, h.clock.now())).toMatchObject({ id: kept.id });

    // A second process on the same store holds the usable keys from its start, not the revoked one.
    const other = await startHarness(db);
    try {
      const now = other.clock.now();
      expect(other.deps.keys.authenticate(kept.key, now)).toMatchObject({ id: kept.id });
      const revoked = other.deps.keys.authenticate(gone.key, now);
      expect(revoked).toBeInstanceOf(Promise);
      expect(await revoked).toBeNull();
      const expired = other.deps.keys.authenticate(expiredValue, now);
      expect(expired).toBeInstanceOf(Promise);
      expect(await expired).toBeNull();

      // A key the first process issues later reaches the second through the change feed (driven
      // here rather than waited for), before its first use there: that use reads nothing.
      const later = await post("later");
      await other.deps.changes.poll();
      expect(other.deps.keys.authenticate(later.key, now)).toMatchObject({ id: later.id });
    } finally {
      await other.stop();
    }
  });
});
