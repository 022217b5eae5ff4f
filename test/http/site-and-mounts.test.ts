import { beforeAll, describe, expect, it } from "bun:test";
import { basicDocument } from "../fixtures/documents";
import { storeKinds } from "../helpers/databases";
import { seedSite } from "../helpers/harness";
import { siteWorld } from "../helpers/worlds";

describe.each(storeKinds)("site header and mounts (%s store)", (kind) => {
  const w = siteWorld({ document: basicDocument(), kind });

  beforeAll(async () => {
    // A site that exists but was never deployed, and one that is disabled.
    await w.h.admin("POST", "/admin/tenants/default/sites", { id: "draft" });
    await seedSite(w.h, "closed", basicDocument());
    await w.h.admin("POST", "/admin/tenants/default/sites/closed/disable");
  }, 60_000);

  const decide = (headers: Record<string, string>) =>
    w.h.request("POST", "/v1/decide", {
      headers: { authorization: `Bearer ${w.key}`, ...headers },
      body: { features: [] },
    });

  it("answers 400 when the site header is missing", async () => {
    const res = await decide({});
    expect(res.status).toBe(400);
    const body = await res.json();
    expect(body.error.code).toBe("bad_request");
    expect(body.error.message).toContain("x-svc-site-id");
  });

  it("answers 400 when the site header is empty or longer than 128 characters", async () => {
    expect((await decide({ "x-svc-site-id": "" })).status).toBe(400);
    expect((await decide({ "x-svc-site-id": "s".repeat(129) })).status).toBe(400);
  });

  it("accepts a site id of exactly 128 characters as a well-formed header", async () => {
    const res = await w.h.request("GET", "/v1/id/config", { headers: { "x-svc-site-id": "s".repeat(128) } });
    expect(res.status).toBe(404);
  });

  it.each([
    ["unknown", "nowhere"],
    ["not yet deployed", "draft"],
    ["disabled", "closed"],
  ])("answers 404 Unknown site. for a site that is %s", async (_label, site) => {
    const res = await w.h.request("GET", "/v1/id/config", { headers: { "x-svc-site-id": site } });
    expect(res.status).toBe(404);
    expect(await res.json()).toMatchObject({ error: { code: "not_found", message: "Unknown site." } });
  });

  it("serves a site again once it is enabled", async () => {
    await w.h.admin("POST", "/admin/tenants/default/sites/closed/enable");
    const res = await w.h.request("GET", "/v1/id/config", { headers: { "x-svc-site-id": "closed" } });
    expect(res.status).toBe(200);
    await w.h.admin("POST", "/admin/tenants/default/sites/closed/disable");
  });

  it.each(["/v1", "/svc/v1"])(
    "answers the browser-facing config route on %s with CORS * and Vary on the site",
    async (mount) => {
      const res = await w.h.request("GET", `${mount}/id/config`, { headers: { "x-svc-site-id": "news" } });
      expect(res.status).toBe(200);
      expect(res.headers.get("access-control-allow-origin")).toBe("*");
      expect(res.headers.get("vary")).toBe("x-svc-site-id");
      expect(await res.json()).toEqual({
        site: "news",
        identityMode: "svc_only",
        signInEnabled: true,
        logoutUrl: null,
      });
    },
  );

  it("serves key-only routes on /v1 alone", async () => {
    const res = await w.h.request("POST", "/svc/v1/id/upstream/erase", {
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${w.key}` },
      body: { subject: "s" },
    });
    expect(res.status).toBe(404);
  });

  it("refuses an API key as a credential on the browser decide mount", async () => {
    const res = await w.h.request("POST", "/svc/v1/decide", {
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${w.key}` },
      body: { features: [] },
    });
    // A credential of the wrong route group is refused, never reinterpreted (the spec): 401.
    expect(res.status).toBe(401);
    expect((await res.json()).error.code).toBe("unauthorized");
  });
});
