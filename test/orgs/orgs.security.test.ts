import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { AccessTokens } from "../../src/identity/access-token";
import { storeKinds } from "../helpers/databases";
import { MOUNTS, type OrgWorld, orgWorld, type Person } from "./fixture";

describe.each(storeKinds)("organizations, security (%s store)", (kind) => {
  let w: OrgWorld;
  let owner: Person;
  let org: { id: string; ownerMemberId: string };

  beforeAll(async () => {
    w = await orgWorld(kind);
    owner = await w.person("sec-owner@example.com");
    org = await w.organization("Secure", "secure", owner);
  }, 60_000);
  afterAll(async () => {
    await w.stop();
  }, 60_000);

  const count = async (query: ReturnType<typeof sql>) =>
    Number(rowsOf<{ n: number | string }>(await w.db.db.execute(query))[0]?.n ?? 0);

  it("refuses an API key on every organization route (401), in either header, on both mounts", async () => {
    for (const mount of MOUNTS) {
      const keyed: Record<string, string>[] = [{ authorization: `Bearer ${w.key}` }, { "x-api-key": w.key }];
      for (const headers of keyed) {
        const invite = await w.call(
          null,
          "POST",
          "/org/invite-member",
          { email: "keyed@example.com", role: "member", organizationId: org.id },
          { mount, headers },
        );
        expect(invite.status).toBe(401);
        expect((await invite.json()).error.code).toBe("unauthorized");
        const listed = await w.call(null, "GET", `/org/list-members?organizationId=${org.id}`, undefined, {
          mount,
          headers,
        });
        expect(listed.status).toBe(401);
      }
    }
    expect(await count(sql`select count(*) as n from invitations where email = 'keyed@example.com'`)).toBe(0);
  });

  it("accepts a native client's session bearer like the cookie", async () => {
    const res = await w.call(null, "GET", `/org/list-members?organizationId=${org.id}`, undefined, {
      headers: { authorization: `Bearer ${owner.token}` },
    });
    expect(res.status).toBe(200);
  });

  it("refuses a session on key-only routes (401)", async () => {
    const decide = await w.h.request("POST", "/v1/decide", {
      headers: { "x-svc-site-id": "news", cookie: owner.cookie },
      body: { features: ["team"] },
    });
    expect(decide.status).toBe(401);
    const bearer = await w.h.request("POST", "/v1/decide", {
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${owner.token}` },
      body: { features: ["team"] },
    });
    expect(bearer.status).toBe(401);
    const push = await w.h.request("POST", "/v1/id/upstream/revoke-sessions", {
      headers: { "x-svc-site-id": "news", cookie: owner.cookie },
      body: { subject: "s", cause: "lock" },
    });
    expect(push.status).toBe(401);
  });

  it("accepts an invitation exactly once under concurrency", async () => {
    const inv = await w.invite(owner, org.id, "racer@example.com", "admin");
    const racer = await w.person("racer@example.com");
    const answers = await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        w.call(racer, "POST", "/org/accept-invitation", { invitationId: inv.id }, { mount: MOUNTS[i % 2] }),
      ),
    );
    const statuses = answers.map((r) => r.status).sort();
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 404)).toHaveLength(11);
    expect(
      await count(
        sql`select count(*) as n from memberships where organization_id = ${org.id} and user_id = ${racer.userId}`,
      ),
    ).toBe(1);
  });

  it("leaves exactly one pending invitation when invites for one address race", async () => {
    const answers = await Promise.all(
      Array.from({ length: 8 }, () =>
        w.call(owner, "POST", "/org/invite-member", {
          email: "crowd@example.com",
          role: "member",
          organizationId: org.id,
        }),
      ),
    );
    expect(answers.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect(
      await count(sql`select count(*) as n from invitations where email = 'crowd@example.com' and status = 'pending'`),
    ).toBe(1);
    expect(await count(sql`select count(*) as n from invitations where email = 'crowd@example.com'`)).toBe(8);
  });

  it("removes a member exactly once when removals race", async () => {
    const inv = await w.invite(owner, org.id, "gone@example.com");
    const gone = await w.person("gone@example.com");
    const id = (await (await w.call(gone, "POST", "/org/accept-invitation", { invitationId: inv.id })).json()).member
      .id;
    const answers = await Promise.all(
      Array.from({ length: 6 }, () =>
        w.call(owner, "POST", "/org/remove-member", { memberIdOrEmail: id, organizationId: org.id }),
      ),
    );
    const statuses = answers.map((r) => r.status);
    expect(statuses.filter((s) => s === 200)).toHaveLength(1);
    expect(statuses.filter((s) => s === 404)).toHaveLength(5);
  });

  it("answers 404 for another tenant's organization (never 403), and changes nothing there", async () => {
    expect((await w.h.admin("POST", "/admin/tenants", { id: "other", hosts: ["other.example"] })).status).toBe(201);
    const res = await w.h.admin("POST", "/admin/tenants/other/organizations", {
      name: "Elsewhere",
      slug: "secure",
      ownerEmail: owner.email,
    });
    expect(res.status).toBe(201);
    const foreign = (await res.json()).organization.id as string;
    for (const [path, body] of [
      ["/org/set-active", { organizationId: foreign }],
      ["/org/update", { organizationId: foreign, name: "Hijacked" }],
      ["/org/invite-member", { email: "x@example.com", role: "admin", organizationId: foreign }],
      ["/org/remove-member", { memberIdOrEmail: owner.email, organizationId: foreign }],
    ] as const) {
      const answer = await w.call(owner, "POST", path, body);
      expect(answer.status).toBe(404);
      expect((await answer.json()).error.code).toBe("not_found");
    }
    const listed = await (await w.h.admin("GET", "/admin/tenants/other/organizations")).json();
    expect(listed.organizations[0].name).toBe("Elsewhere");
  });

  it("does not reach a member of another organization through one's own", async () => {
    const other = await w.person("other-owner@example.com");
    const theirs = await w.organization("Theirs", "theirs", other);
    const res = await w.call(owner, "POST", "/org/remove-member", {
      memberIdOrEmail: theirs.ownerMemberId,
      organizationId: org.id,
    });
    expect(res.status).toBe(404);
    const role = await w.call(owner, "POST", "/org/update-member-role", {
      memberId: theirs.ownerMemberId,
      role: "member",
      organizationId: org.id,
    });
    expect(role.status).toBe(404);
  });

  it("builds the invitation link only on a trusted origin: a forged Host is 400 and nothing is stored or mailed", async () => {
    const res = await w.h.app.handle(
      new Request("http://evil.example/v1/org/invite-member", {
        method: "POST",
        headers: { "x-svc-site-id": "news", cookie: owner.cookie, "content-type": "application/json" },
        body: JSON.stringify({ email: "phished@example.com", role: "member", organizationId: org.id }),
      }),
    );
    expect(res.status).toBe(400);
    await w.h.deps.outbox.drain();
    expect(w.smtp.received.some((m) => m.to.includes("phished@example.com"))).toBe(false);
    expect(await count(sql`select count(*) as n from invitations where email = 'phished@example.com'`)).toBe(0);
  });

  it("reads org facts only from a cookie the service signed: a forged one decides as signed out", async () => {
    await w.call(owner, "POST", "/org/set-active", { organizationId: org.id });
    expect(await w.teamOutcome(await w.accessCookie(owner))).toBe("manager");
    const forger = new AccessTokens("another-secret-another-secret-0123456789");
    const { token } = await forger.mint(
      {
        userId: owner.userId,
        sessionId: owner.sessionId,
        tenantId: "default",
        grants: [],
        orgs: { [org.id]: "owner" },
        activeOrg: { id: org.id, slug: "secure" },
      },
      w.h.clock.now(),
      w.h.clock.now() + 600_000,
    );
    expect(await w.teamOutcome(`svc.access=${token}`)).toBe("none");
  });

  it("leaves org facts unavailable on the keyed route (a rule reading them takes onError)", async () => {
    const res = await w.h.request("POST", "/v1/decide", {
      headers: { "x-svc-site-id": "news", authorization: `Bearer ${w.key}` },
      body: { features: ["team"], userId: owner.userId },
    });
    expect(res.status).toBe(200);
    expect((await res.json()).decisions.team.outcome).toBe("broken");
  });

  it("stores no secret in the invitation mail body at rest", async () => {
    await w.h.deps.outbox.drain();
    const rows = rowsOf<{ text: string }>(await w.db.db.execute(sql`select text from mail_outbox`));
    expect(rows.every((r) => !r.text.includes("/org/invitation"))).toBe(true);
  });
});
