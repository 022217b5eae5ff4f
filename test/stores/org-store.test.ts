import { expect, it } from "bun:test";
import { randomUUID } from "node:crypto";
import { MemoryIdentityStore } from "../../src/identity/memory-store";
import { DrizzleIdentityStore, type IdentityStore } from "../../src/identity/store";
import { MemoryOrgStore } from "../../src/orgs/memory-store";
import { DrizzleOrgStore, MAX_ORGS_IN_COOKIE, type OrgStore } from "../../src/orgs/store";
import { MemoryUserStore } from "../../src/users/memory-store";
import { DrizzleUserStore, type UserStore } from "../../src/users/store";
import { rejects, storeContract } from "../helpers/store-contract";

interface Stores {
  orgs: OrgStore;
  identity: IdentityStore;
  users: UserStore;
}

const at = (s: number) => new Date(Date.UTC(2026, 10, 26, 12, 0, s));

storeContract<Stores>(
  "the organization store",
  (_kind, db) => {
    if (db === null) {
      const users = new MemoryUserStore();
      const identity = new MemoryIdentityStore(users);
      return { users, identity, orgs: new MemoryOrgStore(identity) };
    }
    return { users: new DrizzleUserStore(db), identity: new DrizzleIdentityStore(db), orgs: new DrizzleOrgStore(db) };
  },
  (stores) => {
    const orgs = () => stores().orgs;
    const newOrg = async (slug: string, owner = `${slug}-owner@example.com`, tenant = "t1") => {
      const made = await orgs().createOrganization(tenant, { name: slug.toUpperCase(), slug, logo: null }, owner);
      if (made === null) throw new Error(`slug ${slug} taken`);
      return made;
    };
    const newUser = async (email: string, tenant = "t1") => (await stores().users.createUser(tenant, email)).user;

    it("creates an organization with its owner, once per slug in a tenant", async () => {
      const existing = await newUser("own@example.com");
      const { organization, owner } = await newOrg("acme", " Own@Example.com");
      expect(organization).toMatchObject({ tenantId: "t1", name: "ACME", slug: "acme", logo: null });
      expect(owner).toMatchObject({ organizationId: organization.id, userId: existing.id, role: "owner" });
      expect(owner.user).toEqual({ id: existing.id, email: "own@example.com", name: null });
      expect(
        await orgs().createOrganization("t1", { name: "x", slug: "acme", logo: null }, "z@example.com"),
      ).toBeNull();
      expect(await stores().users.userById("t1", existing.id)).toBeDefined();
      const other = await orgs().createOrganization("t2", { name: "x", slug: "acme", logo: null }, "z@example.com");
      expect(other?.owner.user.email).toBe("z@example.com");
    });

    it("lists a tenant's organizations by slug, finds and updates one", async () => {
      await newOrg("zeta", undefined, "t3");
      const { organization } = await newOrg("beta", undefined, "t3");
      expect((await orgs().listOrganizations("t3")).map((o) => o.slug)).toEqual(["beta", "zeta"]);
      expect((await orgs().organization("t3", organization.id))?.slug).toBe("beta");
      expect(await orgs().organization("t1", organization.id)).toBeUndefined();
      const renamed = await orgs().updateOrganization(organization.id, { name: "Beta Ltd", logo: "https://x/l.png" });
      expect(renamed).toMatchObject({ name: "Beta Ltd", logo: "https://x/l.png" });
      expect((await orgs().updateOrganization(organization.id, { name: "Beta" })).logo).toBe("https://x/l.png");
      expect(await rejects(orgs().updateOrganization(randomUUID(), { name: "x" }))).toBe(true);
    });

    it("seats members through invitations, oldest first, and counts owners", async () => {
      const { organization, owner } = await newOrg("seats");
      const invited = await orgs().invite({
        tenantId: "t1",
        organizationId: organization.id,
        email: "m1@example.com",
        role: "member",
        inviterId: owner.userId,
        expiresAt: at(30),
      });
      expect(invited.superseded).toBeNull();
      expect(invited.invitation).toMatchObject({ status: "pending", role: "member", email: "m1@example.com" });
      const m1 = await newUser("m1@example.com");
      const accepted = await orgs().accept("t1", invited.invitation.id, "m1@example.com", m1.id, at(1));
      expect(accepted?.invitation.status).toBe("accepted");
      expect(accepted?.membership).toMatchObject({ organizationId: organization.id, userId: m1.id, role: "member" });
      expect(await orgs().accept("t1", invited.invitation.id, "m1@example.com", m1.id, at(1))).toBeNull();
      const listed = await orgs().listMembers(organization.id);
      expect(listed.map((m) => [m.user.email, m.role])).toEqual([
        ["seats-owner@example.com", "owner"],
        ["m1@example.com", "member"],
      ]);
      expect(await orgs().ownerCount(organization.id)).toBe(1);
      const seat = accepted?.membership;
      if (!seat) throw new Error("no seat");
      await orgs().setRole(seat.id, "owner");
      expect(await orgs().ownerCount(organization.id)).toBe(2);
      expect((await orgs().member(organization.id, { email: "M1@example.com" }))?.id).toBe(seat.id);
      expect((await orgs().member(organization.id, { id: seat.id }))?.user.email).toBe("m1@example.com");
      expect(await orgs().member(organization.id, { email: "nobody@example.com" })).toBeUndefined();
      expect((await orgs().membershipOf("t1", organization.id, m1.id))?.role).toBe("owner");
      expect(await orgs().membershipOf("t2", organization.id, m1.id)).toBeUndefined();
    });

    it("refuses an expired, wrong-address or other-tenant acceptance, and keeps a seated user's role", async () => {
      const { organization, owner } = await newOrg("gates");
      const invite = (email: string, role = "member") =>
        orgs().invite({
          tenantId: "t1",
          organizationId: organization.id,
          email,
          role,
          inviterId: owner.userId,
          expiresAt: at(10),
        });
      const { invitation } = await invite("g@example.com");
      const g = await newUser("g@example.com");
      expect(await orgs().accept("t1", invitation.id, "g@example.com", g.id, at(10))).toBeNull();
      expect(await orgs().accept("t1", invitation.id, "h@example.com", g.id, at(1))).toBeNull();
      expect(await orgs().accept("t2", invitation.id, "g@example.com", g.id, at(1))).toBeNull();
      const again = await invite(owner.user.email, "admin");
      const kept = await orgs().accept("t1", again.invitation.id, owner.user.email, owner.userId, at(1));
      expect(kept?.membership).toMatchObject({ id: owner.id, role: "owner" });
    });

    it("supersedes a pending invitation for the same address, and closes by compare-and-set", async () => {
      const { organization, owner } = await newOrg("inv");
      const values = {
        tenantId: "t1",
        organizationId: organization.id,
        email: "i@example.com",
        role: "member",
        inviterId: owner.userId,
        expiresAt: at(30),
      };
      const first = await orgs().invite(values);
      const second = await orgs().invite({ ...values, role: "admin" });
      expect(second.superseded?.id).toBe(first.invitation.id);
      expect(second.superseded?.status).toBe("canceled");
      const listed = await orgs().listInvitations(organization.id);
      expect(listed.map((i) => [i.id, i.status])).toEqual([
        [first.invitation.id, "canceled"],
        [second.invitation.id, "pending"],
      ]);
      expect(await orgs().close("t1", second.invitation.id, "rejected", "other@example.com")).toBeNull();
      expect((await orgs().close("t1", second.invitation.id, "rejected", "i@example.com"))?.status).toBe("rejected");
      expect(await orgs().close("t1", second.invitation.id, "canceled")).toBeNull();
      expect((await orgs().invitation("t1", first.invitation.id))?.status).toBe("canceled");
      expect(await orgs().invitation("t2", first.invitation.id)).toBeUndefined();
    });

    it("undoes an invitation whose follow-up throws, leaving the superseded one pending", async () => {
      const { organization, owner } = await newOrg("undo");
      const values = {
        tenantId: "t1",
        organizationId: organization.id,
        email: "u@example.com",
        role: "member",
        inviterId: owner.userId,
        expiresAt: at(30),
      };
      const first = await orgs().invite(values);
      const failed = await rejects(
        orgs().invite(values, async () => {
          throw new Error("no budget");
        }),
      );
      expect(failed).toBe(true);
      const listed = await orgs().listInvitations(organization.id);
      expect(listed.map((i) => [i.id, i.status])).toEqual([[first.invitation.id, "pending"]]);
    });

    it("names the active organization in the claims, and removing a seat clears it from sessions", async () => {
      const a = await newOrg("act-a", "act@example.com");
      const b = await newOrg("act-b", "act@example.com");
      const userId = a.owner.userId;
      const session = await stores().identity.createSession("t1", userId, "act-hash", at(50));
      await orgs().setActive(session.id, b.organization.id);
      expect((await stores().identity.sessionByToken("t1", "act-hash", at(1)))?.session.activeOrganizationId).toBe(
        b.organization.id,
      );
      const claims = await orgs().claims("t1", userId, b.organization.id);
      expect(claims).toEqual({
        orgs: { [b.organization.id]: "owner", [a.organization.id]: "owner" },
        activeOrg: { id: b.organization.id, slug: "act-b" },
      });
      expect(Object.keys(claims.orgs)[0]).toBe(b.organization.id);
      expect((await orgs().claims("t1", userId, randomUUID())).activeOrg).toBeNull();
      expect(await orgs().removeMember(b.owner)).toBe(true);
      expect(await orgs().removeMember(b.owner)).toBe(false);
      expect(
        (await stores().identity.sessionByToken("t1", "act-hash", at(1)))?.session.activeOrganizationId,
      ).toBeNull();
      expect(Object.keys((await orgs().claims("t1", userId, null)).orgs)).toEqual([a.organization.id]);
    });

    it("names at most the cookie's limit of organizations, the active one among them", async () => {
      const first = await newOrg("many-000", "many@example.com", "t4");
      const userId = first.owner.userId;
      let last = first;
      for (let i = 1; i <= MAX_ORGS_IN_COOKIE; i++)
        last = await newOrg(`many-${String(i).padStart(3, "0")}`, "many@example.com", "t4");
      const claims = await orgs().claims("t4", userId, last.organization.id);
      expect(Object.keys(claims.orgs)).toHaveLength(MAX_ORGS_IN_COOKIE);
      expect(claims.orgs[last.organization.id]).toBe("owner");
      expect(claims.orgs[first.organization.id]).toBe("owner");
    });
  },
);
