import { expect, it } from "bun:test";
import { randomUUID } from "node:crypto";
import { MemoryUserStore } from "../../src/users/memory-store";
import { DrizzleUserStore, type UserStore } from "../../src/users/store";
import { rejects, storeContract } from "../helpers/store-contract";

storeContract<UserStore>(
  "the user store",
  (_kind, db) => (db === null ? new MemoryUserStore() : new DrizzleUserStore(db)),
  (store) => {
    it("creates a user once per tenant and address, trimmed and lower-cased", async () => {
      const first = await store().createUser("t1", "  Ann@Example.com ");
      expect(first.created).toBe(true);
      expect(first.user).toMatchObject({
        tenantId: "t1",
        email: "ann@example.com",
        emailVerified: false,
        name: null,
        traits: {},
        erasedAt: null,
      });
      expect(first.user.createdAt).toBeInstanceOf(Date);
      const again = await store().createUser("t1", "ann@example.COM");
      expect(again).toEqual({ user: first.user, created: false });
      const elsewhere = await store().createUser("t2", "ann@example.com");
      expect(elsewhere.created).toBe(true);
      expect(elsewhere.user.id).not.toBe(first.user.id);
    });

    it("finds a user by id only in its tenant, and never by a string that is not a uuid", async () => {
      const { user } = await store().createUser("t1", "bob@example.com");
      expect((await store().userById("t1", user.id))?.email).toBe("bob@example.com");
      expect(await store().userById("t2", user.id)).toBeUndefined();
      expect(await store().userById("t1", randomUUID())).toBeUndefined();
      expect(await store().userById("t1", "not-a-uuid")).toBeUndefined();
    });

    it("adds, replaces, lists and revokes grants", async () => {
      const { user } = await store().createUser("t1", "cy@example.com");
      const until = new Date(Date.UTC(2027, 0, 1));
      await store().addGrant("t1", user.id, "premium", null);
      await store().addGrant("t1", user.id, "archive", until);
      const replaced = await store().addGrant("t1", user.id, "premium", until);
      expect(replaced.expiresAt?.getTime()).toBe(until.getTime());
      const listed = await store().listGrants("t1", user.id);
      expect(listed.map((g) => [g.grant, g.expiresAt?.getTime() ?? null])).toEqual([
        ["archive", until.getTime()],
        ["premium", until.getTime()],
      ]);
      expect(await store().listGrants("t2", user.id)).toEqual([]);
      expect(await store().revokeGrant("t2", user.id, "premium")).toBe(false);
      expect(await store().revokeGrant("t1", user.id, "premium")).toBe(true);
      expect(await store().revokeGrant("t1", user.id, "premium")).toBe(false);
      expect((await store().listGrants("t1", user.id)).map((g) => g.grant)).toEqual(["archive"]);
    });

    it("refuses a grant for a user that does not exist", async () => {
      expect(await rejects(store().addGrant("t1", randomUUID(), "premium", null))).toBe(true);
    });

    it("reads many users with their grants at once, in the tenant only", async () => {
      const a = (await store().createUser("t3", "a@example.com")).user;
      const b = (await store().createUser("t3", "b@example.com")).user;
      const other = (await store().createUser("t4", "c@example.com")).user;
      await store().addGrant("t3", a.id, "premium", null);
      await store().addGrant("t4", other.id, "premium", null);
      const read = await store().usersWithGrants("t3", [a.id, b.id, other.id, "junk", randomUUID()]);
      expect(read.users.map((u) => u.id).sort()).toEqual([a.id, b.id].sort());
      expect(read.grants.map((g) => [g.userId, g.grant])).toEqual([[a.id, "premium"]]);
      expect(await store().usersWithGrants("t3", ["junk"])).toEqual({ users: [], grants: [] });
      expect(await store().usersWithGrants("t3", [randomUUID()])).toEqual({ users: [], grants: [] });
    });

    it("creates one user when the same address arrives concurrently", async () => {
      const made = await Promise.all(Array.from({ length: 8 }, () => store().createUser("t5", "race@example.com")));
      expect(new Set(made.map((m) => m.user.id)).size).toBe(1);
      expect(made.filter((m) => m.created)).toHaveLength(1);
    });
  },
);
