import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { basicDocument, dualDocument } from "../fixtures/documents";
import { freshDatabase, type StoreKind, storeKinds } from "../helpers/databases";
import { type FakeIdp, startFakeIdp } from "../helpers/fake-idp";
import { type Harness, OPERATOR_TOKEN, seedSite, startHarness } from "../helpers/harness";
import { mailbox, signIn } from "../helpers/sign-in";

const NOT_OBJECTS = ["0", "[]", '"s"', "null", "true"];

const cookieValue = (res: Response, name: string) =>
  res.headers
    .getSetCookie()
    .find((c) => c.startsWith(`${name}=`))
    ?.split(";")[0];

describe.each(storeKinds)(
  "identity conformance: shapes, and re-exchange after revoke (%s store)",
  (kind: StoreKind) => {
    let h: Harness;
    let idp: FakeIdp;
    let db: Awaited<ReturnType<typeof freshDatabase>>;
    let key: string;
    const box = mailbox();

    beforeAll(async () => {
      idp = await startFakeIdp();
      db = await freshDatabase(kind);
      h = await startHarness(db, { mailTransport: box.transport });
      await seedSite(h, "news", basicDocument());
      ({ key } = await seedSite(h, "dual", dualDocument()));
      await h.admin("PUT", "/admin/tenants/default/identity-provider", { issuer: idp.issuer, jwksUrl: idp.jwksUrl });
    }, 60_000);
    afterAll(async () => {
      await h.stop();
      await idp.stop();
      await db.drop();
    }, 60_000);

    const raw = (method: string, path: string, body: string, headers: Record<string, string>) =>
      h.request(method, path, { headers, rawBody: body });

    it("answers PATCH /v1/id/user-details with the user itself, including userTraits", async () => {
      const s = await signIn(h, box, "shape@example.com");
      const res = await h.request("PATCH", "/v1/id/user-details", {
        headers: { "x-svc-site-id": "news", cookie: s.cookie },
        body: { name: "Shape", userTraits: { colour: "blue" } },
      });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({
        id: s.userId,
        email: "shape@example.com",
        emailVerified: true,
        name: "Shape",
        firstName: null,
        lastName: null,
        image: null,
        userTraits: { colour: "blue" },
      });
    });

    it("refuses a user-details body that is not an object with 422, changing nothing", async () => {
      const s = await signIn(h, box, "not-object@example.com");
      const headers = { "x-svc-site-id": "news", cookie: s.cookie, "content-type": "application/json" };
      await h.request("PATCH", "/v1/id/user-details", { headers, body: { name: "Kept", userTraits: { keep: 1 } } });
      for (const body of NOT_OBJECTS) {
        const res = await raw("PATCH", "/v1/id/user-details", body, headers);
        expect(res.status).toBe(422);
        const answer = await res.json();
        expect(answer.error.code).toBe("validation_failed");
        expect(answer.error.details).toEqual([expect.objectContaining({ path: "/" })]);
      }
      const user = await h.deps.users.userById("default", s.userId);
      expect(user?.name).toBe("Kept");
      expect(user?.traits).toEqual({ keep: 1 });
    });

    it("refuses a body that is not an object on every identity route with an object body", async () => {
      const site = { "x-svc-site-id": "news", "content-type": "application/json" };
      const keyed = { "x-svc-site-id": "dual", "x-api-key": key, "content-type": "application/json" };
      const routes: [string, string, Record<string, string>][] = [
        ["POST", "/v1/id/sign-in/magic-link", site],
        ["POST", "/svc/v1/id/magic-link/consume", site],
        ["POST", "/v1/id/session/exchange", { ...site, "x-svc-site-id": "dual" }],
        ["POST", "/v1/id/upstream/revoke-sessions", keyed],
        ["POST", "/v1/id/upstream/change-identifier", keyed],
        ["POST", "/v1/id/upstream/change-subject", keyed],
        ["POST", "/v1/id/upstream/erase", keyed],
      ];
      for (const [method, path, headers] of routes) {
        for (const body of ["0", "[]", '"s"', "true"]) {
          const res = await raw(method, path, body, headers);
          expect({ path, body, status: res.status }).toEqual({ path, body, status: 422 });
          const details = (await res.json()).error.details as { path: string }[];
          // The whole body is named, not a member the body was silently turned into an object for.
          expect(details.map((d) => d.path)).toEqual(["/"]);
        }
      }
    });

    it("refuses a non-object body on the admin routes too (a body whose members are all optional)", async () => {
      for (const body of ["0", "[]", '"s"']) {
        const res = await h.request("POST", "/admin/tenants/default/sites/news/preview-tokens", {
          headers: { authorization: `Bearer ${OPERATOR_TOKEN}`, "content-type": "application/json" },
          rawBody: body,
        });
        expect(res.status).toBe(422);
        expect((await res.json()).error.code).toBe("validation_failed");
      }
    });

    describe("in dual, after revoke-sessions", () => {
      const credentialFor = (sub: string) =>
        idp.token({ sub, email: `${sub}@example.com`, email_verified: true }, { nowMs: h.clock.now() });
      const getSession = (cookie: string) =>
        h.request("GET", "/v1/id/get-session", { headers: { "x-svc-site-id": "dual", cookie } });
      const revoke = (subject: string) =>
        h.request("POST", "/v1/id/upstream/revoke-sessions", {
          headers: { "x-svc-site-id": "dual", "x-api-key": key },
          body: { subject, cause: "lock" },
        });

      /** A browser signed in by the automatic exchange: its service cookies, still holding the upstream one. */
      async function browser(sub: string) {
        const upstream = `idp_token=${await credentialFor(sub)}`;
        const first = await getSession(upstream);
        const body = await first.json();
        expect(body.exchanged).toBe(true);
        const service = [cookieValue(first, "svc.session_token"), cookieValue(first, "svc.access")].join("; ");
        return { upstream, service, userId: body.user.id as string, sessionId: body.session.id as string };
      }

      it("exchanges a still-valid upstream credential on the very next get-session", async () => {
        const b = await browser("sub-revoked-now");
        expect((await (await revoke("sub-revoked-now")).json()).applied).toBe(true);
        // The browser still sends its (now stale) session cookie next to a fresh upstream credential.
        const next = await getSession(`${b.service}; ${b.upstream}`);
        expect(next.status).toBe(200);
        const body = await next.json();
        expect(body.exchanged).toBe(true);
        expect(body.user.id).toBe(b.userId);
        expect(body.session.id).not.toBe(b.sessionId);
        const fresh = cookieValue(next, "svc.session_token")!;
        expect(fresh).not.toBe(b.service.split("; ")[0]);
        // One Set-Cookie per name: the new session's, never an expiry of the same name after it.
        const names = next.headers.getSetCookie().map((c) => c.slice(0, c.indexOf("=")));
        expect(new Set(names).size).toBe(names.length);
        expect(next.headers.getSetCookie().find((c) => c.startsWith("idp_token=;"))).toContain("Max-Age=0");
        // And the new session is live.
        expect((await (await getSession(fresh)).json()).session.id).toBe(body.session.id);
      });

      it("respects the 5-minute pause, and expires the stale cookies when it does not exchange", async () => {
        const b = await browser("sub-paused");
        await revoke("sub-paused");
        const paused = await getSession(`${b.service}; ${b.upstream}; svc.exchange_pause=1`);
        expect(await paused.json()).toEqual({ user: null, session: null });
        const expired = paused.headers.getSetCookie();
        for (const name of ["svc.session_token", "svc.access"]) {
          expect(expired.find((c) => c.startsWith(`${name}=;`))).toContain("Max-Age=0");
        }
        // A credential that does not verify: signed out, stale cookies expired, and the pause set.
        const forged = await getSession(`${b.service}; idp_token=${await idp.forged({ sub: "sub-paused" })}`);
        expect(await forged.json()).toEqual({ user: null, session: null });
        const cookies = forged.headers.getSetCookie();
        expect(cookies.find((c) => c.startsWith("svc.session_token=;"))).toContain("Max-Age=0");
        expect(cookies.find((c) => c.startsWith("svc.exchange_pause="))).toContain("Max-Age=300");
      });

      it("does not exchange outside dual: a stale session at an svc_only site is just signed out", async () => {
        const s = await signIn(h, box, "svc-only@example.com");
        await h.request("POST", "/v1/id/sign-out", {
          headers: { "x-svc-site-id": "news", cookie: s.cookie, "content-length": "0" },
        });
        const res = await h.request("GET", "/v1/id/get-session", {
          headers: { "x-svc-site-id": "news", cookie: `${s.cookie}; idp_token=${await credentialFor("sub-x")}` },
        });
        expect(await res.json()).toEqual({ user: null, session: null });
        expect(res.headers.getSetCookie().some((c) => c.startsWith("svc.session_token=;"))).toBe(true);
      });
    });
  },
);
