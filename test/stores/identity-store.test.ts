import { expect, it } from "bun:test";
import { randomUUID } from "node:crypto";
import { MemoryIdentityStore } from "../../src/identity/memory-store";
import { DrizzleIdentityStore, type IdentityStore } from "../../src/identity/store";
import { MemoryUserStore } from "../../src/users/memory-store";
import { DrizzleUserStore, type UserStore } from "../../src/users/store";
import { rejects, storeContract } from "../helpers/store-contract";

interface Stores {
  identity: IdentityStore;
  users: UserStore;
}

const at = (s: number) => new Date(Date.UTC(2026, 10, 26, 12, 0, s));

storeContract<Stores>(
  "the identity store",
  (_kind, db) => {
    if (db === null) {
      const users = new MemoryUserStore();
      return { users, identity: new MemoryIdentityStore(users) };
    }
    return { users: new DrizzleUserStore(db), identity: new DrizzleIdentityStore(db) };
  },
  (stores) => {
    const identity = () => stores().identity;
    const newUser = async (email: string, tenant = "t1") => (await stores().users.createUser(tenant, email)).user;

    it("finds a live session with its user until it expires, in its tenant only", async () => {
      const user = await newUser("s1@example.com");
      const session = await identity().createSession("t1", user.id, "hash-s1", at(10));
      expect(session).toMatchObject({
        tenantId: "t1",
        userId: user.id,
        tokenHash: "hash-s1",
        activeOrganizationId: null,
      });
      expect((await identity().sessionByToken("t1", "hash-s1", at(9)))?.user.email).toBe("s1@example.com");
      expect(await identity().sessionByToken("t1", "hash-s1", at(10))).toBeNull();
      expect(await identity().sessionByToken("t2", "hash-s1", at(9))).toBeNull();
      expect(await identity().sessionByToken("t1", "nope", at(9))).toBeNull();
      await identity().extendSession(session.id, at(20));
      expect((await identity().sessionByToken("t1", "hash-s1", at(15)))?.session.id).toBe(session.id);
      await identity().deleteSession(session.id);
      expect(await identity().sessionByToken("t1", "hash-s1", at(15))).toBeNull();
    });

    it("refuses a session for an unknown user or a token hash already used", async () => {
      const user = await newUser("s2@example.com");
      await identity().createSession("t1", user.id, "hash-s2", at(10));
      expect(await rejects(identity().createSession("t1", user.id, "hash-s2", at(10)))).toBe(true);
      expect(await rejects(identity().createSession("t1", randomUUID(), "hash-s2b", at(10)))).toBe(true);
    });

    it("ends every session of a user and counts them", async () => {
      const user = await newUser("s3@example.com");
      await identity().createSession("t1", user.id, "hash-s3a", at(10));
      await identity().createSession("t1", user.id, "hash-s3b", at(10));
      expect(await identity().deleteSessionsOfUser("t2", user.id)).toBe(0);
      expect(await identity().deleteSessionsOfUser("t1", user.id)).toBe(2);
      expect(await identity().sessionByToken("t1", "hash-s3a", at(1))).toBeNull();
    });

    it("consumes a magic link once, only live and in its tenant", async () => {
      const link = { tenantId: "t1", siteId: "news", email: "m@example.com", expiresAt: at(10) };
      await identity().createMagicLink({ ...link, tokenHash: "ml-1" });
      await identity().createMagicLink({ ...link, tokenHash: "ml-2" });
      expect(await rejects(identity().createMagicLink({ ...link, tokenHash: "ml-1" }))).toBe(true);
      expect(await identity().consumeMagicLink("t2", "ml-1", at(1))).toBeNull();
      expect(await identity().consumeMagicLink("t1", "ml-2", at(10))).toBeNull();
      const races = await Promise.all(
        Array.from({ length: 5 }, () => identity().consumeMagicLink("t1", "ml-1", at(1))),
      );
      const won = races.filter((r) => r !== null);
      expect(won).toHaveLength(1);
      expect(won[0]).toMatchObject({ email: "m@example.com", siteId: "news" });
      expect(won[0]?.consumedAt?.getTime()).toBe(at(1).getTime());
      expect(await identity().consumeMagicLink("t1", "ml-1", at(2))).toBeNull();
    });

    it("finds or creates a user by address, marking it verified only when asked", async () => {
      const made = await identity().findOrCreateByEmail("t1", " New@Example.com", false);
      expect(made).toMatchObject({ email: "new@example.com", emailVerified: false });
      const again = await identity().findOrCreateByEmail("t1", "new@example.com", true);
      expect(again).toMatchObject({ id: made.id, emailVerified: true });
      expect((await identity().findOrCreateByEmail("t1", "new@example.com", false)).emailVerified).toBe(true);
      expect((await identity().userByEmail("t1", "NEW@example.com"))?.id).toBe(made.id);
      expect(await identity().userByEmail("t2", "new@example.com")).toBeUndefined();
      const fresh = await identity().findOrCreateByEmail("t1", "verified@example.com", true);
      expect(fresh.emailVerified).toBe(true);
    });

    it("binds a subject once, keeps the first user, and moves a binding", async () => {
      const a = await newUser("b1@example.com");
      const b = await newUser("b2@example.com");
      await identity().bindSubject("t1", "sub-1", a.id);
      await identity().bindSubject("t1", "sub-1", b.id);
      expect((await identity().userBySubject("t1", "sub-1"))?.id).toBe(a.id);
      expect(await identity().userBySubject("t2", "sub-1")).toBeUndefined();
      expect(await rejects(identity().bindSubject("t1", "sub-x", randomUUID()))).toBe(true);
      await identity().rebindSubject("t1", "sub-1", "sub-2", a.id);
      expect(await identity().userBySubject("t1", "sub-1")).toBeUndefined();
      expect((await identity().userBySubject("t1", "sub-2"))?.id).toBe(a.id);
    });

    it("changes an address unless another user holds it, and finds the other holder", async () => {
      const a = await newUser("c1@example.com");
      const b = await newUser("c2@example.com");
      expect((await identity().otherUserWithEmail("t1", "C2@example.com", a.id))?.id).toBe(b.id);
      expect(await identity().otherUserWithEmail("t1", "c2@example.com", b.id)).toBeUndefined();
      expect(await rejects(identity().changeEmail(a.id, "c2@example.com", true, at(1)))).toBe(true);
      const changed = await identity().changeEmail(a.id, " C3@example.com", true, at(1));
      expect(changed).toMatchObject({ email: "c3@example.com", emailVerified: true });
      expect(changed.emailChangedAt?.getTime()).toBe(at(1).getTime());
      expect(await rejects(identity().changeEmail(randomUUID(), "c4@example.com", true, at(1)))).toBe(true);
    });

    it("records conflicts per tenant", async () => {
      const a = await newUser("k1@example.com", "t9");
      const b = await newUser("k2@example.com", "t9");
      await identity().recordConflict({
        tenantId: "t9",
        kind: "email",
        userId: a.id,
        collidingUserId: b.id,
        value: "x",
      });
      const listed = await identity().conflicts("t9");
      expect(listed).toHaveLength(1);
      expect(listed[0]).toMatchObject({ kind: "email", userId: a.id, collidingUserId: b.id, value: "x" });
      expect(await identity().conflicts("t8")).toEqual([]);
    });

    it("erases a user in place: anonymised, sessions ended, the address free again", async () => {
      const user = await newUser("gone@example.com");
      await identity().updateProfile(user.id, { name: "Gone", firstName: "G", traits: { plan: "x" } });
      await identity().createSession("t1", user.id, "hash-gone", at(10));
      await identity().erase(user.id, at(2));
      const erased = await stores().users.userById("t1", user.id);
      expect(erased).toMatchObject({
        email: `erased-${user.id}@erased.invalid`,
        emailVerified: false,
        name: null,
        firstName: null,
        traits: {},
      });
      expect(erased?.erasedAt?.getTime()).toBe(at(2).getTime());
      expect(await identity().sessionByToken("t1", "hash-gone", at(1))).toBeNull();
      expect(
        await identity().otherUserWithEmail("t1", `erased-${user.id}@erased.invalid`, randomUUID()),
      ).toBeUndefined();
      expect((await identity().findOrCreateByEmail("t1", "gone@example.com", false)).id).not.toBe(user.id);
    });

    it("updates only the profile fields given", async () => {
      const user = await newUser("p@example.com");
      await identity().updateProfile(user.id, { name: "Pat", lastName: "Lee" });
      const updated = await identity().updateProfile(user.id, { firstName: null, traits: { tier: 2 } });
      expect(updated).toMatchObject({ name: "Pat", firstName: null, lastName: "Lee", traits: { tier: 2 } });
      expect(await rejects(identity().updateProfile(randomUUID(), { name: "x" }))).toBe(true);
    });
  },
);
