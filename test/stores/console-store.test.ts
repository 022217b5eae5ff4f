import { expect, it } from "bun:test";
import { MemoryConsoleStore } from "../../src/console/memory-store";
import { type ConsoleStore, DrizzleConsoleStore } from "../../src/console/store";
import { rejects, storeContract } from "../helpers/store-contract";

const at = (s: number) => new Date(Date.UTC(2026, 10, 26, 12, 0, s));

storeContract<ConsoleStore>(
  "the console store",
  (_kind, db) => (db === null ? new MemoryConsoleStore() : new DrizzleConsoleStore(db)),
  (store) => {
    it("adds users, changes a role in place, and lists a tenant's users by address", async () => {
      const first = await store().putUser("t1", "zed@example.com", "viewer");
      await store().putUser("t1", "amy@example.com", "owner");
      await store().putUser("t2", "bob@example.com", "admin");
      const changed = await store().putUser("t1", "zed@example.com", "admin");
      expect(changed).toEqual({ ...first, role: "admin" });
      expect(first.createdAt).toMatch(/^\d{4}-\d\d-\d\dT/);
      expect((await store().listUsers("t1")).map((u) => [u.email, u.role])).toEqual([
        ["amy@example.com", "owner"],
        ["zed@example.com", "admin"],
      ]);
      expect(await store().user("t1", "amy@example.com")).toMatchObject({ role: "owner" });
      expect(await store().user("t2", "amy@example.com")).toBeNull();
    });

    it("consumes a sign-in link once, only while it lives", async () => {
      const owner = { tenantId: "t1", email: "amy@example.com" };
      await store().createToken("link", "link-1", owner, at(10));
      await store().createToken("session", "sess-x", owner, at(10));
      expect(await rejects(store().createToken("link", "link-1", owner, at(10)))).toBe(true);
      expect(await store().consumeLink("link-1", at(10))).toBeNull();
      expect(await store().consumeLink("sess-x", at(1))).toBeNull();
      const used = await Promise.all([store().consumeLink("link-1", at(1)), store().consumeLink("link-1", at(1))]);
      expect(used.filter((u) => u !== null)).toEqual([owner]);
      expect(await store().consumeLink("link-1", at(2))).toBeNull();
      expect(await store().consumeLink("nope", at(1))).toBeNull();
    });

    it("reads a live session with the user's current role, and none once ended or the user removed", async () => {
      await store().putUser("t3", "s@example.com", "viewer");
      const owner = { tenantId: "t3", email: "s@example.com" };
      await store().createToken("session", "sess-1", owner, at(10));
      await store().createToken("session", "sess-2", owner, at(10));
      await store().createToken("link", "link-s", owner, at(10));
      expect(await store().session("sess-1", at(1))).toEqual({ ...owner, role: "viewer" });
      await store().putUser("t3", "s@example.com", "owner");
      expect((await store().session("sess-1", at(1)))?.role).toBe("owner");
      expect(await store().session("sess-1", at(10))).toBeNull();
      expect(await store().session("link-s", at(1))).toBeNull();
      await store().endSession("sess-1");
      expect(await store().session("sess-1", at(1))).toBeNull();
      expect(await store().removeUser("t3", "s@example.com")).toBe(true);
      expect(await store().removeUser("t3", "s@example.com")).toBe(false);
      expect(await store().session("sess-2", at(1))).toBeNull();
      await store().putUser("t3", "s@example.com", "viewer");
      expect(await store().session("sess-2", at(1))).toBeNull();
      expect(await store().consumeLink("link-s", at(1))).toBeNull();
    });

    it("sweeps expired tokens and used links, keeping the rest", async () => {
      await store().putUser("t4", "w@example.com", "admin");
      const owner = { tenantId: "t4", email: "w@example.com" };
      await store().createToken("session", "old-sess", owner, at(5));
      await store().createToken("session", "live-sess", owner, at(50));
      await store().createToken("link", "used-link", owner, at(50));
      await store().createToken("link", "fresh-link", owner, at(50));
      await store().consumeLink("used-link", at(1));
      await store().sweep(at(20));
      expect(await store().session("old-sess", at(1))).toBeNull();
      expect(await store().session("live-sess", at(21))).toEqual({ ...owner, role: "admin" });
      expect(await store().consumeLink("fresh-link", at(21))).toEqual(owner);
      // A swept link's hash may be stored again; a kept one may not.
      await store().createToken("link", "used-link", owner, at(50));
      expect(await rejects(store().createToken("link", "fresh-link", owner, at(50)))).toBe(true);
    });
  },
);
