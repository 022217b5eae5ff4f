import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type Harness, startHarness } from "../helpers/harness";

describe.each(storeKinds)("per-tenant outside-service settings (%s store)", (kind) => {
  let db: Awaited<ReturnType<typeof freshDatabase>>;
  let h: Harness;
  beforeAll(async () => {
    db = await freshDatabase(kind);
    h = await startHarness(db, { serviceEnv: { STRIPE_TEST_KEY: "sk_test_from_env" } });
    expect((await h.admin("POST", "/admin/tenants", { id: "default", default: true })).status).toBe(201);
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await db.drop();
  }, 60_000);

  it("stores settings sealed, lists member names only, and resolves them for the service", async () => {
    const put = await h.admin("PUT", "/admin/tenants/default/services/recombee", {
      databaseId: "news-db",
      token: "recombee-secret-token",
      baseUri: "http://127.0.0.1:4020",
    });
    expect(put.status).toBe(200);
    expect(await put.json()).toEqual({
      tenant: "default",
      service: "recombee",
      set: ["baseUri", "databaseId", "token"],
    });

    const listed = await (await h.admin("GET", "/admin/tenants/default/services")).json();
    expect(listed).toEqual({
      tenant: "default",
      services: [{ service: "recombee", set: ["baseUri", "databaseId", "token"] }],
    });
    expect(JSON.stringify(listed)).not.toContain("recombee-secret-token");

    const stored = rowsOf<{ config: string }>(await db.db.execute(sql`select config from tenant_services`));
    expect(stored[0]?.config.startsWith("sealed:v1:")).toBe(true);
    expect(stored[0]?.config).not.toContain("recombee-secret-token");

    const resolved = await h.deps.services.resolve("default", "recombee");
    expect(resolved).toEqual({
      configured: true,
      config: { databaseId: "news-db", token: "recombee-secret-token", baseUri: "http://127.0.0.1:4020" },
    });
  });

  it("resolves env: references from the server's environment, and reports an unset one as not configured", async () => {
    await h.admin("PUT", "/admin/tenants/default/services/stripe", {
      secretKey: "env:STRIPE_TEST_KEY",
      webhookSecret: "env:STRIPE_UNSET_SECRET",
    });
    const resolved = await h.deps.services.resolve("default", "stripe");
    expect(resolved).toEqual({ configured: false, reason: "stripe.webhookSecret names an unset variable" });
    await h.admin("PUT", "/admin/tenants/default/services/stripe", {
      secretKey: "env:STRIPE_TEST_KEY",
      webhookSecret: "whsec_plain",
    });
    const again = await h.deps.services.resolve("default", "stripe");
    expect(again).toEqual({
      configured: true,
      config: { secretKey: "sk_test_from_env", webhookSecret: "whsec_plain" },
    });
  });

  it("answers 422 with the failing paths for bad settings, and stores nothing", async () => {
    const cases: [unknown, string][] = [
      [{ token: "t" }, "/databaseId"],
      // A stray member is named by its parent only: its own name may be data.
      [{ databaseId: "d", token: "t", "4111111111111111": "card" }, "/"],
      [{ databaseId: "d", token: "t", baseUri: "ftp://127.0.0.1" }, "/baseUri"],
      [{ databaseId: "d", token: "env:lower-case" }, "/token"],
      [{ databaseId: "d", token: "t", baseUri: "http://user:pw@127.0.0.1" }, "/baseUri"],
      [[], "/"],
    ];
    for (const [body, path] of cases) {
      const res = await h.admin("PUT", "/admin/tenants/default/services/recombee", body);
      expect(res.status).toBe(422);
      const text = await res.text();
      expect(text).not.toContain("4111111111111111");
      const error = JSON.parse(text).error;
      expect(error.code).toBe("validation_failed");
      expect(error.details.map((d: { path: string }) => d.path)).toContain(path);
    }
    const kept = await h.deps.services.resolve("default", "recombee");
    expect(kept).toMatchObject({ configured: true, config: { databaseId: "news-db" } });
  });

  it("answers 404 for an unknown service or tenant, 401 without the operator token", async () => {
    expect((await h.admin("PUT", "/admin/tenants/default/services/paypal", { a: "b" })).status).toBe(404);
    expect((await h.admin("GET", "/admin/tenants/nobody/services")).status).toBe(404);
    expect((await h.admin("DELETE", "/admin/tenants/default/services/listmonk")).status).toBe(404);
    const anonymous = await h.request("GET", "/admin/tenants/default/services");
    expect(anonymous.status).toBe(401);
  });

  it("clears a service's settings", async () => {
    expect((await h.admin("DELETE", "/admin/tenants/default/services/recombee")).status).toBe(200);
    expect(await h.deps.services.resolve("default", "recombee")).toEqual({
      configured: false,
      reason: "recombee is not configured for this tenant",
    });
  });
});
