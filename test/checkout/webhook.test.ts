import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { sql } from "drizzle-orm";
import { rowsOf } from "../../db/client";
import { storeKinds } from "../helpers/databases";
import { signIn } from "../helpers/sign-in";
import { type CheckoutWorld, ORIGIN, startCheckoutWorld } from "./setup";

const DAY = 86_400_000;

describe.each(storeKinds)("checkout webhook: from the paywall to a grant and back (%s store)", (kind) => {
  let w: CheckoutWorld;
  beforeAll(async () => {
    w = await startCheckoutWorld(kind);
  }, 60_000);
  afterAll(async () => {
    await w.stop();
  }, 60_000);

  const seconds = () => Math.floor(w.h.clock.now() / 1000);
  const webhookUrl = () => `${w.base}/v1/checkout/webhook`;

  /** The browser decide, over the socket, with the reader's cookies. */
  const browserDecide = async (cookie: string) => {
    const res = await fetch(`${w.base}/svc/v1/decide`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-site-id": "news", origin: ORIGIN, cookie },
      body: JSON.stringify({ features: ["paywall"] }),
    });
    expect(res.status).toBe(200);
    return (await res.json()) as {
      decisions: { paywall: { outcome: string; type: string; fields?: Record<string, unknown> } };
    };
  };
  /** The keyed decide for a user id (server to server): reads grants through the change feed. */
  const keyedVerdict = async (userId: string) => {
    const res = await w.h.request("POST", "/v1/decide", {
      headers: { "x-svc-site-id": "news", "x-api-key": w.key },
      body: { features: ["paywall"], userId },
    });
    return ((await res.json()) as { decisions: { paywall: { type: string } } }).decisions.paywall.type;
  };
  const startCheckout = async (body: Record<string, unknown>, cookie?: string) => {
    const before = w.stripe.sessions.length;
    const res = await fetch(`${w.base}/svc/v1/checkout`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-svc-site-id": "news",
        origin: ORIGIN,
        ...(cookie ? { cookie } : {}),
      },
      body: JSON.stringify(body),
    });
    expect(res.status).toBe(200);
    const session = w.stripe.sessions[before];
    if (session === undefined) throw new Error("no session reached the fake provider");
    expect(((await res.json()) as { url: string }).url).toContain(session.id);
    return session.id;
  };
  /** `checkout.session.completed` as Stripe sends it for a paid session. */
  const completed = (sessionId: string, extra: Record<string, unknown>) =>
    w.stripe.event(
      "checkout.session.completed",
      {
        id: sessionId,
        object: "checkout.session",
        status: "complete",
        payment_status: "paid",
        ...extra,
      },
      seconds(),
    );
  const grantsOf = async (userId: string) => {
    const res = await w.h.admin("GET", `/admin/tenants/default/users/${userId}/grants`);
    return ((await res.json()) as { grants: { grant: string; expiresAt: string | null }[] }).grants;
  };
  /** A fresh access cookie from the session (what the browser's refresh does). */
  const refreshed = async (reader: Awaited<ReturnType<typeof signIn>>) => {
    const sessionCookie = reader.cookie.split("; ").find((c) => c.startsWith("svc.session_token=")) as string;
    const res = await w.h.request("GET", "/v1/id/get-session", {
      headers: { "x-svc-site-id": "news", cookie: sessionCookie },
    });
    expect(res.status).toBe(200);
    const access = res.headers
      .getSetCookie()
      .find((c) => c.startsWith("svc.access="))
      ?.split(";")[0] as string;
    expect(access).toBeDefined();
    return `${sessionCookie}; ${access}`;
  };
  const eventCount = async () =>
    Number(
      rowsOf<{ n: number }>(await w.db.db.execute(sql`select count(*)::int as n from checkout_events`))[0]?.n ?? 0,
    );

  it("a reader denied by the paywall buys the annual offer; the signed completion lets their next decide through", async () => {
    const reader = await signIn(w.h, w.box, "buyer@example.com");
    const denied = await browserDecide(reader.cookie);
    expect(denied.decisions.paywall.type).toBe("deny");
    expect(denied.decisions.paywall.fields?.checkoutOffer).toBe("offer_annual");
    expect(await keyedVerdict(reader.userId)).toBe("deny");

    const sessionId = await startCheckout(
      { offer: denied.decisions.paywall.fields?.checkoutOffer, returnPath: "/welcome", cancelPath: "/article/1" },
      reader.cookie,
    );
    const delivery = await w.stripe.deliver(
      webhookUrl(),
      completed(sessionId, {
        mode: "subscription",
        customer: "cus_buyer",
        subscription: "sub_buyer",
        customer_details: { email: "buyer@example.com" },
      }),
      seconds(),
    );
    expect(delivery.status).toBe(200);
    expect(await delivery.json()).toEqual({ received: true, duplicate: false });

    // The change feed told decide at once (this process applies its own changes when publishing).
    expect(await keyedVerdict(reader.userId)).toBe("allow");
    expect(await grantsOf(reader.userId)).toEqual([{ grant: "premium", expiresAt: null }]);
    // The browser's old access cookie predates the grant; its next refresh carries it.
    expect((await browserDecide(reader.cookie)).decisions.paywall.type).toBe("deny");
    const fresh = await refreshed(reader);
    expect((await browserDecide(fresh)).decisions.paywall.outcome).toBe("subscriber");

    // Cancelling the subscription revokes the grant.
    const cancelled = await w.stripe.deliver(
      webhookUrl(),
      w.stripe.event(
        "customer.subscription.deleted",
        { id: "sub_buyer", object: "subscription", customer: "cus_buyer", status: "canceled" },
        seconds(),
      ),
      seconds(),
    );
    expect(cancelled.status).toBe(200);
    expect(await keyedVerdict(reader.userId)).toBe("deny");
    expect(await grantsOf(reader.userId)).toEqual([]);
    expect((await browserDecide(await refreshed(reader))).decisions.paywall.type).toBe("deny");
  });

  it("a signed-out reader's one-time pass goes to a new user by address, expires with the offer, and a refund revokes it", async () => {
    const email = "walk-in@example.com";
    const sessionId = await startCheckout({ offer: "offer_pass", returnPath: "/thanks", cancelPath: "/", email });
    const event = completed(sessionId, {
      mode: "payment",
      customer: "cus_walkin",
      payment_intent: "pi_walkin",
      customer_email: email,
      customer_details: { email: "Walk-In@Example.com" },
    });
    expect((await w.stripe.deliver(webhookUrl(), event, seconds())).status).toBe(200);
    const found = rowsOf<{ id: string }>(
      await w.db.db.execute(sql`select id from users where tenant_id = 'default' and email = ${email}`),
    );
    const userId = found[0]?.id as string;
    expect(userId).toBeDefined();
    expect(await grantsOf(userId)).toEqual([
      { grant: "premium", expiresAt: new Date(event.created * 1000 + 30 * DAY).toISOString() },
    ]);
    expect(await keyedVerdict(userId)).toBe("allow");

    // A partial refund changes nothing; a full refund of that payment revokes.
    const partial = w.stripe.event(
      "charge.refunded",
      { id: "ch_1", object: "charge", payment_intent: "pi_walkin", customer: "cus_walkin", refunded: false },
      seconds(),
    );
    expect((await w.stripe.deliver(webhookUrl(), partial, seconds())).status).toBe(200);
    expect(await keyedVerdict(userId)).toBe("allow");
    const refund = w.stripe.event(
      "charge.refunded",
      { id: "ch_1", object: "charge", payment_intent: "pi_walkin", customer: "cus_walkin", refunded: true },
      seconds(),
    );
    expect((await w.stripe.deliver(webhookUrl(), refund, seconds())).status).toBe(200);
    expect(await keyedVerdict(userId)).toBe("deny");
    expect(await grantsOf(userId)).toEqual([]);
  });

  it("grants an existing user found by the completed session's address", async () => {
    const existing = await w.h.admin("POST", "/admin/tenants/default/users", { email: "known@example.com" });
    const userId = ((await existing.json()) as { user: { id: string } }).user.id;
    const sessionId = await startCheckout({
      offer: "offer_pass",
      returnPath: "/thanks",
      cancelPath: "/",
      email: "known@example.com",
    });
    const event = completed(sessionId, {
      payment_intent: "pi_known",
      customer_details: { email: "known@example.com" },
    });
    expect((await w.stripe.deliver(webhookUrl(), event, seconds())).status).toBe(200);
    expect((await grantsOf(userId)).map((g) => g.grant)).toEqual(["premium"]);
  });

  it("a forged, tampered, unsigned or stale delivery is refused (400) and changes nothing", async () => {
    const reader = await signIn(w.h, w.box, "target@example.com");
    const sessionId = await startCheckout({ offer: "offer_annual", returnPath: "/w", cancelPath: "/c" }, reader.cookie);
    const event = completed(sessionId, { subscription: "sub_target", customer: "cus_target" });
    const events = await eventCount();

    const forged = await w.stripe.deliver(webhookUrl(), event, seconds(), "whsec_not_the_tenants_secret");
    expect(forged.status).toBe(400);
    expect(((await forged.json()) as { error: { code: string } }).error.code).toBe("invalid_signature");

    const signed = await w.stripe.signedDelivery(event, seconds());
    const tampered = signed.body.replace('"payment_status": "paid"', '"payment_status": "paid", "x": 1');
    expect(tampered).not.toBe(signed.body);
    const tamperedAnswer = await fetch(webhookUrl(), { method: "POST", headers: signed.headers, body: tampered });
    expect(tamperedAnswer.status).toBe(400);

    const unsigned = await fetch(webhookUrl(), {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: signed.body,
    });
    expect(unsigned.status).toBe(400);

    // Validly signed, but six minutes old: a replay of a captured delivery.
    const stale = await w.stripe.deliver(webhookUrl(), event, seconds() - 360);
    expect(stale.status).toBe(400);

    // An API key is a credential of another kind: refused, never reinterpreted.
    const keyed = await fetch(webhookUrl(), {
      method: "POST",
      headers: { ...signed.headers, "x-api-key": w.key },
      body: signed.body,
    });
    expect(keyed.status).toBe(401);

    expect(await eventCount()).toBe(events);
    expect(await grantsOf(reader.userId)).toEqual([]);
    expect(await keyedVerdict(reader.userId)).toBe("deny");
  });

  it("applies an event once: a redelivery answers duplicate and cannot undo a later revocation", async () => {
    const reader = await signIn(w.h, w.box, "twice@example.com");
    const sessionId = await startCheckout({ offer: "offer_annual", returnPath: "/w", cancelPath: "/c" }, reader.cookie);
    const event = completed(sessionId, { subscription: "sub_twice", customer: "cus_twice" });
    const first = await w.stripe.deliver(webhookUrl(), event, seconds());
    expect(await first.json()).toEqual({ received: true, duplicate: false });
    const cancel = w.stripe.event(
      "customer.subscription.deleted",
      { id: "sub_twice", object: "subscription" },
      seconds(),
    );
    expect((await w.stripe.deliver(webhookUrl(), cancel, seconds())).status).toBe(200);
    expect(await keyedVerdict(reader.userId)).toBe("deny");
    const events = await eventCount();

    // The completion delivered again (freshly signed, as Stripe retries): nothing changes.
    const again = await w.stripe.deliver(webhookUrl(), event, seconds());
    expect(again.status).toBe(200);
    expect(await again.json()).toEqual({ received: true, duplicate: true });
    expect(await eventCount()).toBe(events);
    expect(await keyedVerdict(reader.userId)).toBe("deny");
    expect(await grantsOf(reader.userId)).toEqual([]);
  });

  it("applies an event once when two deliveries of it race", async () => {
    const reader = await signIn(w.h, w.box, "race@example.com");
    const sessionId = await startCheckout({ offer: "offer_annual", returnPath: "/w", cancelPath: "/c" }, reader.cookie);
    const event = completed(sessionId, { subscription: "sub_race", customer: "cus_race" });
    const events = await eventCount();
    const answers = await Promise.all([
      w.stripe.deliver(webhookUrl(), event, seconds()),
      w.stripe.deliver(webhookUrl(), event, seconds()),
    ]);
    expect(answers.map((r) => r.status)).toEqual([200, 200]);
    const bodies = (await Promise.all(answers.map((r) => r.json()))) as { duplicate: boolean }[];
    expect(bodies.map((b) => b.duplicate).sort()).toEqual([false, true]);
    expect(await eventCount()).toBe(events + 1);
    expect(await grantsOf(reader.userId)).toEqual([{ grant: "premium", expiresAt: null }]);
  });

  it("a cancellation or refund delivered before its completion still wins: the late completion grants nothing", async () => {
    const reader = await signIn(w.h, w.box, "early-cancel@example.com");
    const sessionId = await startCheckout({ offer: "offer_annual", returnPath: "/w", cancelPath: "/c" }, reader.cookie);
    const cancel = w.stripe.event(
      "customer.subscription.deleted",
      { id: "sub_early", object: "subscription" },
      seconds(),
    );
    expect((await w.stripe.deliver(webhookUrl(), cancel, seconds())).status).toBe(200);
    const late = completed(sessionId, { subscription: "sub_early", customer: "cus_early" });
    expect(await (await w.stripe.deliver(webhookUrl(), late, seconds())).json()).toEqual({
      received: true,
      duplicate: false,
    });
    expect(await grantsOf(reader.userId)).toEqual([]);
    expect(await keyedVerdict(reader.userId)).toBe("deny");

    const passSession = await startCheckout({
      offer: "offer_pass",
      returnPath: "/w",
      cancelPath: "/c",
      email: "early-refund@example.com",
    });
    const refund = w.stripe.event(
      "charge.refunded",
      { id: "ch_early", object: "charge", payment_intent: "pi_early", refunded: true },
      seconds(),
    );
    expect((await w.stripe.deliver(webhookUrl(), refund, seconds())).status).toBe(200);
    const paid = completed(passSession, {
      payment_intent: "pi_early",
      customer_details: { email: "early-refund@example.com" },
    });
    expect((await w.stripe.deliver(webhookUrl(), paid, seconds())).status).toBe(200);
    const buyers = rowsOf<{ id: string }>(
      await w.db.db.execute(sql`select id from users where email = 'early-refund@example.com'`),
    );
    expect(buyers).toEqual([]);
  });

  it("a refund of one purchase leaves the grant another live purchase confers, and touches no other purchase", async () => {
    const reader = await signIn(w.h, w.box, "two-offers@example.com");
    const annual = await startCheckout({ offer: "offer_annual", returnPath: "/w", cancelPath: "/c" }, reader.cookie);
    const pass = await startCheckout({ offer: "offer_pass", returnPath: "/w", cancelPath: "/c" }, reader.cookie);
    for (const event of [
      completed(annual, { subscription: "sub_two", customer: "cus_two" }),
      completed(pass, { payment_intent: "pi_two", customer: "cus_two" }),
    ]) {
      expect((await w.stripe.deliver(webhookUrl(), event, seconds())).status).toBe(200);
    }
    // The subscription's open-ended grant is not shortened by the pass.
    expect(await grantsOf(reader.userId)).toEqual([{ grant: "premium", expiresAt: null }]);
    const refund = w.stripe.event(
      "charge.refunded",
      { id: "ch_two", object: "charge", payment_intent: "pi_two", customer: "cus_two", refunded: true },
      seconds(),
    );
    expect((await w.stripe.deliver(webhookUrl(), refund, seconds())).status).toBe(200);
    expect(await keyedVerdict(reader.userId)).toBe("allow");
    const cancel = w.stripe.event(
      "customer.subscription.deleted",
      { id: "sub_two", object: "subscription" },
      seconds(),
    );
    expect((await w.stripe.deliver(webhookUrl(), cancel, seconds())).status).toBe(200);
    expect(await keyedVerdict(reader.userId)).toBe("deny");
    expect(await grantsOf(reader.userId)).toEqual([]);
  });

  it("cancelling a subscription while a one-time pass is live leaves the grant until the pass ends", async () => {
    const reader = await signIn(w.h, w.box, "sub-and-pass@example.com");
    const annual = await startCheckout({ offer: "offer_annual", returnPath: "/w", cancelPath: "/c" }, reader.cookie);
    const pass = await startCheckout({ offer: "offer_pass", returnPath: "/w", cancelPath: "/c" }, reader.cookie);
    const passEvent = completed(pass, { payment_intent: "pi_sp", customer: "cus_sp" });
    for (const event of [completed(annual, { subscription: "sub_sp", customer: "cus_sp" }), passEvent]) {
      expect((await w.stripe.deliver(webhookUrl(), event, seconds())).status).toBe(200);
    }
    const cancel = w.stripe.event("customer.subscription.deleted", { id: "sub_sp", object: "subscription" }, seconds());
    expect((await w.stripe.deliver(webhookUrl(), cancel, seconds())).status).toBe(200);
    expect(await grantsOf(reader.userId)).toEqual([
      { grant: "premium", expiresAt: new Date(passEvent.created * 1000 + 30 * DAY).toISOString() },
    ]);
    expect(await keyedVerdict(reader.userId)).toBe("allow");
  });

  it("acknowledges events it does not act on, and a completion for a session it never started grants nothing", async () => {
    const other = w.stripe.event("invoice.paid", { id: "in_1", object: "invoice" }, seconds());
    expect((await w.stripe.deliver(webhookUrl(), other, seconds())).status).toBe(200);
    const foreign = completed("cs_test_not_ours", { customer_details: { email: "stranger@example.com" } });
    expect((await w.stripe.deliver(webhookUrl(), foreign, seconds())).status).toBe(200);
    const strangers = rowsOf<{ id: string }>(
      await w.db.db.execute(sql`select id from users where email = 'stranger@example.com'`),
    );
    expect(strangers).toEqual([]);
  });

  it("waits for a delayed payment: an unpaid completion grants nothing until async_payment_succeeded", async () => {
    const reader = await signIn(w.h, w.box, "slowpay@example.com");
    const sessionId = await startCheckout({ offer: "offer_annual", returnPath: "/w", cancelPath: "/c" }, reader.cookie);
    const unpaid = w.stripe.event(
      "checkout.session.completed",
      { id: sessionId, object: "checkout.session", status: "complete", payment_status: "unpaid" },
      seconds(),
    );
    expect((await w.stripe.deliver(webhookUrl(), unpaid, seconds())).status).toBe(200);
    expect(await keyedVerdict(reader.userId)).toBe("deny");
    const succeeded = w.stripe.event(
      "checkout.session.async_payment_succeeded",
      { id: sessionId, object: "checkout.session", payment_status: "paid", subscription: "sub_slow" },
      seconds(),
    );
    expect((await w.stripe.deliver(webhookUrl(), succeeded, seconds())).status).toBe(200);
    expect(await keyedVerdict(reader.userId)).toBe("allow");
  });

  it("refuses an empty delivery with no signature (400) and records nothing", async () => {
    const events = await eventCount();
    const res = await w.h.request("POST", "/v1/checkout/webhook", { headers: {}, rawBody: "" });
    expect(res.status).toBe(400);
    expect(await eventCount()).toBe(events);
  });
});
