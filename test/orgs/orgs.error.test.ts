import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { storeKinds } from "../helpers/databases";
import { MOUNTS, type OrgWorld, orgWorld, type Person } from "./fixture";

const UNKNOWN_ID = "00000000-0000-4000-8000-000000000000";

describe.each(storeKinds)("organizations, errors (%s store)", (kind) => {
  let w: OrgWorld;
  let owner: Person;
  let admin: Person;
  let member: Person;
  let org: { id: string; ownerMemberId: string };
  let adminMemberId: string;
  let memberMemberId: string;

  beforeAll(async () => {
    w = await orgWorld(kind, { SVC_INVITATION_TTL_DAYS: "3" });
    owner = await w.person("owner@example.com");
    org = await w.organization("Errors", "errors", owner);
    admin = await w.person("admin@example.com");
    member = await w.person("member@example.com");
    for (const [p, role] of [
      [admin, "admin"],
      [member, "member"],
    ] as const) {
      const inv = await w.invite(owner, org.id, p.email, role);
      const res = await w.call(p, "POST", "/org/accept-invitation", { invitationId: inv.id });
      const id = (await res.json()).member.id as string;
      if (role === "admin") adminMemberId = id;
      else memberMemberId = id;
    }
  }, 60_000);
  afterAll(async () => {
    await w.stop();
  }, 60_000);

  const invitations = async () =>
    (await (await w.call(owner, "GET", `/org/list-invitations?organizationId=${org.id}`)).json()).invitations;
  const members = async () =>
    (await (await w.call(owner, "GET", `/org/list-members?organizationId=${org.id}`)).json()).members;
  const expectError = async (res: Response, status: number, code: string) => {
    expect(res.status).toBe(status);
    expect((await res.json()).error.code).toBe(code);
  };

  it("takes the invitation lifetime from SVC_INVITATION_TTL_DAYS", async () => {
    const inv = await w.invite(owner, org.id, "ttl@example.com");
    expect(Date.parse(inv.expiresAt)).toBe(w.h.clock.now() + 3 * 86_400_000);
  });

  it("answers 401 without a session, on both mounts", async () => {
    for (const mount of MOUNTS) {
      const res = await w.call(null, "POST", "/org/update", { organizationId: org.id, name: "x" }, { mount });
      await expectError(res, 401, "unauthorized");
      const stale = await w.call(
        { ...owner, cookie: "svc.session_token=not-a-session" },
        "POST",
        "/org/set-active",
        { organizationId: null },
        { mount },
      );
      await expectError(stale, 401, "unauthorized");
    }
  });

  it("answers 400 when no organizationId is given and none is active", async () => {
    for (const mount of MOUNTS) {
      await expectError(await w.call(owner, "POST", "/org/update", { name: "x" }, { mount }), 400, "bad_request");
      await expectError(
        await w.call(owner, "POST", "/org/invite-member", { email: "a@example.com", role: "member" }, { mount }),
        400,
        "bad_request",
      );
      await expectError(
        await w.call(owner, "POST", "/org/remove-member", { memberIdOrEmail: "member@example.com" }, { mount }),
        400,
        "bad_request",
      );
      await expectError(
        await w.call(owner, "POST", "/org/update-member-role", { memberId: memberMemberId, role: "admin" }, { mount }),
        400,
        "bad_request",
      );
    }
  });

  it("answers 404 for an unknown organization, member or invitation", async () => {
    await expectError(await w.call(owner, "POST", "/org/set-active", { organizationId: UNKNOWN_ID }), 404, "not_found");
    await expectError(
      await w.call(owner, "POST", "/org/update-member-role", {
        memberId: UNKNOWN_ID,
        role: "admin",
        organizationId: org.id,
      }),
      404,
      "not_found",
    );
    for (const memberIdOrEmail of [UNKNOWN_ID, "nobody@example.com", "not-an-id"]) {
      await expectError(
        await w.call(owner, "POST", "/org/remove-member", { memberIdOrEmail, organizationId: org.id }),
        404,
        "not_found",
      );
    }
    for (const route of ["/org/cancel-invitation", "/org/accept-invitation", "/org/reject-invitation"]) {
      await expectError(await w.call(owner, "POST", route, { invitationId: UNKNOWN_ID }), 404, "not_found");
    }
  });

  it("answers 404 for an organization the caller holds no seat in (its existence is not revealed)", async () => {
    const stranger = await w.person("stranger@example.com");
    for (const [method, path, body] of [
      ["POST", "/org/set-active", { organizationId: org.id }],
      ["POST", "/org/update", { organizationId: org.id, name: "Mine" }],
      ["GET", `/org/list-members?organizationId=${org.id}`, undefined],
    ] as const) {
      await expectError(await w.call(stranger, method, path, body), 404, "not_found");
    }
  });

  it("answers 422 for a bad email, an overlong one, a role outside admin/member and a non-uuid id; nothing changes", async () => {
    const before = await invitations();
    const bad = [
      { email: "not-an-email", role: "member" },
      { email: `${"a".repeat(250)}@example.com`, role: "member" },
      { email: "ok@example.com", role: "owner" },
      { email: "ok@example.com", role: "superuser" },
      { email: "ok@example.com", role: "member", organizationId: "not-a-uuid" },
      { role: "member", organizationId: org.id },
    ];
    for (const mount of MOUNTS) {
      for (const body of bad) {
        await expectError(await w.call(owner, "POST", "/org/invite-member", body, { mount }), 422, "validation_failed");
      }
      for (const role of ["owner", "superuser", ""]) {
        await expectError(
          await w.call(
            owner,
            "POST",
            "/org/update-member-role",
            { memberId: memberMemberId, role, organizationId: org.id },
            { mount },
          ),
          422,
          "validation_failed",
        );
      }
      await expectError(
        await w.call(
          owner,
          "POST",
          "/org/update-member-role",
          { memberId: "x", role: "admin", organizationId: org.id },
          { mount },
        ),
        422,
        "validation_failed",
      );
      await expectError(
        await w.call(owner, "POST", "/org/set-active", { organizationId: "nope" }, { mount }),
        422,
        "validation_failed",
      );
      await expectError(await w.call(owner, "POST", "/org/set-active", {}, { mount }), 422, "validation_failed");
      await expectError(
        await w.call(owner, "POST", "/org/update", { organizationId: org.id, name: "" }, { mount }),
        422,
        "validation_failed",
      );
      await expectError(
        await w.call(owner, "POST", "/org/remove-member", { organizationId: org.id }, { mount }),
        422,
        "validation_failed",
      );
      await expectError(await w.call(owner, "POST", "/org/update", [], { mount }), 422, "validation_failed");
    }
    expect(await invitations()).toEqual(before);
    expect((await members()).find((m: { id: string }) => m.id === memberMemberId).role).toBe("member");
  });

  it("refuses a retry of remove-member after success (404)", async () => {
    const p = await w.person("twice-removed@example.com");
    const inv = await w.invite(owner, org.id, p.email);
    const id = (await (await w.call(p, "POST", "/org/accept-invitation", { invitationId: inv.id })).json()).member.id;
    const body = { memberIdOrEmail: id, organizationId: org.id };
    expect((await w.call(owner, "POST", "/org/remove-member", body)).status).toBe(200);
    await expectError(await w.call(owner, "POST", "/org/remove-member", body), 404, "not_found");
  });

  it("refuses an accepted invitation a second time (404), and one addressed to someone else (403)", async () => {
    const inv = await w.invite(owner, org.id, "once@example.com");
    const other = await w.person("other@example.com");
    await expectError(
      await w.call(other, "POST", "/org/accept-invitation", { invitationId: inv.id }),
      403,
      "forbidden",
    );
    await expectError(
      await w.call(other, "POST", "/org/reject-invitation", { invitationId: inv.id }),
      403,
      "forbidden",
    );
    const once = await w.person("once@example.com");
    expect((await w.call(once, "POST", "/org/accept-invitation", { invitationId: inv.id })).status).toBe(200);
    await expectError(await w.call(once, "POST", "/org/accept-invitation", { invitationId: inv.id }), 404, "not_found");
    await expectError(await w.call(once, "POST", "/org/reject-invitation", { invitationId: inv.id }), 404, "not_found");
    await expectError(
      await w.call(owner, "POST", "/org/cancel-invitation", { invitationId: inv.id }),
      404,
      "not_found",
    );
  });

  it("refuses an invitee whose address is not verified (403)", async () => {
    const inv = await w.invite(owner, org.id, "unverified@example.com");
    const p = await w.person("unverified@example.com");
    await w.h.deps.identityDeps.identity.changeEmail(p.userId, p.email, false, new Date(w.h.clock.now()));
    await expectError(await w.call(p, "POST", "/org/accept-invitation", { invitationId: inv.id }), 403, "forbidden");
  });

  it("refuses to invite an address that already holds a seat (400)", async () => {
    await expectError(
      await w.call(owner, "POST", "/org/invite-member", {
        email: "MEMBER@example.com",
        role: "admin",
        organizationId: org.id,
      }),
      400,
      "bad_request",
    );
  });

  it("lets members only set-active, list members and leave: managing is 403", async () => {
    const o = org.id;
    for (const [path, body] of [
      ["/org/invite-member", { email: "x@example.com", role: "member", organizationId: o }],
      ["/org/update-member-role", { memberId: adminMemberId, role: "member", organizationId: o }],
      ["/org/update", { organizationId: o, name: "Taken over" }],
      ["/org/remove-member", { memberIdOrEmail: adminMemberId, organizationId: o }],
    ] as const) {
      await expectError(await w.call(member, "POST", path, body), 403, "forbidden");
    }
    await expectError(await w.call(member, "GET", `/org/list-invitations?organizationId=${o}`), 403, "forbidden");
    expect((await w.call(member, "GET", `/org/list-members?organizationId=${o}`)).status).toBe(200);
    expect((await w.call(member, "POST", "/org/set-active", { organizationId: o })).status).toBe(200);
  });

  it("lets only owners change or remove an owner, and keeps the last owner", async () => {
    const o = org.id;
    const toOwner = { memberId: org.ownerMemberId, role: "admin", organizationId: o };
    await expectError(await w.call(admin, "POST", "/org/update-member-role", toOwner), 403, "forbidden");
    await expectError(
      await w.call(admin, "POST", "/org/remove-member", { memberIdOrEmail: owner.email, organizationId: o }),
      403,
      "forbidden",
    );
    // The only owner can neither demote nor remove themselves.
    await expectError(await w.call(owner, "POST", "/org/update-member-role", toOwner), 403, "forbidden");
    await expectError(
      await w.call(owner, "POST", "/org/remove-member", { memberIdOrEmail: org.ownerMemberId, organizationId: o }),
      403,
      "forbidden",
    );
    expect((await members()).find((m: { id: string }) => m.id === org.ownerMemberId).role).toBe("owner");
  });

  it("answers 404 on every organization route at an external_only site", async () => {
    for (const mount of MOUNTS) {
      for (const [method, path, body] of [
        ["POST", "/org/update-member-role", { memberId: memberMemberId, role: "admin", organizationId: org.id }],
        ["POST", "/org/invite-member", { email: "x@example.com", role: "member", organizationId: org.id }],
        ["POST", "/org/set-active", { organizationId: org.id }],
        ["POST", "/org/update", { organizationId: org.id, name: "x" }],
        ["POST", "/org/remove-member", { memberIdOrEmail: memberMemberId, organizationId: org.id }],
        ["GET", `/org/list-members?organizationId=${org.id}`, undefined],
        ["GET", `/org/list-invitations?organizationId=${org.id}`, undefined],
        ["POST", "/org/accept-invitation", { invitationId: UNKNOWN_ID }],
        ["POST", "/org/reject-invitation", { invitationId: UNKNOWN_ID }],
        ["POST", "/org/cancel-invitation", { invitationId: UNKNOWN_ID }],
        ["GET", `/org/invitation?id=${UNKNOWN_ID}&site=closed`, undefined],
      ] as const) {
        await expectError(await w.call(owner, method, path, body, { mount, site: "closed" }), 404, "not_found");
      }
    }
    expect((await members()).find((m: { id: string }) => m.id === memberMemberId).role).toBe("member");
  });

  it("answers 400 without the site header and 404 for an unknown site", async () => {
    const res = await w.h.request("POST", "/v1/org/set-active", {
      headers: { cookie: owner.cookie },
      body: { organizationId: null },
    });
    await expectError(res, 400, "bad_request");
    await expectError(
      await w.call(owner, "POST", "/org/set-active", { organizationId: null }, { site: "nope" }),
      404,
      "not_found",
    );
  });

  it("refuses operator creation with a taken slug (409) or a bad owner address (422)", async () => {
    const taken = await w.h.admin("POST", "/admin/tenants/default/organizations", {
      name: "Again",
      slug: "errors",
      ownerEmail: "x@example.com",
    });
    await expectError(taken, 409, "conflict");
    const bad = await w.h.admin("POST", "/admin/tenants/default/organizations", {
      name: "Bad",
      slug: "bad",
      ownerEmail: "nope",
    });
    await expectError(bad, 422, "validation_failed");
    const unknown = await w.h.admin("POST", "/admin/tenants/nobody/organizations", {
      name: "Bad",
      slug: "bad",
      ownerEmail: "x@example.com",
    });
    await expectError(unknown, 404, "not_found");
  });
});
