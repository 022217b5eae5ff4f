import { expect, it } from "bun:test";
import { MemoryCheckoutStore } from "../../src/checkout/memory-store";
import {
  type CheckoutStore,
  type CheckoutTx,
  type Completion,
  DrizzleCheckoutStore,
  type NewCheckoutSession,
} from "../../src/checkout/store";
import { MemoryUserStore } from "../../src/users/memory-store";
import { DrizzleUserStore, type UserStore } from "../../src/users/store";
import { rejects, storeContract } from "../helpers/store-contract";

interface Stores {
  checkout: CheckoutStore;
  users: UserStore;
}

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 10, 26, 12);

const session = (id: string, over: Partial<NewCheckoutSession> = {}): NewCheckoutSession => ({
  id,
  tenantId: "t1",
  siteId: "news",
  offer: "monthly",
  grant: "premium",
  mode: "subscription",
  durationMs: null,
  userId: null,
  ...over,
});

const completion = (reader: Completion["reader"], over: Partial<Completion> = {}): Completion => ({
  reader,
  expiresAt: null,
  subscriptionId: null,
  paymentIntentId: null,
  customerId: null,
  at: new Date(T0),
  ...over,
});

storeContract<Stores>(
  "the checkout store",
  (_kind, db) => {
    if (db === null) {
      const users = new MemoryUserStore();
      return { users, checkout: new MemoryCheckoutStore(users) };
    }
    return { users: new DrizzleUserStore(db), checkout: new DrizzleCheckoutStore(db) };
  },
  (stores) => {
    const store = () => stores().checkout;
    const newUser = async (email: string) => (await stores().users.createUser("t1", email)).user;
    let n = 0;
    const event = (subject: string | null = null) => ({
      id: `evt_${++n}`,
      type: "checkout.session.completed",
      subject,
    });
    const completeVia = (sessionId: string, c: Completion | null, subject: string | null = null) =>
      store().applyOnce("t1", event(subject), (tx) => store().complete(tx, "t1", sessionId, () => c));
    const revokeVia = (by: Parameters<CheckoutStore["revoke"]>[2], subject: string | null = null) =>
      store().applyOnce("t1", event(subject), async (tx) => (await store().revoke(tx, "t1", by)).changedUsers);

    it("records a session once, open, and reads it in its tenant only", async () => {
      await store().recordSession(session("cs_1", { durationMs: null }));
      expect(await store().session("t1", "cs_1")).toMatchObject({
        id: "cs_1",
        status: "open",
        grantedUserId: null,
        completedAt: null,
        grant: "premium",
      });
      expect(await store().session("t2", "cs_1")).toBeUndefined();
      expect(await rejects(store().recordSession(session("cs_1")))).toBe(true);
    });

    it("applies an event once however often it is delivered, concurrently too", async () => {
      let runs = 0;
      const e = event();
      const outcomes = await Promise.all(
        Array.from({ length: 4 }, () =>
          store().applyOnce("t1", e, async () => {
            runs++;
            return ["u"];
          }),
        ),
      );
      expect(runs).toBe(1);
      expect(outcomes.filter((o) => !o.duplicate)).toEqual([{ duplicate: false, changedUsers: ["u"] }]);
      expect(await store().applyOnce("t2", e, async () => [])).toEqual({ duplicate: false, changedUsers: [] });
    });

    it("grants an open session to the user or the address named, once", async () => {
      const reader = await newUser("reader@example.com");
      await store().recordSession(session("cs_2"));
      const first = await completeVia(
        "cs_2",
        completion({ userId: reader.id }, { subscriptionId: "sub_2", customerId: "cus_2" }),
      );
      expect(first).toEqual({ duplicate: false, changedUsers: [reader.id] });
      expect(await store().session("t1", "cs_2")).toMatchObject({
        status: "granted",
        grantedUserId: reader.id,
        subscriptionId: "sub_2",
        customerId: "cus_2",
      });
      expect((await store().session("t1", "cs_2"))?.completedAt?.getTime()).toBe(T0);
      expect(await completeVia("cs_2", completion({ userId: reader.id }))).toEqual({
        duplicate: false,
        changedUsers: [],
      });
      expect((await stores().users.listGrants("t1", reader.id)).map((g) => [g.grant, g.expiresAt])).toEqual([
        ["premium", null],
      ]);

      await store().recordSession(session("cs_3", { mode: "payment", durationMs: 30 * DAY }));
      const byEmail = await completeVia(
        "cs_3",
        completion({ email: " New.Reader@example.com" }, { expiresAt: new Date(T0 + 30 * DAY) }),
      );
      const created = await stores().users.createUser("t1", "new.reader@example.com");
      expect(created.created).toBe(false);
      expect(byEmail).toEqual({ duplicate: false, changedUsers: [created.user.id] });
      expect(await completeVia("cs_none", completion({ userId: reader.id }))).toEqual({
        duplicate: false,
        changedUsers: [],
      });
      await store().recordSession(session("cs_4"));
      expect(await completeVia("cs_4", null)).toEqual({ duplicate: false, changedUsers: [] });
      expect((await store().session("t1", "cs_4"))?.status).toBe("open");
    });

    it("never shortens a longer grant already held", async () => {
      const reader = await newUser("long@example.com");
      await stores().users.addGrant("t1", reader.id, "archive", new Date(T0 + 90 * DAY));
      await store().recordSession(session("cs_5", { grant: "archive", mode: "payment", durationMs: 7 * DAY }));
      await completeVia(
        "cs_5",
        completion({ userId: reader.id }, { expiresAt: new Date(T0 + 7 * DAY), paymentIntentId: "pi_5" }),
      );
      const [grant] = await stores().users.listGrants("t1", reader.id);
      expect(grant?.expiresAt?.getTime()).toBe(T0 + 90 * DAY);
    });

    it("applies nothing when the effect fails, so a redelivery applies it", async () => {
      const reader = await newUser("fail@example.com");
      await store().recordSession(session("cs_6"));
      const e = event();
      const failed = await rejects(
        store().applyOnce("t1", e, async (tx: CheckoutTx) => {
          await store().complete(tx, "t1", "cs_6", () => completion({ email: "fresh@example.com" }));
          throw new Error("boom");
        }),
      );
      expect(failed).toBe(true);
      expect((await store().session("t1", "cs_6"))?.status).toBe("open");
      expect((await stores().users.createUser("t1", "fresh@example.com")).created).toBe(true);
      const again = await store().applyOnce("t1", e, (tx) =>
        store().complete(tx, "t1", "cs_6", () => completion({ userId: reader.id })),
      );
      expect(again).toEqual({ duplicate: false, changedUsers: [reader.id] });
    });

    it("grants nothing for a purchase whose cancellation arrived first", async () => {
      const reader = await newUser("late@example.com");
      await revokeVia({ subscriptionId: "sub_7" }, "sub_7");
      await store().recordSession(session("cs_7"));
      expect(await completeVia("cs_7", completion({ userId: reader.id }, { subscriptionId: "sub_7" }))).toEqual({
        duplicate: false,
        changedUsers: [],
      });
      expect(await store().session("t1", "cs_7")).toMatchObject({ status: "revoked", subscriptionId: "sub_7" });
      expect(await stores().users.listGrants("t1", reader.id)).toEqual([]);
    });

    it("revokes a purchase, keeping the grant as long as another live purchase confers it", async () => {
      const reader = await newUser("rev@example.com");
      await store().recordSession(session("cs_8"));
      await store().recordSession(session("cs_9", { mode: "payment", durationMs: 10 * DAY }));
      await completeVia("cs_8", completion({ userId: reader.id }, { subscriptionId: "sub_8", customerId: "cus_8" }));
      await completeVia(
        "cs_9",
        completion({ userId: reader.id }, { paymentIntentId: "pi_9", expiresAt: new Date(T0 + 10 * DAY) }),
      );
      expect((await stores().users.listGrants("t1", reader.id))[0]?.expiresAt).toBeNull();
      expect(await revokeVia({ customerSubscriptions: "cus_8" }, "sub_8")).toEqual({
        duplicate: false,
        changedUsers: [reader.id],
      });
      expect((await store().session("t1", "cs_8"))?.status).toBe("revoked");
      expect((await stores().users.listGrants("t1", reader.id))[0]?.expiresAt?.getTime()).toBe(T0 + 10 * DAY);
      expect(await revokeVia({ paymentIntentId: "pi_9" }, "pi_9")).toEqual({
        duplicate: false,
        changedUsers: [reader.id],
      });
      expect(await stores().users.listGrants("t1", reader.id)).toEqual([]);
      expect(await revokeVia({ paymentIntentId: "pi_9" })).toEqual({ duplicate: false, changedUsers: [] });
    });
  },
);
