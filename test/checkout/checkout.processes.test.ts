import { afterAll, describe, expect, it } from "bun:test";
import { checkoutDocument } from "../fixtures/documents";
import { storeKinds } from "../helpers/databases";
import { type FakeStripe, startFakeStripe } from "../helpers/fake-stripe";
import { type Harness, seedSite } from "../helpers/harness";
import { within } from "../helpers/second-process";
import { twoProcesses } from "../helpers/worlds";
import { connectStripe, ORIGIN } from "./setup";

/**
 * Two processes' worth of state over one store: A starts the checkout and takes the provider's
 * webhook; B serves decide and learns of the grant through the change feed (its own poll or
 * NOTIFY), within a second.
 */
describe.each(storeKinds)("a checkout's grant across processes (%s store)", (kind) => {
  let key: string;
  let stripe: FakeStripe;
  const w = twoProcesses(kind, async (a) => {
    ({ key } = await seedSite(a, "news", checkoutDocument()));
    stripe = await startFakeStripe({
      secretKey: "sk_test_checkout_0123456789",
      webhookSecret: "whsec_test_checkout_0123456789",
      prices: ["price_annual", "price_pass"],
    });
    await connectStripe(a, stripe);
  });
  afterAll(async () => {
    await stripe?.stop();
  }, 60_000);

  const verdictOn = async (h: Harness, userId: string) => {
    const res = await h.request("POST", "/v1/decide", {
      headers: { "x-svc-site-id": "news", "x-api-key": key },
      body: { features: ["paywall"], userId },
    });
    return ((await res.json()) as { decisions: { paywall: { type: string } } }).decisions.paywall.type;
  };
  const deliver = async (event: unknown) => {
    const { body, headers } = await stripe.signedDelivery(event, Math.floor(w.a.clock.now() / 1000));
    return w.a.request("POST", "/v1/checkout/webhook", { headers, rawBody: body });
  };

  it("a completion taken by one process lets the reader through on another within a second, and a refund takes it back", async () => {
    // The operator's create answers the same user for the address the completion carries.
    const found = await w.a.admin("POST", "/admin/tenants/default/users", { email: "elsewhere@example.com" });
    const userId = ((await found.json()) as { user: { id: string } }).user.id;
    // B has read (and holds) this reader's facts before the purchase.
    expect(await verdictOn(w.b, userId)).toBe("deny");
    const before = stripe.sessions.length;
    const started = await w.a.request("POST", "/svc/v1/checkout", {
      headers: { "x-svc-site-id": "news", origin: ORIGIN },
      body: { offer: "offer_pass", returnPath: "/thanks", cancelPath: "/", email: "elsewhere@example.com" },
    });
    expect(started.status).toBe(200);
    const sessionId = stripe.sessions[before]?.id as string;
    const created = Math.floor(w.a.clock.now() / 1000);
    const completion = stripe.event(
      "checkout.session.completed",
      {
        id: sessionId,
        object: "checkout.session",
        payment_status: "paid",
        payment_intent: "pi_elsewhere",
        customer_details: { email: "elsewhere@example.com" },
      },
      created,
    );
    expect((await deliver(completion)).status).toBe(200);
    expect(await verdictOn(w.a, userId)).toBe("allow");
    await within(1000, async () => (await verdictOn(w.b, userId)) === "allow");

    const refund = stripe.event(
      "charge.refunded",
      { id: "ch_else", object: "charge", payment_intent: "pi_elsewhere", refunded: true },
      created,
    );
    expect((await deliver(refund)).status).toBe(200);
    await within(1000, async () => (await verdictOn(w.b, userId)) === "deny");
  });
  it.if(kind === "server")(
    "admits exactly 20 of one browser's checkouts a minute, however they are spread over both",
    async () => {
      // A fresh minute on both clocks (B's follows A's).
      const next = (Math.floor(w.a.clock.now() / 60_000) + 1) * 60_000 + 500;
      w.a.clock.set(next);
      w.b.clock.set(next);
      const statuses = await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          (i % 2 === 0 ? w.a : w.b).request("POST", "/svc/v1/checkout", {
            headers: { "x-svc-site-id": "news", origin: ORIGIN },
            body: { offer: "offer_pass", returnPath: "/thanks", cancelPath: "/", email: `spread-${i}@example.com` },
          }),
        ),
      );
      const count = (status: number) => statuses.filter((r) => r.status === status).length;
      expect(count(200)).toBe(20);
      expect(count(429)).toBe(10);
      expect(Number(statuses.find((r) => r.status === 429)?.headers.get("retry-after"))).toBeGreaterThan(0);
    },
    60_000,
  );
});
