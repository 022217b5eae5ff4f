import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type FakeIdp, startFakeIdp } from "../helpers/fake-idp";
import { type Harness, seedSite, startHarness } from "../helpers/harness";

const dualDocument = () =>
  basicDocument({
    identity: {
      mode: "dual",
      upstream: { audience: "news-web", signOutUrl: "https://login.example/out", cookieNames: ["idp_token"] },
    },
  });

describe.each(storeKinds)("upstream pushes (%s store)", (kind) => {
  let h: Harness;
  let idp: FakeIdp;
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let newsKey: string;
  let sportKey: string;

  beforeAll(async () => {
    idp = await startFakeIdp();
    db = await freshDatabase(kind);
    h = await startHarness(db);
    ({ key: newsKey } = await seedSite(h, "news", dualDocument()));
    ({ key: sportKey } = await seedSite(h, "sport", basicDocument()));
    await h.admin("PUT", "/admin/tenants/default/identity-provider", { issuer: idp.issuer, jwksUrl: idp.jwksUrl });
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await idp.stop();
    await db.drop();
  }, 60_000);

  /** Signs a person in through the exchange, which binds their upstream subject. */
  async function person(sub: string, email: string) {
    const credential = await idp.token({ sub, email, email_verified: true }, { nowMs: h.clock.now() });
    const res = await h.request("POST", "/v1/id/session/exchange", {
      headers: { "x-svc-site-id": "news" },
      body: { subject_token: credential },
    });
    expect(res.status).toBe(200);
    const body = await res.json();
    return { userId: body.user.id as string, token: res.headers.get("set-auth-token") as string };
  }
  const push = (route: string, body: Record<string, unknown>, key = newsKey, site = "news") =>
    h.request("POST", `/v1/id/upstream/${route}`, { headers: { "x-svc-site-id": site, "x-api-key": key }, body });
  const sessionOf = async (token: string) =>
    (
      await (
        await h.request("GET", "/v1/id/get-session", {
          headers: { "x-svc-site-id": "news", authorization: `Bearer ${token}` },
        })
      ).json()
    ).user;

  it("revokes every session of the user; a second push applies nothing", async () => {
    const p = await person("sub-revoke", "revoke@example.com");
    expect(await sessionOf(p.token)).not.toBeNull();
    const res = await push("revoke-sessions", { subject: "sub-revoke", cause: "lock" });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ success: true, userId: p.userId, applied: true });
    expect(await sessionOf(p.token)).toBeNull();
    expect(await (await push("revoke-sessions", { subject: "sub-revoke", cause: "password_reset" })).json()).toEqual({
      success: true,
      userId: p.userId,
      applied: false,
    });
  });

  it("accepts a key of any of the tenant's sites", async () => {
    await person("sub-any", "any@example.com");
    const res = await push("revoke-sessions", { subject: "sub-any", cause: "lock" }, sportKey, "news");
    expect(res.status).toBe(200);
  });

  it("answers 404 No user is bound to that subject. for an unseen subject", async () => {
    for (const [route, body] of [
      ["revoke-sessions", { subject: "never", cause: "lock" }],
      ["change-identifier", { subject: "never", email: "n@example.com", changedAt: "2026-11-01T00:00:00Z" }],
      ["change-subject", { subject: "never", newSubject: "other" }],
      ["erase", { subject: "never" }],
    ] as const) {
      const res = await push(route, body);
      expect(res.status).toBe(404);
      expect(await res.json()).toMatchObject({
        error: { code: "not_found", message: "No user is bound to that subject." },
      });
    }
  });

  it("moves an address only for a strictly newer change, unverified unless said otherwise", async () => {
    const p = await person("sub-email", "old@example.com");
    const move = (email: string, changedAt: string, emailVerified?: boolean) =>
      push("change-identifier", { subject: "sub-email", email, changedAt, emailVerified });
    expect(await (await move("new@example.com", "2026-11-10T10:00:00Z")).json()).toMatchObject({
      applied: true,
      userId: p.userId,
    });
    let user = await sessionOf(p.token);
    expect(user).toMatchObject({ email: "new@example.com", emailVerified: false });
    expect(await (await move("older@example.com", "2026-11-09T10:00:00Z")).json()).toMatchObject({ applied: false });
    expect(await (await move("same-time@example.com", "2026-11-10T10:00:00Z")).json()).toMatchObject({
      applied: false,
    });
    expect(await (await move("verified@example.com", "2026-11-11T10:00:00Z", true)).json()).toMatchObject({
      applied: true,
    });
    user = await sessionOf(p.token);
    expect(user).toMatchObject({ email: "verified@example.com", emailVerified: true });
  });

  it("refuses a changedAt far from the service's clock with 422, so no push can freeze an address", async () => {
    const p = await person("sub-far", "far@example.com");
    const day = 86_400_000;
    for (const changedAt of [
      "9999-12-31T23:59:59Z",
      new Date(h.clock.now() + day + 1000).toISOString(),
      "1970-01-01T00:00:00Z",
    ]) {
      const res = await push("change-identifier", { subject: "sub-far", email: "frozen@example.com", changedAt });
      expect(res.status).toBe(422);
      expect((await res.json()).error).toMatchObject({
        code: "validation_failed",
        message: "The request failed validation.",
        details: [
          { path: "/changedAt", message: "must be within 10 years before and 1 day after the service's clock" },
        ],
      });
    }
    expect(await sessionOf(p.token)).toMatchObject({ email: "far@example.com" });
    // A later honest change still applies.
    const now = new Date(h.clock.now()).toISOString();
    expect(
      await (
        await push("change-identifier", { subject: "sub-far", email: "moved@example.com", changedAt: now })
      ).json(),
    ).toMatchObject({ applied: true });
  });

  it("refuses an address held by another live user with 409, naming them, and records the conflict", async () => {
    const a = await person("sub-a", "a@example.com");
    const b = await person("sub-b", "b@example.com");
    const res = await push("change-identifier", {
      subject: "sub-a",
      email: "b@example.com",
      changedAt: "2026-11-12T00:00:00Z",
    });
    expect(res.status).toBe(409);
    expect(await res.json()).toMatchObject({
      error: {
        code: "conflict",
        message: "That address is already held by another user.",
        details: { collidingUserId: b.userId },
      },
    });
    expect((await sessionOf(a.token)).email).toBe("a@example.com");
    const conflicts = await h.deps.identityDeps.identity.conflicts("default");
    expect(conflicts.some((c) => c.kind === "email" && c.userId === a.userId && c.collidingUserId === b.userId)).toBe(
      true,
    );
  });

  it("links a user to a new subject; a retry after success is 404; a taken subject is 409", async () => {
    const p = await person("sub-old", "mover@example.com");
    const moved = await push("change-subject", { subject: "sub-old", newSubject: "sub-new" });
    expect(await moved.json()).toEqual({ success: true, userId: p.userId, applied: true });
    expect((await push("change-subject", { subject: "sub-old", newSubject: "sub-new" })).status).toBe(404);
    const again = await (await push("revoke-sessions", { subject: "sub-new", cause: "lock" })).json();
    expect(again.userId).toBe(p.userId);
    const other = await person("sub-other", "other@example.com");
    const taken = await push("change-subject", { subject: "sub-new", newSubject: "sub-other" });
    expect(taken.status).toBe(409);
    expect((await taken.json()).error).toMatchObject({
      message: "That subject is already bound to another user.",
      details: { collidingUserId: other.userId },
    });
  });

  it("erases in place, keeping the id; erasing again applies nothing", async () => {
    const p = await person("sub-erase", "erase@example.com");
    await h.request("PATCH", "/v1/id/user-details", {
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${p.token}` },
      body: { name: "Erased Person", userTraits: { a: 1 } },
    });
    expect(await (await push("erase", { subject: "sub-erase" })).json()).toEqual({
      success: true,
      userId: p.userId,
      applied: true,
    });
    const row = await h.deps.users.userById("default", p.userId);
    expect(row?.id).toBe(p.userId);
    expect(row?.email).not.toContain("erase@example.com");
    expect(row?.name).toBeNull();
    expect(row?.traits).toEqual({});
    expect(await sessionOf(p.token)).toBeNull();
    expect(await (await push("erase", { subject: "sub-erase" })).json()).toEqual({
      success: true,
      userId: p.userId,
      applied: false,
    });
  });

  it("validates bodies with 422 and refuses sessions and bad keys", async () => {
    expect((await push("revoke-sessions", { subject: "x", cause: "bored" })).status).toBe(422);
    expect((await push("change-subject", { subject: "x", newSubject: "y".repeat(513) })).status).toBe(422);
    expect(
      (await push("change-identifier", { subject: "x", email: "nope", changedAt: "2026-11-12T00:00:00Z" })).status,
    ).toBe(422);
    const noKey = await h.request("POST", "/v1/id/upstream/erase", {
      headers: { "x-svc-site-id": "news", cookie: "svc.session_token=abc" },
      body: { subject: "x" },
    });
    expect(noKey.status).toBe(401);
  });

  it("answers 503 This tenant has no identity provider. when none is connected", async () => {
    await h.admin("DELETE", "/admin/tenants/default/identity-provider");
    try {
      const res = await push("erase", { subject: "sub-a" });
      expect(res.status).toBe(503);
      expect(await res.json()).toMatchObject({
        error: { code: "service_unavailable", message: "This tenant has no identity provider." },
      });
      expect(res.headers.get("retry-after")).toBeNull();
    } finally {
      await h.admin("PUT", "/admin/tenants/default/identity-provider", { issuer: idp.issuer, jwksUrl: idp.jwksUrl });
    }
  });
});
