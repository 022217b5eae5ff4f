import { expect, it } from "bun:test";
import { randomUUID } from "node:crypto";
import { MemoryNewsletterStore } from "../../src/newsletters/memory-store";
import { type ConsentProof, DrizzleNewsletterStore, type NewsletterStore } from "../../src/newsletters/store";
import { MemoryUserStore } from "../../src/users/memory-store";
import { DrizzleUserStore, type UserStore } from "../../src/users/store";
import { rejects, storeContract } from "../helpers/store-contract";

interface Stores {
  newsletters: NewsletterStore;
  users: UserStore;
}

const NOW = Date.UTC(2026, 10, 26, 12);
const listA = randomUUID();
const listB = randomUUID();
const proof: ConsentProof = {
  confirmedAt: "2026-11-26T12:00:00.000Z",
  client: "203.0.113.9",
  listId: listA,
  mailId: 7,
  requestedAt: "2026-11-26T11:00:00.000Z",
  requestedFrom: "203.0.113.9",
};

storeContract<Stores>(
  "the newsletter store",
  (_kind, db) => {
    if (db === null) {
      const users = new MemoryUserStore();
      return { users, newsletters: new MemoryNewsletterStore(users) };
    }
    return { users: new DrizzleUserStore(db), newsletters: new DrizzleNewsletterStore(db) };
  },
  (stores) => {
    const store = () => stores().newsletters;
    const newUser = async (email: string) => (await stores().users.createUser("t1", email)).user;
    const byList = <T extends { listId: string }>(rows: T[]) =>
      [...rows].sort((a, b) => (a.listId < b.listId ? -1 : a.listId > b.listId ? 1 : 0));

    const confirmation = (userId: string, tokenHash: string) => ({
      tokenHash,
      tenantId: "t1",
      siteId: "news",
      userId,
      listId: listA,
      email: "c@example.com",
      mailId: 3,
      requestedFrom: "203.0.113.9",
      createdAt: new Date(NOW),
      expiresAt: new Date(NOW + 7 * 86_400_000),
    });

    it("writes standings as upserts and reads them per user, all or some lists", async () => {
      const user = await newUser("n1@example.com");
      expect(await store().standings("t1", user.id)).toEqual([]);
      await store().write("t1", user.id, [], NOW);
      await store().write(
        "t1",
        user.id,
        [
          { listId: listA, siteId: "news", status: "pending", pendingUntil: new Date(NOW + 1000) },
          { listId: listB, siteId: "news", status: "subscribed", pendingUntil: null },
        ],
        NOW,
      );
      await store().write(
        "t1",
        user.id,
        [{ listId: listA, siteId: "sport", status: "subscribed", pendingUntil: null }],
        NOW,
        proof,
      );
      const all = byList(await store().standings("t1", user.id));
      expect(all).toEqual(
        byList([
          {
            listId: listA,
            siteId: "sport",
            status: "subscribed",
            pendingUntil: null,
            vendorStatus: null,
            vendorSubscriberId: null,
          },
          {
            listId: listB,
            siteId: "news",
            status: "subscribed",
            pendingUntil: null,
            vendorStatus: null,
            vendorSubscriberId: null,
          },
        ]),
      );
      expect((await store().standings("t1", user.id, [listB])).map((s) => s.listId)).toEqual([listB]);
      expect(await store().standings("t1", user.id, [])).toEqual([]);
      expect(await store().standings("t2", user.id)).toEqual([]);
    });

    it("keeps the pending deadline and the vendor's state across writes", async () => {
      const user = await newUser("n2@example.com");
      const until = new Date(NOW + 60_000);
      await store().write(
        "t1",
        user.id,
        [{ listId: listA, siteId: "news", status: "pending", pendingUntil: until }],
        NOW,
      );
      await store().setVendorState("t1", user.id, listA, "subscribed", "sub-42");
      await store().setVendorState("t1", user.id, listB, "subscribed", "ignored");
      await store().write(
        "t1",
        user.id,
        [{ listId: listA, siteId: "news", status: "unsubscribed", pendingUntil: null }],
        NOW,
      );
      const [row] = await store().standings("t1", user.id);
      expect(row).toEqual({
        listId: listA,
        siteId: "news",
        status: "unsubscribed",
        pendingUntil: null,
        vendorStatus: "subscribed",
        vendorSubscriberId: "sub-42",
      });
    });

    it("reads several users' standings at once, skipping ids that are not uuids", async () => {
      const a = await newUser("n3@example.com");
      const b = await newUser("n4@example.com");
      const until = new Date(NOW + 5000);
      await store().write("t1", a.id, [{ listId: listA, siteId: "news", status: "pending", pendingUntil: until }], NOW);
      await store().write(
        "t1",
        b.id,
        [{ listId: listB, siteId: "news", status: "subscribed", pendingUntil: null }],
        NOW,
      );
      const rows = await store().standingsOfUsers("t1", [a.id, b.id, "junk"]);
      expect(rows.map((r) => [r.userId, r.listId, r.status, r.pendingUntil?.getTime() ?? null]).sort()).toEqual(
        [
          [a.id, listA, "pending", until.getTime()],
          [b.id, listB, "subscribed", null],
        ].sort(),
      );
      expect(await store().standingsOfUsers("t1", ["junk"])).toEqual([]);
      expect(await store().standingsOfUsers("t2", [a.id])).toEqual([]);
    });

    it("refuses a standing or a confirmation for a user that does not exist", async () => {
      const ghost = randomUUID();
      expect(
        await rejects(
          store().write(
            "t1",
            ghost,
            [{ listId: listA, siteId: "news", status: "subscribed", pendingUntil: null }],
            NOW,
          ),
        ),
      ).toBe(true);
      expect(await rejects(store().addConfirmation(confirmation(ghost, "tok-ghost")))).toBe(true);
    });

    it("stores a confirmation link once, in its tenant, and keeps its first use", async () => {
      const user = await newUser("c@example.com");
      await store().addConfirmation(confirmation(user.id, "tok-1"));
      expect(await rejects(store().addConfirmation(confirmation(user.id, "tok-1")))).toBe(true);
      expect(await store().confirmation("t1", "tok-1")).toMatchObject({
        ...confirmation(user.id, "tok-1"),
        confirmedAt: null,
      });
      expect(await store().confirmation("t2", "tok-1")).toBeUndefined();
      expect(await store().confirmation("t1", "tok-none")).toBeUndefined();
      await store().markConfirmed("tok-1", NOW + 10, "198.51.100.1");
      await store().markConfirmed("tok-1", NOW + 20, "198.51.100.2");
      expect((await store().confirmation("t1", "tok-1"))?.confirmedAt?.getTime()).toBe(NOW + 10);
      await store().markConfirmed("tok-none", NOW, "x");
    });
  },
);
