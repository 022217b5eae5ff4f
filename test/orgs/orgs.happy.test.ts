import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { run } from "../../src/cli/run";
import { ACCESS_TTL_SECONDS } from "../../src/identity/access-token";
import { storeKinds } from "../helpers/databases";
import { OPERATOR_TOKEN } from "../helpers/harness";
import { MOUNTS, mailedLink, type OrgWorld, orgWorld } from "./fixture";

const DAY_MS = 86_400_000;

describe.each(storeKinds)("organizations, happy paths (%s store)", (kind) => {
  let w: OrgWorld;
  beforeAll(async () => {
    w = await orgWorld(kind);
  }, 60_000);
  afterAll(async () => {
    await w.stop();
  }, 60_000);

  it("lets the operator create an organization with its owner, and lists it", async () => {
    const owner = await w.person("founder@example.com");
    const org = await w.organization("Acme News", "acme", owner);
    const listed = await (await w.h.admin("GET", "/admin/tenants/default/organizations")).json();
    expect(listed.organizations).toContainEqual({ id: org.id, name: "Acme News", slug: "acme", logo: null });
    for (const mount of MOUNTS) {
      const res = await w.call(owner, "GET", `/org/list-members?organizationId=${org.id}`, undefined, { mount });
      expect(res.status).toBe(200);
      expect((await res.json()).members).toEqual([
        {
          id: org.ownerMemberId,
          organizationId: org.id,
          userId: owner.userId,
          role: "owner",
          createdAt: expect.any(String),
          user: { id: owner.userId, email: "founder@example.com", name: null },
        },
      ]);
    }
  });

  it("creates an organization from the CLI (svc org create) against a running server", async () => {
    const server = w.h.app.listen({ port: 0, hostname: "127.0.0.1" }).server!;
    try {
      const out: string[] = [];
      const env = { SVC_URL: `http://127.0.0.1:${server.port}`, SVC_OPERATOR_TOKEN: OPERATOR_TOKEN };
      const io = { env, stdout: (s: string) => void out.push(s), stderr: (s: string) => void out.push(s) };
      const code = await run(["org", "create", "Daily Planet", "--slug", "planet", "--owner", "perry@example.com"], io);
      expect({ code, out }).toEqual({ code: 0, out: [expect.stringContaining("organization planet created")] });
      expect(await run(["org", "list", "--json"], io)).toBe(0);
      expect(JSON.parse(out.at(-1) as string).organizations.map((o: { slug: string }) => o.slug)).toContain("planet");
    } finally {
      await w.h.app.stop();
    }
  });

  it("sets the active organization (fresh access cookie: decisions read org.*), and clears it with null", async () => {
    const owner = await w.person("active@example.com");
    const org = await w.organization("Active", "active", owner);
    expect(await w.teamOutcome(await w.accessCookie(owner))).toBe("none");
    for (const mount of MOUNTS) {
      const res = await w.call(owner, "POST", "/org/set-active", { organizationId: org.id }, { mount });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ organization: { id: org.id, name: "Active", slug: "active", logo: null } });
      const access = res.headers.getSetCookie().find((c) => c.startsWith("svc.access="));
      expect(access).toBeDefined();
      expect(await w.teamOutcome(`${owner.cookie}; ${(access as string).split(";")[0]}`)).toBe("manager");
    }
    // get-session keeps the active organization in every cookie it mints.
    expect(await w.teamOutcome(await w.accessCookie(owner))).toBe("manager");
    const cleared = await w.call(owner, "POST", "/org/set-active", { organizationId: null });
    expect(cleared.status).toBe(200);
    expect(await cleared.json()).toEqual({ organization: null });
    expect(await w.teamOutcome(await w.accessCookie(owner))).toBe("none");
  });

  it("uses the session's active organization when organizationId is omitted", async () => {
    const owner = await w.person("implicit@example.com");
    const org = await w.organization("Implicit", "implicit", owner);
    await w.call(owner, "POST", "/org/set-active", { organizationId: org.id });
    const res = await w.call(owner, "POST", "/org/update", { name: "Implicit Ltd" });
    expect(res.status).toBe(200);
    expect((await res.json()).id).toBe(org.id);
  });

  it("renames, sets and clears the logo on both mounts; the slug never changes", async () => {
    const owner = await w.person("rename@example.com");
    const org = await w.organization("Old Name", "renamed", owner);
    const set = await w.call(
      owner,
      "POST",
      "/org/update",
      { organizationId: org.id, name: "New Name", logo: "https://cdn.example/logo.png" },
      { mount: "/svc/v1" },
    );
    expect(set.status).toBe(200);
    expect(await set.json()).toEqual({
      id: org.id,
      name: "New Name",
      slug: "renamed",
      logo: "https://cdn.example/logo.png",
    });
    const kept = await w.call(owner, "POST", "/org/update", { organizationId: org.id, name: "Newer" });
    expect((await kept.json()).logo).toBe("https://cdn.example/logo.png");
    const cleared = await w.call(owner, "POST", "/org/update", { organizationId: org.id, name: "Newer", logo: null });
    expect(await cleared.json()).toEqual({ id: org.id, name: "Newer", slug: "renamed", logo: null });
  });

  it("invites by mail on the real SMTP server: the link keeps the mount, GET only shows a page, POST accepts", async () => {
    const owner = await w.person("inviter@example.com");
    const org = await w.organization("Inviting", "inviting", owner);
    for (const [i, mount] of MOUNTS.entries()) {
      const email = `guest${i}@example.com`;
      const before = w.smtp.received.length;
      const res = await w.call(
        owner,
        "POST",
        "/org/invite-member",
        { email, role: "admin", organizationId: org.id },
        { mount },
      );
      expect(res.status).toBe(200);
      const invitation = await res.json();
      expect(invitation).toEqual({
        id: expect.any(String),
        organizationId: org.id,
        email,
        role: "admin",
        status: "pending",
        expiresAt: new Date(w.h.clock.now() + 7 * DAY_MS).toISOString(),
      });
      const link = await mailedLink(w, email, before + 1);
      expect(w.smtp.received[before]?.to).toEqual([email]);
      expect(w.smtp.received[before]?.text).toContain("Inviting");
      expect(link.pathname).toBe(`${mount}/org/invitation`);
      expect(link.searchParams.get("id")).toBe(invitation.id);
      expect(link.searchParams.get("site")).toBe("news");

      // A mail scanner fetching the link accepts nothing.
      const page = await w.h.request("GET", `${link.pathname}${link.search}`);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-type")).toContain("text/html");
      expect(await page.text()).toContain("accept-invitation");
      const pending = await (await w.call(owner, "GET", `/org/list-invitations?organizationId=${org.id}`)).json();
      expect(pending.invitations.find((x: { id: string }) => x.id === invitation.id).status).toBe("pending");

      const guest = await w.person(email);
      const accepted = await w.call(
        guest,
        "POST",
        "/org/accept-invitation",
        { invitationId: invitation.id },
        { mount },
      );
      expect(accepted.status).toBe(200);
      const answer = await accepted.json();
      expect(answer.invitation.status).toBe("accepted");
      expect(answer.member).toMatchObject({ organizationId: org.id, userId: guest.userId, role: "admin" });
      expect(answer.member.user).toEqual({ id: guest.userId, email, name: null });
    }
    const members = await (await w.call(owner, "GET", `/org/list-members?organizationId=${org.id}`)).json();
    expect(members.members.map((m: { role: string }) => m.role)).toEqual(["owner", "admin", "admin"]);
  });

  it("supersedes a pending invitation on re-invite (new id, old canceled); resend decides the mail", async () => {
    const owner = await w.person("super@example.com");
    const org = await w.organization("Super", "supersede", owner);
    const count = () => w.smtp.received.filter((m) => m.to.includes("twice@example.com")).length;
    const sent = w.smtp.received.length;
    const first = await w.invite(owner, org.id, "twice@example.com");
    await mailedLink(w, "twice@example.com", sent + 1);
    expect(count()).toBe(1);
    const second = await w.invite(owner, org.id, "twice@example.com", "admin");
    expect(second.id).not.toBe(first.id);
    expect(second.role).toBe("admin");
    await w.h.deps.outbox.drain();
    expect(count()).toBe(1);
    const resent = w.smtp.received.length;
    const third = await w.invite(owner, org.id, "twice@example.com", "member", { resend: true });
    const link = await mailedLink(w, "twice@example.com", resent + 1);
    expect(count()).toBe(2);
    expect(link.searchParams.get("id")).toBe(third.id);
    const listed = (await (await w.call(owner, "GET", `/org/list-invitations?organizationId=${org.id}`)).json())
      .invitations as { id: string; status: string }[];
    expect(listed.map((i) => [i.id, i.status])).toEqual([
      [first.id, "canceled"],
      [second.id, "canceled"],
      [third.id, "pending"],
    ]);
  });

  it("keeps an expired invitation listed; accepting it is refused; a re-invite mails a fresh one", async () => {
    const owner = await w.person("expiry@example.com");
    const org = await w.organization("Expiry", "expiry", owner);
    const sentOld = w.smtp.received.length;
    const old = await w.invite(owner, org.id, "late@example.com");
    await mailedLink(w, "late@example.com", sentOld + 1);
    w.h.clock.advance(7 * DAY_MS + 1000);
    const late = await w.person("late@example.com");
    const refused = await w.call(late, "POST", "/org/accept-invitation", { invitationId: old.id });
    expect(refused.status).toBe(403);
    const listed = await (await w.call(owner, "GET", `/org/list-invitations?organizationId=${org.id}`)).json();
    expect(listed.invitations).toEqual([
      expect.objectContaining({ id: old.id, status: "pending", expiresAt: old.expiresAt }),
    ]);
    const before = w.smtp.received.filter((m) => m.to.includes("late@example.com")).length;
    const sent = w.smtp.received.length;
    const fresh = await w.invite(owner, org.id, "late@example.com");
    const link = await mailedLink(w, "late@example.com", sent + 1);
    expect(link.searchParams.get("id")).toBe(fresh.id);
    expect(w.smtp.received.filter((m) => m.to.includes("late@example.com")).length).toBe(before + 1);
    const ok = await w.call(late, "POST", "/org/accept-invitation", { invitationId: fresh.id });
    expect(ok.status).toBe(200);
  });

  it("lets the invitee reject and an admin cancel a pending invitation", async () => {
    const owner = await w.person("closer@example.com");
    const org = await w.organization("Closer", "closer", owner);
    const a = await w.invite(owner, org.id, "no-thanks@example.com");
    const invitee = await w.person("no-thanks@example.com");
    const rejected = await w.call(
      invitee,
      "POST",
      "/org/reject-invitation",
      { invitationId: a.id },
      { mount: "/svc/v1" },
    );
    expect(rejected.status).toBe(200);
    expect((await rejected.json()).status).toBe("rejected");
    const b = await w.invite(owner, org.id, "withdrawn@example.com");
    const canceled = await w.call(owner, "POST", "/org/cancel-invitation", { invitationId: b.id });
    expect(canceled.status).toBe(200);
    expect((await canceled.json()).status).toBe("canceled");
  });

  it("changes a member's role (safe to retry) and removes members by id or address; a member may leave", async () => {
    const owner = await w.person("boss@example.com");
    const org = await w.organization("Roles", "roles", owner);
    const people = [];
    for (const email of ["ann@example.com", "bob@example.com", "cy@example.com"]) {
      const inv = await w.invite(owner, org.id, email);
      const p = await w.person(email);
      const res = await w.call(p, "POST", "/org/accept-invitation", { invitationId: inv.id });
      people.push({ ...p, memberId: (await res.json()).member.id as string });
    }
    const [ann, bob, cy] = people as [(typeof people)[0], (typeof people)[0], (typeof people)[0]];
    for (const mount of MOUNTS) {
      const res = await w.call(
        owner,
        "POST",
        "/org/update-member-role",
        { memberId: ann.memberId, role: "admin", organizationId: org.id },
        { mount },
      );
      expect(res.status).toBe(200);
      expect(await res.json()).toMatchObject({ id: ann.memberId, role: "admin", userId: ann.userId });
    }
    // An admin manages members too.
    const byAddress = await w.call(ann, "POST", "/org/remove-member", {
      memberIdOrEmail: "BOB@example.com",
      organizationId: org.id,
    });
    expect(byAddress.status).toBe(200);
    expect(await byAddress.json()).toEqual({ success: true });
    const byId = await w.call(
      owner,
      "POST",
      "/org/remove-member",
      { memberIdOrEmail: ann.memberId, organizationId: org.id },
      { mount: "/svc/v1" },
    );
    expect(byId.status).toBe(200);
    const leave = await w.call(cy, "POST", "/org/remove-member", {
      memberIdOrEmail: cy.memberId,
      organizationId: org.id,
    });
    expect(leave.status).toBe(200);
    const members = await (await w.call(owner, "GET", `/org/list-members?organizationId=${org.id}`)).json();
    expect(members.members.map((m: { userId: string }) => m.userId)).toEqual([owner.userId]);
    // The removed user keeps their record (and session).
    expect(await w.h.deps.users.userById("default", bob.userId)).toBeDefined();
    expect((await w.call(bob, "GET", "/id/get-session")).status).toBe(200);
  });

  it("a removal or a role change reaches decisions within the access cookie's lifetime", async () => {
    const owner = await w.person("bound@example.com");
    const org = await w.organization("Bound", "bound", owner);
    const inv = await w.invite(owner, org.id, "held@example.com", "admin");
    const held = await w.person("held@example.com");
    const member = (await (await w.call(held, "POST", "/org/accept-invitation", { invitationId: inv.id })).json())
      .member.id as string;
    await w.call(held, "POST", "/org/set-active", { organizationId: org.id });
    const cookie = await w.accessCookie(held);
    expect(await w.teamOutcome(cookie)).toBe("manager");

    // A role change: the held cookie still says admin; a refreshed one says member.
    await w.call(owner, "POST", "/org/update-member-role", {
      memberId: member,
      role: "member",
      organizationId: org.id,
    });
    expect(await w.teamOutcome(cookie)).toBe("manager");
    expect(await w.teamOutcome(await w.accessCookie(held))).toBe("seat");

    // A removal: the cookie minted before it keeps its claims until it expires, never longer.
    const before = await w.accessCookie(held);
    await w.call(owner, "POST", "/org/remove-member", { memberIdOrEmail: member, organizationId: org.id });
    w.h.clock.advance((ACCESS_TTL_SECONDS - 1) * 1000);
    expect(await w.teamOutcome(before)).toBe("seat");
    w.h.clock.advance(1000);
    expect(await w.teamOutcome(before)).toBe("none");
    expect(await w.teamOutcome(await w.accessCookie(held))).toBe("none");
  });
});
