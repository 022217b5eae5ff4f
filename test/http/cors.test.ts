import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { BROWSER_MOUNTS } from "../../src/http/mounts";
import { basicDocument } from "../fixtures/documents";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { type Harness, type Served, seedSite, serveHarness, startHarness } from "../helpers/harness";
import { mailbox, signIn } from "../helpers/sign-in";

const NEWS = "https://news.example";
const SPORT = "https://sport.example";
const EVIL = "https://evil.example";
const ALLOWED_HEADERS = "content-type, x-svc-site-id, x-svc-preview";

/**
 * Paths that take per-site CORS: the browser decide mount, and on both mounts `/id/*` (but the
 * key-only upstream pushes and the `*` config and traits), `/org/*` and `/grants`.
 */
function isPerSiteCorsPath(path: string): boolean {
  if (path === "/svc/v1/decide") return true;
  const mount = BROWSER_MOUNTS.find((m) => path.startsWith(`${m}/`));
  if (mount === undefined) return false;
  const rest = path.slice(mount.length);
  const browserFacing = rest.startsWith("/id/") || rest.startsWith("/org/") || rest === "/grants";
  return browserFacing && !rest.startsWith("/id/upstream/") && rest !== "/id/config" && rest !== "/id/traits";
}

/** A concrete path for a route path with `:param` segments. */
const concrete = (path: string) =>
  path
    .split("/")
    .map((s) => (s.startsWith(":") ? "00000000-0000-4000-8000-000000000000" : s))
    .join("/");

const corsHeaders = (res: Response) => ({
  origin: res.headers.get("access-control-allow-origin"),
  credentials: res.headers.get("access-control-allow-credentials"),
  vary: res.headers.get("vary"),
});

describe.each(storeKinds)("CORS on the browser routes (%s store)", (kind) => {
  let h: Harness;
  let drop: () => Promise<void>;
  let key: string;
  const box = mailbox();
  let reader: Awaited<ReturnType<typeof signIn>>;

  beforeAll(async () => {
    const db = await freshDatabase(kind);
    drop = db.drop;
    h = await startHarness(db, { mailTransport: box.transport });
    ({ key } = await seedSite(h, "news", basicDocument({ allowedOrigins: [NEWS] })));
    await seedSite(h, "sport", basicDocument({ allowedOrigins: [SPORT] }));
    reader = await signIn(h, box, "cors-reader@example.com");
  }, 60_000);
  afterAll(async () => {
    await h.stop();
    await drop();
  }, 60_000);

  /** Every per-site CORS path the app serves, with its methods: org routes are covered as they land. */
  function perSitePaths(): Map<string, string[]> {
    const paths = new Map<string, string[]>();
    for (const r of h.app.routes) {
      if (r.method === "OPTIONS" || !isPerSiteCorsPath(r.path)) continue;
      paths.set(r.path, [...(paths.get(r.path) ?? []), r.method]);
    }
    return paths;
  }

  describe("preflights", () => {
    it("covers the identity, grants, organization and decide routes of both mounts", () => {
      const paths = [...perSitePaths().keys()];
      for (const mount of BROWSER_MOUNTS) {
        for (const p of [
          "/id/sign-in/magic-link",
          "/id/get-session",
          "/id/user-details",
          "/id/sign-out",
          "/grants",
          "/org/set-active",
          "/org/invite-member",
        ]) {
          expect(paths).toContain(`${mount}${p}`);
        }
      }
      expect(paths).toContain("/svc/v1/decide");
    });

    it("answers 204 with the origin, credentials, the path's methods and the allowed headers, on every per-site path", async () => {
      for (const [path, methods] of perSitePaths()) {
        for (const origin of [NEWS, SPORT]) {
          const res = await h.request("OPTIONS", concrete(path), {
            headers: {
              origin,
              "access-control-request-method": methods[0] as string,
              "access-control-request-headers": "content-type, x-svc-site-id, authorization",
            },
          });
          expect({ path, status: res.status }).toEqual({ path, status: 204 });
          expect(corsHeaders(res)).toEqual({ origin, credentials: "true", vary: "Origin" });
          const allowedMethods = res.headers.get("access-control-allow-methods")?.split(", ") ?? [];
          expect(allowedMethods.sort()).toEqual([...methods].sort());
          expect(res.headers.get("access-control-allow-headers")).toBe(ALLOWED_HEADERS);
          expect(res.headers.get("access-control-allow-headers")).not.toContain("authorization");
          expect(res.headers.get("access-control-max-age")).toBe("600");
        }
      }
    });

    it("refuses a preflight from an origin no site of the tenant allows (403, no CORS headers), or with no origin", async () => {
      for (const [path, methods] of perSitePaths()) {
        for (const headers of [
          { origin: EVIL, "access-control-request-method": methods[0] as string },
          { origin: "null", "access-control-request-method": methods[0] as string },
          { origin: `${NEWS}.evil.example` },
          {},
        ] as Record<string, string>[]) {
          const res = await h.request("OPTIONS", concrete(path), { headers });
          expect({ path, status: res.status }).toEqual({ path, status: 403 });
          expect(corsHeaders(res)).toEqual({ origin: null, credentials: null, vary: "Origin" });
          expect(res.headers.get("access-control-allow-methods")).toBeNull();
          expect((await res.json()).error.code).toBe("forbidden");
        }
      }
    });

    it("answers config and traits' preflights with `*` and no credentials, for any origin", async () => {
      for (const mount of BROWSER_MOUNTS) {
        for (const path of ["/id/config", "/id/traits"]) {
          const res = await h.request("OPTIONS", `${mount}${path}`, {
            headers: { origin: EVIL, "access-control-request-method": "GET" },
          });
          expect(res.status).toBe(204);
          expect(res.headers.get("access-control-allow-origin")).toBe("*");
          expect(res.headers.get("access-control-allow-credentials")).toBeNull();
          expect(res.headers.get("access-control-allow-methods")).toBe("GET");
          expect(res.headers.get("access-control-allow-headers")).toBe(ALLOWED_HEADERS);
        }
      }
    });

    it("has no preflight on key-only routes, the keyed decide, the operator API or the forward navigation", async () => {
      for (const path of [
        "/v1/id/upstream/revoke-sessions",
        "/v1/decide",
        "/admin/tenants",
        "/v1/decide/forward",
        "/svc/v1/decide/forward",
      ]) {
        const res = await h.request("OPTIONS", path, {
          headers: { origin: NEWS, "access-control-request-method": "POST" },
        });
        expect({ path, status: res.status }).toEqual({ path, status: 404 });
        expect(corsHeaders(res)).toEqual({ origin: null, credentials: null, vary: null });
      }
    });
  });

  describe.each(BROWSER_MOUNTS)("actual requests on %s", (mount) => {
    const get = (path: string, headers: Record<string, string>) =>
      h.request("GET", `${mount}${path}`, { headers: { "x-svc-site-id": "news", ...headers } });

    it("gives an allowed origin its own name and credentials, and keeps the cookies", async () => {
      const res = await get("/id/get-session", { origin: NEWS, cookie: reader.cookie });
      expect(res.status).toBe(200);
      expect(corsHeaders(res)).toEqual({ origin: NEWS, credentials: "true", vary: "Origin" });
      expect(res.headers.getSetCookie().some((c) => c.startsWith("svc.access="))).toBe(true);
      expect((await res.json()).user.id).toBe(reader.userId);
      // The session token is for native clients: never exposed to cross-origin scripts; the rate
      // window's fields and Retry-After are.
      expect(res.headers.get("access-control-expose-headers")).toBe("RateLimit, RateLimit-Policy, Retry-After");
      const grants = await get("/grants", { origin: NEWS, cookie: reader.cookie });
      expect(grants.status).toBe(200);
      expect(corsHeaders(grants)).toEqual({ origin: NEWS, credentials: "true", vary: "Origin" });
    });

    it("holds the request to its own site's list: an origin only another site allows gets no CORS headers", async () => {
      const res = await get("/id/get-session", { origin: SPORT, cookie: reader.cookie });
      expect(res.status).toBe(200);
      expect(corsHeaders(res)).toEqual({ origin: null, credentials: null, vary: "Origin" });
      const own = await h.request("GET", `${mount}/id/get-session`, {
        headers: { "x-svc-site-id": "sport", origin: SPORT, cookie: reader.cookie },
      });
      expect(corsHeaders(own)).toEqual({ origin: SPORT, credentials: "true", vary: "Origin" });
    });

    it("answers another origin as usual but with no CORS headers, so the browser keeps the answer from the page", async () => {
      const res = await get("/id/get-session", { origin: EVIL, cookie: reader.cookie });
      expect(res.status).toBe(200);
      expect(corsHeaders(res)).toEqual({ origin: null, credentials: null, vary: "Origin" });
      const noSite = await h.request("GET", `${mount}/id/get-session`, { headers: { origin: NEWS } });
      expect(noSite.status).toBe(400);
      expect(corsHeaders(noSite)).toEqual({ origin: null, credentials: null, vary: "Origin" });
    });

    it("lets a same-origin call with no Origin header through (the magic-link interstitial's POST)", async () => {
      const headers = { "x-svc-site-id": "news" };
      const mailed = await h.request("POST", `${mount}/id/sign-in/magic-link`, {
        headers,
        body: { email: `same-origin${mount.length}@example.com` },
      });
      expect(mailed.status).toBe(200);
      expect(corsHeaders(mailed)).toEqual({ origin: null, credentials: null, vary: "Origin" });
      await h.deps.outbox.drain();
      const consumed = await h.request("POST", `${mount}/id/magic-link/consume`, {
        headers,
        body: { token: box.lastToken() },
      });
      expect(consumed.status).toBe(200);
      expect(corsHeaders(consumed)).toEqual({ origin: null, credentials: null, vary: "Origin" });
    });

    it("puts the CORS headers on errors too, so the page can read them: 401 (grants, org), 422, malformed JSON", async () => {
      const unauthorized = await get("/grants", { origin: NEWS });
      expect(unauthorized.status).toBe(401);
      expect(corsHeaders(unauthorized)).toEqual({ origin: NEWS, credentials: "true", vary: "Origin" });
      const invalid = await h.request("PATCH", `${mount}/id/user-details`, {
        headers: { "x-svc-site-id": "news", origin: NEWS, cookie: reader.cookie },
        body: { name: 7 },
      });
      expect(invalid.status).toBe(422);
      expect(corsHeaders(invalid)).toEqual({ origin: NEWS, credentials: "true", vary: "Origin" });
      const signedOut = await h.request("POST", `${mount}/org/set-active`, {
        headers: { "x-svc-site-id": "news", origin: NEWS },
        body: { organizationId: null },
      });
      expect(signedOut.status).toBe(401);
      expect(corsHeaders(signedOut)).toEqual({ origin: NEWS, credentials: "true", vary: "Origin" });
      const malformed = await h.request("POST", `${mount}/id/sign-in/magic-link`, {
        headers: { "x-svc-site-id": "news", origin: NEWS },
        rawBody: "{not json",
      });
      expect(malformed.status).toBe(400);
      expect(corsHeaders(malformed)).toEqual({ origin: NEWS, credentials: "true", vary: "Origin" });
    });

    it("answers config and traits with `*`, no credentials, varying on the site header rather than Origin", async () => {
      for (const path of ["/id/config", "/id/traits"]) {
        for (const origin of [NEWS, EVIL]) {
          const res = await get(path, { origin });
          expect(res.status).toBe(200);
          expect(corsHeaders(res)).toEqual({ origin: "*", credentials: null, vary: "x-svc-site-id" });
        }
      }
    });

    it("sends no CORS headers with the forward navigation", async () => {
      const res = await h.request("GET", `${mount}/decide/forward?feature=paywall&site=news`, {
        headers: { origin: NEWS },
      });
      expect(res.status).toBe(404);
      expect(corsHeaders(res)).toEqual({ origin: null, credentials: null, vary: null });
    });
  });

  describe("the browser decide mount", () => {
    const decide = (headers: Record<string, string>) =>
      h.request("POST", "/svc/v1/decide", {
        headers: { "x-svc-site-id": "news", ...headers },
        body: { features: ["teaser"], deviceId: "cors-device" },
      });

    it("answers an allowed origin with its CORS headers, and refuses another or none with 403 and no CORS headers", async () => {
      const ok = await decide({ origin: NEWS });
      expect(ok.status).toBe(200);
      expect(corsHeaders(ok)).toEqual({ origin: NEWS, credentials: "true", vary: "Origin" });
      for (const headers of [{ origin: EVIL }, { origin: SPORT }, {}] as Record<string, string>[]) {
        const refused = await decide(headers);
        expect(refused.status).toBe(403);
        expect(corsHeaders(refused)).toEqual({ origin: null, credentials: null, vary: "Origin" });
      }
    });
  });

  describe("credentials on the wrong route group", () => {
    it("refuses a session (cookie or bearer) on key-only routes with 401, and gives them no CORS headers", async () => {
      for (const credential of [{ cookie: reader.cookie }, { authorization: `Bearer ${reader.token}` }] as Record<
        string,
        string
      >[]) {
        const push = await h.request("POST", "/v1/id/upstream/revoke-sessions", {
          headers: { "x-svc-site-id": "news", origin: NEWS, ...credential },
          body: { subject: "sub-1", cause: "lock" },
        });
        expect(push.status).toBe(401);
        expect(corsHeaders(push)).toEqual({ origin: null, credentials: null, vary: null });
        const keyed = await h.request("POST", "/v1/decide", {
          headers: { "x-svc-site-id": "news", ...credential },
          body: { features: ["teaser"], deviceId: "d" },
        });
        expect(keyed.status).toBe(401);
      }
    });

    it("refuses an API key on the session routes with 401, CORS headers included for an allowed origin", async () => {
      const res = await h.request("GET", "/v1/grants", {
        headers: { "x-svc-site-id": "news", origin: NEWS, "x-api-key": key },
      });
      expect(res.status).toBe(401);
      expect(corsHeaders(res)).toEqual({ origin: NEWS, credentials: "true", vary: "Origin" });
    });
  });

  describe("over a real socket", () => {
    let base: string;
    let server: Served | undefined;

    beforeAll(() => {
      server = serveHarness(h);
      base = server.base;
    });
    afterAll(async () => {
      await server?.stop();
    });

    it("answers a preflight, then the credentialed request, as a browser sees them", async () => {
      for (const mount of BROWSER_MOUNTS) {
        const preflight = await fetch(`${base}${mount}/id/user-details`, {
          method: "OPTIONS",
          headers: {
            origin: NEWS,
            "access-control-request-method": "PATCH",
            "access-control-request-headers": "content-type, x-svc-site-id",
          },
        });
        expect(preflight.status).toBe(204);
        expect(preflight.headers.get("access-control-allow-origin")).toBe(NEWS);
        expect(preflight.headers.get("access-control-allow-credentials")).toBe("true");
        expect(preflight.headers.get("access-control-allow-methods")).toBe("PATCH");
        expect(preflight.headers.get("access-control-allow-headers")).toBe(ALLOWED_HEADERS);
        expect(preflight.headers.get("vary")).toBe("Origin");
        const res = await fetch(`${base}${mount}/id/user-details`, {
          method: "PATCH",
          headers: { origin: NEWS, "x-svc-site-id": "news", "content-type": "application/json", cookie: reader.cookie },
          body: JSON.stringify({ name: "Cross Origin" }),
        });
        expect(res.status).toBe(200);
        expect(res.headers.get("access-control-allow-origin")).toBe(NEWS);
        expect(res.headers.get("access-control-allow-credentials")).toBe("true");
        expect(res.headers.get("vary")).toBe("Origin");
        expect((await res.json()).name).toBe("Cross Origin");
        const refused = await fetch(`${base}${mount}/grants`, { method: "OPTIONS", headers: { origin: EVIL } });
        expect(refused.status).toBe(403);
        expect(refused.headers.get("access-control-allow-origin")).toBeNull();
        await refused.text();
      }
      const config = await fetch(`${base}/v1/id/config`, { headers: { origin: EVIL, "x-svc-site-id": "news" } });
      expect(config.headers.get("access-control-allow-origin")).toBe("*");
      expect(config.headers.get("vary")).toBe("x-svc-site-id");
      await config.text();
    });
  });
});
