import { expect, it } from "bun:test";
import { randomUUID } from "node:crypto";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { MemoryIdentityStore } from "../../src/identity/memory-store";
import { DrizzleIdentityStore, type IdentityStore } from "../../src/identity/store";
import { MemoryStreamingStore } from "../../src/streaming/memory-store";
import { DrizzleStreamingStore, type StreamingStore } from "../../src/streaming/store";
import { MemoryUserStore } from "../../src/users/memory-store";
import { DrizzleUserStore, type UserStore } from "../../src/users/store";
import { storeContract } from "../helpers/store-contract";

interface Stores {
  streaming: StreamingStore;
  users: UserStore;
  identity: IdentityStore;
  /** Makes a site exist: served (live and enabled) or not. */
  site(tenantId: string, siteId: string, served: boolean): Promise<void>;
  /** The change log's streaming subjects so far. */
  logged(): Promise<string[]>;
}

storeContract<Stores>(
  "the streaming store",
  (_kind, db) => {
    if (db === null) {
      const served = new Map<string, boolean>();
      const log: string[] = [];
      const users = new MemoryUserStore();
      const streaming = new MemoryStreamingStore(
        users,
        (t, s) => served.get(`${t}/${s}`) === true,
        (_t, subject) => log.push(subject),
      );
      return {
        streaming,
        users,
        identity: new MemoryIdentityStore(users, (id) => streaming.dropUser(id)),
        site: async (t, s, on) => void served.set(`${t}/${s}`, on),
        logged: async () => [...log],
      };
    }
    return {
      streaming: new DrizzleStreamingStore(db),
      users: new DrizzleUserStore(db),
      identity: new DrizzleIdentityStore(db),
      async site(t, s, on) {
        await db.execute(sql`insert into tenants (id) values (${t}) on conflict do nothing`);
        await db.execute(sql`insert into sites (tenant_id, id, live_version) values (${t}, ${s}, ${on ? 1 : null})`);
      },
      async logged() {
        const result = await db.execute(sql`select subject from change_log where topic = 'streaming' order by id`);
        return rowsOf<{ subject: string }>(result).map((r) => r.subject);
      },
    };
  },
  (stores) => {
    const store = () => stores().streaming;
    const newUser = async (email: string, tenant = "t1") => (await stores().users.createUser(tenant, email)).user;
    const sortedSubject = (subject: string | undefined) => {
      const [site, users] = (subject ?? "").split("\n");
      return `${site}\n${(users ?? "").split(",").sort().join(",")}`;
    };

    it("writes rows per site, user and pipeline, and logs the written users once per batch", async () => {
      await stores().site("t1", "news", true);
      const a = await newUser("a@example.com");
      const b = await newUser("b@example.com");
      const outcome = await store().writeBatch("t1", "news", "scores", [
        { userId: b.id, windowEnd: 1000, values: { score: 3, segment: "x" } },
        { userId: a.id, windowEnd: 1000, values: { score: 1, segment: null } },
      ]);
      expect(outcome).toEqual(
        new Map([
          [a.id, null],
          [b.id, null],
        ]),
      );
      const rows = await store().rowsOf("t1", "news", [a.id, b.id, "junk"]);
      expect(rows.sort((x, y) => (x.userId < y.userId ? -1 : 1))).toEqual(
        [
          { userId: a.id, pipeline: "scores", windowEnd: 1000, values: { score: 1, segment: null } },
          { userId: b.id, pipeline: "scores", windowEnd: 1000, values: { score: 3, segment: "x" } },
        ].sort((x, y) => (x.userId < y.userId ? -1 : 1)),
      );
      const logged = await stores().logged();
      expect(logged).toHaveLength(1);
      expect(sortedSubject(logged[0])).toBe(`news\n${[a.id, b.id].sort().join(",")}`);
      expect(await store().rowsOf("t1", "sport", [a.id])).toEqual([]);
      expect(await store().rowsOf("t1", "news", [])).toEqual([]);
    });

    it("merges members on a newer or equal window and refuses an older one as stale", async () => {
      await stores().site("t1", "merge", true);
      const u = await newUser("m@example.com");
      const write = (windowEnd: number, values: Record<string, string | number | boolean | null>) =>
        store().writeBatch("t1", "merge", "p", [{ userId: u.id, windowEnd, values }]);
      await write(100, { a: 1, b: "x", c: true });
      expect(await write(200, { a: 2, b: null })).toEqual(new Map([[u.id, null]]));
      expect(await write(200, { d: 4 })).toEqual(new Map([[u.id, null]]));
      expect(await write(150, { a: 99 })).toEqual(new Map([[u.id, "stale"]]));
      expect(await store().rowsOf("t1", "merge", [u.id])).toEqual([
        { userId: u.id, pipeline: "p", windowEnd: 200, values: { a: 2, c: true, d: 4 } },
      ]);
    });

    it("answers why rows did not land: site not served, user unknown or erased", async () => {
      await stores().site("t1", "dark", false);
      await stores().site("t1", "lit", true);
      const u = await newUser("w@example.com");
      const gone = await newUser("gone@example.com");
      const foreign = await newUser("f@example.com", "t2");
      await stores().identity.erase(gone.id, new Date());
      const ghost = randomUUID();
      const before = (await stores().logged()).length;
      expect(await store().writeBatch("t1", "dark", "p", [{ userId: u.id, windowEnd: 1, values: {} }])).toEqual(
        new Map([[u.id, "unknown_site"]]),
      );
      expect(await store().writeBatch("t1", "nowhere", "p", [{ userId: u.id, windowEnd: 1, values: {} }])).toEqual(
        new Map([[u.id, "unknown_site"]]),
      );
      const mixed = await store().writeBatch("t1", "lit", "p", [
        { userId: ghost, windowEnd: 1, values: {} },
        { userId: gone.id, windowEnd: 1, values: {} },
        { userId: foreign.id, windowEnd: 1, values: {} },
      ]);
      expect(mixed).toEqual(
        new Map([
          [ghost, "unknown_user"],
          [gone.id, "erased"],
          [foreign.id, "unknown_user"],
        ]),
      );
      expect(await stores().logged()).toHaveLength(before);
    });

    it("erases a user's values at every site of the tenant, and an identity erase drops them too", async () => {
      await stores().site("t1", "e1", true);
      await stores().site("t1", "e2", true);
      const u = await newUser("e@example.com");
      const v = await newUser("v@example.com");
      for (const site of ["e1", "e2"])
        await store().writeBatch("t1", site, "p", [
          { userId: u.id, windowEnd: 1, values: { x: 1 } },
          { userId: v.id, windowEnd: 1, values: { x: 2 } },
        ]);
      await store().eraseUser("t2", u.id);
      expect(await store().rowsOf("t1", "e1", [u.id])).toHaveLength(1);
      await store().eraseUser("t1", u.id);
      expect(await store().rowsOf("t1", "e1", [u.id])).toEqual([]);
      expect(await store().rowsOf("t1", "e2", [u.id])).toEqual([]);
      expect(await store().rowsOf("t1", "e2", [v.id])).toHaveLength(1);
      await stores().identity.erase(v.id, new Date());
      expect(await store().rowsOf("t1", "e2", [v.id])).toEqual([]);
    });
  },
);
