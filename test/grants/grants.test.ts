import { beforeAll, describe, expect, it } from "bun:test";
import { basicDocument } from "../fixtures/documents";
import { storeKinds } from "../helpers/databases";
import { seedSite } from "../helpers/harness";
import { mailbox, signIn } from "../helpers/sign-in";
import { siteWorld } from "../helpers/worlds";

const MOUNTS = ["/v1", "/svc/v1"] as const;

describe.each(storeKinds)("GET /v1/grants (%s store)", (kind) => {
  const box = mailbox();
  const w = siteWorld({ document: basicDocument(), kind, mailTransport: box.transport });

  beforeAll(async () => {
    await seedSite(w.h, "upstream-only", basicDocument({ identity: { mode: "external_only" } }));
  }, 60_000);

  const grant = (userId: string, name: string, expiresAt?: string) =>
    w.h.admin("POST", `/admin/tenants/default/users/${userId}/grants`, { grant: name, expiresAt });
  const grants = (mount: string, headers: Record<string, string>, site = "news") =>
    w.h.request("GET", `${mount}/grants`, { headers: { "x-svc-site-id": site, ...headers } });

  describe.each(MOUNTS)("on %s", (mount) => {
    it("lists the signed-in user's own grants by name, with their expiry or null", async () => {
      const reader = await signIn(w.h, box, `holder${mount.length}@example.com`);
      const other = await signIn(w.h, box, `other${mount.length}@example.com`);
      expect((await grant(reader.userId, "premium")).status).toBe(200);
      expect((await grant(reader.userId, "archive", "2027-01-01T00:00:00Z")).status).toBe(200);
      expect((await grant(other.userId, "sport")).status).toBe(200);
      const res = await grants(mount, { cookie: reader.cookie });
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toStartWith("application/json");
      expect(res.headers.get("cache-control")).toBe("private, no-store");
      expect(await res.json()).toEqual({
        grants: [
          { grant: "archive", expiresAt: "2027-01-01T00:00:00.000Z" },
          { grant: "premium", expiresAt: null },
        ],
      });
      // A native client's bearer (the set-auth-token value) reads the same.
      const native = await grants(mount, { authorization: `Bearer ${reader.token}` });
      expect((await native.json()).grants.map((g: { grant: string }) => g.grant)).toEqual(["archive", "premium"]);
      expect(await (await grants(mount, { cookie: other.cookie })).json()).toEqual({
        grants: [{ grant: "sport", expiresAt: null }],
      });
    });

    it("refuses a grant expiry far from the service's clock with 422, granting nothing", async () => {
      const reader = await signIn(w.h, box, `expiry${mount.length}@example.com`);
      for (const expiresAt of ["9999-12-31T23:59:59Z", "1970-01-01T00:00:00Z"]) {
        const res = await grant(reader.userId, "forever", expiresAt);
        expect(res.status).toBe(422);
        expect((await res.json()).error.details).toEqual([
          { path: "/expiresAt", message: "must be within 10 years before and 100 years after the service's clock" },
        ]);
      }
      expect(await (await grants(mount, { cookie: reader.cookie })).json()).toEqual({ grants: [] });
    });

    it("answers an empty list for a user holding nothing", async () => {
      const reader = await signIn(w.h, box, `empty${mount.length}@example.com`);
      const res = await grants(mount, { cookie: reader.cookie });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ grants: [] });
    });

    it("leaves a grant out from the moment it expires, and a revoked one at once", async () => {
      const reader = await signIn(w.h, box, `expiring${mount.length}@example.com`);
      const inAnHour = new Date(w.h.clock.now() + 3_600_000).toISOString();
      await grant(reader.userId, "trial", inAnHour);
      await grant(reader.userId, "premium");
      expect((await (await grants(mount, { cookie: reader.cookie })).json()).grants).toEqual([
        { grant: "premium", expiresAt: null },
        { grant: "trial", expiresAt: inAnHour },
      ]);
      w.h.clock.advance(3_600_000 - 1);
      expect((await (await grants(mount, { cookie: reader.cookie })).json()).grants).toHaveLength(2);
      w.h.clock.advance(1);
      expect((await (await grants(mount, { cookie: reader.cookie })).json()).grants).toEqual([
        { grant: "premium", expiresAt: null },
      ]);
      // Unlike decisions, which read the 15-minute access cookie, this route reads the store.
      expect((await w.h.admin("DELETE", `/admin/tenants/default/users/${reader.userId}/grants/premium`)).status).toBe(
        200,
      );
      expect((await (await grants(mount, { cookie: reader.cookie })).json()).grants).toEqual([]);
    });

    it("answers 401 without a session, for an unknown or signed-out one, and for an access cookie alone", async () => {
      const reader = await signIn(w.h, box, `signedout${mount.length}@example.com`);
      const access = reader.cookie.split("; ").find((c) => c.startsWith("svc.access=")) as string;
      for (const headers of [
        {},
        { cookie: "svc.session_token=not-a-session" },
        { authorization: "Bearer not-a-session" },
        { cookie: access },
      ] as Record<string, string>[]) {
        const res = await grants(mount, headers);
        expect(res.status).toBe(401);
        expect(await res.json()).toMatchObject({
          error: { code: "unauthorized", message: "A signed-in session is required." },
        });
      }
      await w.h.request("POST", `${mount}/id/sign-out`, {
        headers: { "x-svc-site-id": "news", cookie: reader.cookie },
      });
      expect((await grants(mount, { cookie: reader.cookie })).status).toBe(401);
    });

    it("refuses an API key with 401, never reading it as a session, even alongside a session cookie", async () => {
      const reader = await signIn(w.h, box, `keyed${mount.length}@example.com`);
      await grant(reader.userId, "premium");
      for (const headers of [
        { "x-api-key": w.key },
        { authorization: `Bearer ${w.key}` },
        { "x-api-key": w.key, cookie: reader.cookie },
      ] as Record<string, string>[]) {
        const res = await grants(mount, headers);
        expect(res.status).toBe(401);
        expect(await res.json()).toMatchObject({
          error: {
            code: "unauthorized",
            message: "API keys are not accepted on this route; it takes a user session.",
          },
        });
      }
    });

    it("needs the site header (400) and a served site (404)", async () => {
      const reader = await signIn(w.h, box, `sites${mount.length}@example.com`);
      const none = await w.h.request("GET", `${mount}/grants`, { headers: { cookie: reader.cookie } });
      expect(none.status).toBe(400);
      expect((await none.json()).error.code).toBe("bad_request");
      const unknown = await grants(mount, { cookie: reader.cookie }, "no-such-site");
      expect(unknown.status).toBe(404);
      expect((await unknown.json()).error.code).toBe("not_found");
    });

    it("answers at an external_only site too: 401 without a service session, the grants with one", async () => {
      expect((await grants(mount, {}, "upstream-only")).status).toBe(401);
      // Sessions are tenant-wide: one minted on a sibling site in another mode is read here.
      const reader = await signIn(w.h, box, `upstream${mount.length}@example.com`);
      await grant(reader.userId, "premium");
      const res = await grants(mount, { cookie: reader.cookie }, "upstream-only");
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ grants: [{ grant: "premium", expiresAt: null }] });
    });
  });
});
