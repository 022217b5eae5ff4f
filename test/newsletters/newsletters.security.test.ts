import { describe, expect, it } from "bun:test";
import { storeKinds } from "../helpers/databases";
import { newsletterSuiteWorld, ORIGIN } from "./fixture";

const REFUSED = "That credential was not accepted.";

describe.each(storeKinds)("newsletters, credentials (%s store)", (kind) => {
  const w = newsletterSuiteWorld(kind);

  it("refuses a presented credential that does not hold (401), never reading it as anonymous", async () => {
    const body = { subscribed: [w.ids.weekly], email: "x@example.com" };
    const dead = await w.call("PUT", "subscriptions", { headers: { cookie: "svc.session_token=dead" }, body });
    expect(dead.status).toBe(401);
    const bearer = await w.call("GET", "subscriptions", { headers: { authorization: "Bearer not-a-session" } });
    expect(bearer.status).toBe(401);
    // A JWT at an svc_only site is not an upstream credential: it is read as a session token.
    const jwt = await w.idp.token({ sub: "up-1", email: "up1@example.com" }, { nowMs: w.h.clock.now() });
    expect((await w.call("GET", "subscriptions", { headers: { authorization: `Bearer ${jwt}` } })).status).toBe(401);
    // At an external_only site any bearer is an upstream credential, verified.
    const plain = await w.call("GET", "subscriptions", { site: "outside", headers: { authorization: "Bearer abc" } });
    expect(plain.status).toBe(401);
    expect(await w.h.deps.identityDeps.identity.userByEmail("default", "x@example.com")).toBeUndefined();
  });

  it("answers 503 with Retry-After when the identity provider cannot be reached", async () => {
    const credential = await w.idp.token({ sub: "up-down", email: "down@example.com" }, { nowMs: w.h.clock.now() });
    w.idp.state.mode = "error";
    try {
      const res = await w.call("GET", "subscriptions", {
        site: "outside",
        headers: { authorization: `Bearer ${credential}` },
      });
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).not.toBeNull();
      expect((await res.json()).error.code).toBe("identity_provider_unreachable");
    } finally {
      w.idp.state.mode = "ok";
    }
  });

  it("refuses a forged or expired upstream credential (401, the exchange's codes)", async () => {
    const forged = await w.idp.forged({ sub: "up-forged" });
    const res = await w.call("GET", "subscriptions", { site: "dual", headers: { cookie: `idp_token=${forged}` } });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: { code: "external_credential_invalid", message: REFUSED } });
    const old = await w.idp.token(
      { sub: "up-old" },
      { nowMs: w.h.clock.now(), expiresAtSeconds: Math.floor(w.h.clock.now() / 1000) - 5 },
    );
    const expired = await w.call("GET", "subscriptions", {
      site: "outside",
      headers: { authorization: `Bearer ${old}` },
    });
    expect(expired.status).toBe(401);
    expect((await expired.json()).error.code).toBe("external_credential_expired");
  });

  it("refuses a key of another site (403), an unknown key (401), and a key mixed with a session (401)", async () => {
    const ann = await w.person("ann@example.com");
    const other = await w.call("GET", "subscriptions", { headers: { "x-api-key": w.outsideKey } });
    expect(other.status).toBe(403);
    const unknown = await w.call("GET", "subscriptions", { headers: { "x-api-key": "svc_nope" } });
    expect(unknown.status).toBe(401);
    const mixed = await w.call("PUT", "subscriptions", {
      headers: { "x-api-key": w.key, cookie: ann.cookie },
      body: { subscribed: [], userId: ann.userId },
    });
    expect(mixed.status).toBe(401);
    expect(await w.statuses(await w.call("GET", "subscriptions", { headers: { cookie: ann.cookie } }))).toEqual({
      daily: "unknown",
      weekly: "unknown",
    });
  });

  it("gives CORS only to the site's own origins", async () => {
    const res = await w.call("GET", "subscriptions", { headers: { origin: "https://evil.example" } });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBeNull();
    expect(res.headers.get("vary")).toBe("Origin");
    const own = await w.call("GET", "subscriptions", { mount: "/svc/v1", headers: { origin: ORIGIN } });
    expect(own.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    expect(own.headers.get("access-control-allow-credentials")).toBe("true");
  });

  it("an unsubscribe link minted for one person cannot be altered to act on another", async () => {
    const bea = await w.person("bea@example.com");
    await w.call("PUT", "subscriptions", { headers: { cookie: bea.cookie }, body: { subscribed: [w.ids.weekly] } });
    const url = await w.h.deps.newsletters.unsubscribeTokens.url("https://id.news.example/v1", {
      tenantId: "default",
      siteId: "news",
      userId: bea.userId,
      listId: w.ids.weekly,
      now: w.h.clock.now(),
    });
    const [head, payload, signature] = new URL(url).searchParams.get("token")!.split(".");
    const claims = JSON.parse(Buffer.from(payload!, "base64url").toString());
    claims.l = w.ids.daily;
    const altered = `${head}.${Buffer.from(JSON.stringify(claims)).toString("base64url")}.${signature}`;
    expect((await w.h.request("POST", `/v1/newsletters/unsubscribe?token=${altered}`)).status).toBe(404);
    expect(await w.statuses(await w.call("GET", "subscriptions", { headers: { cookie: bea.cookie } }))).toEqual({
      daily: "unsubscribed",
      weekly: "subscribed",
    });
  });
});
