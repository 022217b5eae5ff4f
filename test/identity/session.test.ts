import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase } from "../helpers/databases";
import { type Harness, seedSite, startHarness } from "../helpers/harness";
import { mailbox, signIn } from "../helpers/sign-in";

const traitDocument = () =>
  basicDocument({
    traits: {
      interests: { type: "list", values: ["politics", "sport", "culture"], retired: ["crosswords"] },
      edition: { type: "string", values: ["uk", "us"], retired: ["eu"] },
      birthYear: { type: "number" },
    },
  });

describe("sessions, get-session, sign-out and user details", () => {
  let h: Harness;
  let drop: () => Promise<void>;
  let key: string;
  const box = mailbox();

  beforeAll(async () => {
    const db = await freshDatabase("embedded");
    drop = db.drop;
    h = await startHarness(db, { mailTransport: box.transport });
    ({ key } = await seedSite(h, "news", traitDocument()));
    await seedSite(h, "closed", basicDocument({ identity: { mode: "external_only" } }));
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await drop();
  }, 60_000);

  const headers = (extra: Record<string, string> = {}) => ({ "x-svc-site-id": "news", ...extra });

  it("answers the session and a fresh access cookie for the session cookie", async () => {
    const s = await signIn(h, box, "reader@example.com");
    const res = await h.request("GET", "/v1/id/get-session", { headers: headers({ cookie: s.cookie }) });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.user.id).toBe(s.userId);
    expect(body.session).toMatchObject({ id: s.sessionId, kind: "svc" });
    expect(body.exchanged).toBeUndefined();
    expect(res.headers.getSetCookie().some((c) => c.startsWith("svc.access="))).toBe(true);
  });

  it("accepts the set-auth-token value as a bearer (native clients), on both mounts", async () => {
    const s = await signIn(h, box, "native@example.com");
    for (const mount of ["/v1", "/svc/v1"]) {
      const res = await h.request("GET", `${mount}/id/get-session`, {
        headers: headers({ authorization: `Bearer ${s.token}` }),
      });
      expect((await res.json()).user.id).toBe(s.userId);
    }
  });

  it("answers two nulls when signed out or for an unknown token, and expires stale cookies", async () => {
    expect(await (await h.request("GET", "/v1/id/get-session", { headers: headers() })).json()).toEqual({
      user: null,
      session: null,
    });
    const res = await h.request("GET", "/v1/id/get-session", {
      headers: headers({ cookie: "svc.session_token=nope" }),
    });
    expect(await res.json()).toEqual({ user: null, session: null });
    expect(res.headers.getSetCookie().some((c) => c.startsWith("svc.session_token=;") && c.includes("Max-Age=0"))).toBe(
      true,
    );
  });

  it("renews a session in use (sliding) and lets an unused one expire after 30 days", async () => {
    const s = await signIn(h, box, "slide@example.com");
    const first = await (
      await h.request("GET", "/v1/id/get-session", { headers: headers({ cookie: s.cookie }) })
    ).json();
    h.clock.advance(2 * 86_400_000);
    const renewed = await h.request("GET", "/v1/id/get-session", { headers: headers({ cookie: s.cookie }) });
    const body = await renewed.json();
    expect(Date.parse(body.session.expiresAt)).toBeGreaterThan(Date.parse(first.session.expiresAt));
    expect(
      renewed.headers.getSetCookie().some((c) => c.startsWith("svc.session_token=") && !c.includes("Max-Age=0")),
    ).toBe(true);
    h.clock.advance(31 * 86_400_000);
    expect(
      (await (await h.request("GET", "/v1/id/get-session", { headers: headers({ cookie: s.cookie }) })).json()).user,
    ).toBeNull();
  });

  it("signs out: ends the session, expires the cookies, answers the logout url", async () => {
    const s = await signIn(h, box, "leaver@example.com");
    const res = await h.request("POST", "/v1/id/sign-out", { headers: headers({ cookie: s.cookie }) });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ success: true, logoutUrl: null });
    expect(res.headers.getSetCookie().filter((c) => c.includes("Max-Age=0"))).toHaveLength(2);
    expect(
      (await (await h.request("GET", "/v1/id/get-session", { headers: headers({ cookie: s.cookie }) })).json()).user,
    ).toBeNull();
  });

  it("refuses an API key on session routes instead of reading it", async () => {
    for (const auth of [{ authorization: `Bearer ${key}` }, { "x-api-key": key }] as Record<string, string>[]) {
      const res = await h.request("GET", "/v1/id/get-session", { headers: headers(auth) });
      expect(res.status).toBe(401);
      const patched = await h.request("PATCH", "/v1/id/user-details", { headers: headers(auth), body: { name: "K" } });
      expect(patched.status).toBe(401);
    }
  });

  it("merges userTraits per key: sent replaces, null deletes, omitted keeps; retired values are dropped", async () => {
    const s = await signIn(h, box, "traits@example.com");
    const patch = (body: Record<string, unknown>) =>
      h.request("PATCH", "/v1/id/user-details", { headers: headers({ cookie: s.cookie }), body });
    const first = await patch({
      name: "Ada Lovelace",
      firstName: "Ada",
      userTraits: { interests: ["sport", "crosswords"], edition: "uk", birthYear: 1815 },
    });
    expect(first.status).toBe(200);
    // The answer is the user itself (with userTraits), not wrapped in `{ user }`.
    const answered = await first.json();
    expect(answered.user).toBeUndefined();
    expect(answered).toMatchObject({
      id: s.userId,
      name: "Ada Lovelace",
      firstName: "Ada",
      lastName: null,
      userTraits: { interests: ["sport"], edition: "uk", birthYear: 1815 },
    });
    const second = await (await patch({ userTraits: { edition: null, interests: ["culture"] }, lastName: "L" })).json();
    expect(second.userTraits).toEqual({ interests: ["culture"], birthYear: 1815 });
    expect(second).toMatchObject({ name: "Ada Lovelace", firstName: "Ada", lastName: "L" });
    const retired = await (await patch({ userTraits: { edition: "eu" } })).json();
    expect(retired.userTraits).toEqual({ interests: ["culture"], birthYear: 1815 });
    // A retry converges on the same result.
    expect((await (await patch({ userTraits: { edition: "eu" } })).json()).userTraits).toEqual(retired.userTraits);
  });

  it("refuses invalid details with 422 and the failing path, changing nothing", async () => {
    const s = await signIn(h, box, "strict@example.com");
    const patch = (body: Record<string, unknown>) =>
      h.request("PATCH", "/v1/id/user-details", { headers: headers({ cookie: s.cookie }), body });
    await patch({ userTraits: { birthYear: 1990 } });
    for (const [body, path] of [
      [{ userTraits: { interests: ["gardening"] } }, "/userTraits/interests/0"],
      [{ userTraits: { birthYear: "old" } }, "/userTraits/birthYear"],
      [{ userTraits: { shoeSize: 9 } }, "/userTraits"],
      [{ name: "" }, "/name"],
      [{ firstName: "x".repeat(101) }, "/firstName"],
    ] as const) {
      const res = await patch(body);
      expect(res.status).toBe(422);
      expect(JSON.stringify((await res.json()).error.details)).toContain(path);
    }
    // A trait name the site does not declare is the caller's own (it may carry data): never echoed.
    const stray = await patch({ userTraits: { "4242424242424242": 1 } });
    expect(stray.status).toBe(422);
    expect((await stray.json()).error.details).toEqual([
      { path: "/userTraits", message: "has a member that is not a trait this site declares" },
    ]);
    const now = await (await h.request("GET", "/v1/id/get-session", { headers: headers({ cookie: s.cookie }) })).json();
    expect(now.user.name).toBeNull();
    const unchanged = await (await patch({})).json();
    expect(unchanged.userTraits).toEqual({ birthYear: 1990 });
  });

  it("answers 401 without a session and 404 at an external_only site", async () => {
    expect((await h.request("PATCH", "/v1/id/user-details", { headers: headers(), body: { name: "x" } })).status).toBe(
      401,
    );
    const s = await signIn(h, box, "ext@example.com");
    const res = await h.request("PATCH", "/v1/id/user-details", {
      headers: { "x-svc-site-id": "closed", cookie: s.cookie },
      body: { name: "x" },
    });
    expect(res.status).toBe(404);
  });

  it("publishes the site's trait definitions with CORS * and Vary on the site header", async () => {
    const res = await h.request("GET", "/svc/v1/id/traits", { headers: headers() });
    expect(res.headers.get("access-control-allow-origin")).toBe("*");
    expect(res.headers.get("vary")).toBe("x-svc-site-id");
    expect((await res.json()).traits.interests.values).toEqual(["politics", "sport", "culture"]);
  });
});
