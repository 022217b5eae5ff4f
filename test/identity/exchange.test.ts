import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { basicDocument, dualDocument } from "../fixtures/documents";
import { freshDatabase } from "../helpers/databases";
import { type FakeIdp, startFakeIdp } from "../helpers/fake-idp";
import { type Harness, seedSite, startHarness } from "../helpers/harness";

const REFUSED = "That credential was not accepted.";

describe("session exchange in dual mode against a real identity provider", () => {
  let h: Harness;
  let idp: FakeIdp;
  let drop: () => Promise<void>;

  beforeAll(async () => {
    idp = await startFakeIdp({ slowMs: 1_500 });
    const db = await freshDatabase("embedded");
    drop = db.drop;
    h = await startHarness(db, { config: { SVC_IDP_TIMEOUT_MS: "400" } });
    await seedSite(h, "news", dualDocument());
    await seedSite(h, "own", basicDocument());
    const res = await h.admin("PUT", "/admin/tenants/default/identity-provider", {
      issuer: idp.issuer,
      jwksUrl: idp.jwksUrl,
    });
    expect(res.status).toBe(200);
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await idp.stop();
    await drop();
  }, 60_000);

  const token = (
    claims: { sub: string; email?: string; email_verified?: boolean },
    opts: Parameters<FakeIdp["token"]>[1] = {},
  ) => idp.token(claims, { nowMs: h.clock.now(), ...opts });
  const exchange = (body?: Record<string, unknown>, extra: Record<string, string> = {}, site = "news") =>
    h.request("POST", "/v1/id/session/exchange", { headers: { "x-svc-site-id": site, ...extra }, body });

  it("exchanges a subject_token for a session; each call mints a new one; one user per subject", async () => {
    const credential = await token({ sub: "up-1", email: "one@example.com", email_verified: true });
    const a = await exchange({ subject_token: credential, subject_token_type: "urn:ietf:params:oauth:token-type:jwt" });
    expect(a.status).toBe(200);
    const first = await a.json();
    expect(first.user).toMatchObject({ email: "one@example.com", emailVerified: true });
    expect(first.session.kind).toBe("svc");
    expect(a.headers.get("set-auth-token")).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const second = await (await exchange({ subject_token: credential })).json();
    expect(second.user.id).toBe(first.user.id);
    expect(second.session.id).not.toBe(first.session.id);
  });

  it("reads the credential from the upstream cookie of a browser", async () => {
    const credential = await token({ sub: "up-cookie", email: "cookie@example.com" });
    const res = await exchange(undefined, { cookie: `idp_token=${credential}` });
    expect(res.status).toBe(200);
  });

  it.each([
    ["no credential", async () => undefined, "external_credential_missing"],
    [
      "an expired credential",
      async () => token({ sub: "up-x" }, { expiresAtSeconds: Math.floor(h.clock.now() / 1000) - 10 }),
      "external_credential_expired",
    ],
    ["another audience", async () => token({ sub: "up-x" }, { audience: "other-site" }), "external_credential_invalid"],
    [
      "another issuer",
      async () => token({ sub: "up-x" }, { issuer: "https://elsewhere.example" }),
      "external_credential_invalid",
    ],
    ["a forged signature", async () => idp.forged({ sub: "up-x" }), "external_credential_invalid"],
    ["garbage", async () => "not.a.jwt", "external_credential_invalid"],
  ])("answers 401 for %s, never saying what was wrong", async (_label, make, code) => {
    const credential = await make();
    const res = await exchange(credential ? { subject_token: credential } : {});
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: { code, message: REFUSED } });
  });

  it.each([
    ["down (500)", "error", "identity_provider_unreachable", "5"],
    ["rate limiting (429)", "rate_limited", "identity_provider_rate_limited", "17"],
    ["slower than the timeout", "slow", "identity_provider_unreachable", "5"],
  ] as const)("answers 503 with Retry-After when the provider is %s", async (_label, mode, code, retryAfter) => {
    // A key id the cached JWKS does not know makes jose fetch it again.
    const fresh = await startFakeIdp({ slowMs: 1_500 });
    await h.admin("PUT", "/admin/tenants/default/identity-provider", { issuer: fresh.issuer, jwksUrl: fresh.jwksUrl });
    try {
      fresh.state.mode = mode;
      const res = await exchange({ subject_token: await fresh.token({ sub: "up-503" }, { nowMs: h.clock.now() }) });
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBe(retryAfter);
      expect(await res.json()).toMatchObject({
        error: { code, message: "The identity provider could not be reached." },
      });
    } finally {
      await fresh.stop();
      await h.admin("PUT", "/admin/tenants/default/identity-provider", { issuer: idp.issuer, jwksUrl: idp.jwksUrl });
    }
  });

  it("answers 503 with Retry-After when the provider is not listening at all", async () => {
    const gone = await startFakeIdp();
    const credential = await gone.token({ sub: "up-gone" }, { nowMs: h.clock.now() });
    await gone.stop();
    await h.admin("PUT", "/admin/tenants/default/identity-provider", { issuer: gone.issuer, jwksUrl: gone.jwksUrl });
    try {
      const res = await exchange({ subject_token: credential });
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).not.toBeNull();
    } finally {
      await h.admin("PUT", "/admin/tenants/default/identity-provider", { issuer: idp.issuer, jwksUrl: idp.jwksUrl });
    }
  });

  it("answers 404 outside dual", async () => {
    const res = await exchange({ subject_token: await token({ sub: "up-1" }) }, {}, "own");
    expect(res.status).toBe(404);
  });

  it("links an existing user by a verified address, and refuses an unverified one", async () => {
    const existing = await (
      await h.admin("POST", "/admin/tenants/default/users", { email: "known@example.com" })
    ).json();
    const unverified = await exchange({
      subject_token: await token({ sub: "up-known-a", email: "known@example.com" }),
    });
    expect(unverified.status).toBe(401);
    const verified = await exchange({
      subject_token: await token({ sub: "up-known", email: "known@example.com", email_verified: true }),
    });
    expect((await verified.json()).user.id).toBe(existing.user.id);
  });

  it("exchanges automatically in get-session: exchanged once, upstream cookies expired on this host", async () => {
    const credential = await token({ sub: "up-auto", email: "auto@example.com", email_verified: true });
    const res = await h.request("GET", "/v1/id/get-session", {
      headers: { "x-svc-site-id": "news", cookie: `idp_token=${credential}; idp_refresh=r` },
    });
    expect(res.status).toBe(200);
    const body = await res.json();
    expect(body.exchanged).toBe(true);
    expect(body.user.email).toBe("auto@example.com");
    const cookies = res.headers.getSetCookie();
    for (const name of ["idp_token", "idp_refresh"]) {
      const expired = cookies.find((c) => c.startsWith(`${name}=;`));
      expect(expired).toContain("Max-Age=0");
      expect(expired).not.toContain("Domain=");
    }
    const session = cookies.find((c) => c.startsWith("svc.session_token="))!.split(";")[0]!;
    const next = await (
      await h.request("GET", "/v1/id/get-session", { headers: { "x-svc-site-id": "news", cookie: session } })
    ).json();
    expect(next.user.id).toBe(body.user.id);
    expect(next.exchanged).toBeUndefined();
  });

  it("answers two nulls for a credential that does not verify, then pauses that browser for 5 minutes", async () => {
    const bad = await idp.forged({ sub: "up-pause" });
    const res = await h.request("GET", "/v1/id/get-session", {
      headers: { "x-svc-site-id": "news", cookie: `idp_token=${bad}` },
    });
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ user: null, session: null });
    const pause = res.headers.getSetCookie().find((c) => c.startsWith("svc.exchange_pause="))!;
    expect(pause).toContain("Max-Age=300");
    // Paused: even a good credential is not tried, and the provider is not asked.
    const good = await token({ sub: "up-pause", email: "pause@example.com" });
    const hits = idp.state.jwksHits;
    const paused = await h.request("GET", "/v1/id/get-session", {
      headers: { "x-svc-site-id": "news", cookie: `idp_token=${good}; ${pause.split(";")[0]}` },
    });
    expect(await paused.json()).toEqual({ user: null, session: null });
    expect(idp.state.jwksHits).toBe(hits);
    // Once the browser has dropped the pause cookie (after 5 minutes), it is tried again.
    const later = await h.request("GET", "/v1/id/get-session", {
      headers: { "x-svc-site-id": "news", cookie: `idp_token=${good}` },
    });
    expect((await later.json()).exchanged).toBe(true);
  });

  it("answers no error from get-session when the provider is down", async () => {
    idp.state.mode = "error";
    try {
      const res = await h.request("GET", "/v1/id/get-session", {
        headers: { "x-svc-site-id": "news", cookie: `idp_token=${await token({ sub: "up-new-kid" })}` },
      });
      expect(res.status).toBe(200);
    } finally {
      idp.state.mode = "ok";
    }
  });

  it("keeps one user id across modes: a dual-made session survives the move to svc_only, and email sign-in finds the same user", async () => {
    const credential = await token({ sub: "up-modes", email: "modes@example.com", email_verified: true });
    const exchanged = await exchange({ subject_token: credential });
    const { user } = await exchanged.json();
    const sessionToken = exchanged.headers.get("set-auth-token")!;
    // The site moves from dual to svc_only.
    await h.admin("POST", "/admin/tenants/default/sites/news/deploy", { document: basicDocument() });
    const still = await h.request("GET", "/v1/id/get-session", {
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${sessionToken}` },
    });
    expect((await still.json()).user.id).toBe(user.id);
    // The reader who did not return signs in by email and gets the existing user.
    const mails: string[] = [];
    const original = h.deps.outbox.enqueueIn.bind(h.deps.outbox);
    h.deps.outbox.enqueueIn = async (_tx, mail) => {
      mails.push(mail.text);
      return 0;
    };
    try {
      await h.request("POST", "/v1/id/sign-in/magic-link", {
        headers: { "x-svc-site-id": "news" },
        body: { email: "modes@example.com" },
      });
    } finally {
      h.deps.outbox.enqueueIn = original;
    }
    const linkToken = mails[0]!.match(/token=([A-Za-z0-9_-]+)/)![1]!;
    const signedIn = await h.request("POST", "/v1/id/magic-link/consume", {
      headers: { "x-svc-site-id": "news" },
      body: { token: linkToken },
    });
    expect((await signedIn.json()).user.id).toBe(user.id);
    await h.admin("POST", "/admin/tenants/default/sites/news/deploy", { document: dualDocument() });
  });

  it("answers 503 without Retry-After when the tenant has no identity provider", async () => {
    await h.admin("DELETE", "/admin/tenants/default/identity-provider");
    try {
      const res = await exchange({ subject_token: await token({ sub: "up-1" }) });
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBeNull();
      expect((await res.json()).error.message).toBe("This tenant has no identity provider.");
    } finally {
      await h.admin("PUT", "/admin/tenants/default/identity-provider", { issuer: idp.issuer, jwksUrl: idp.jwksUrl });
    }
  });
});
