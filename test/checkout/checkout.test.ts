import { afterAll, beforeAll, describe, expect, it } from "bun:test";
import { freshDatabase, storeKinds } from "../helpers/databases";
import { startHarness } from "../helpers/harness";
import { signIn } from "../helpers/sign-in";
import { type CheckoutWorld, everyStoredRow, ORIGIN, SECRET_KEY, startCheckoutWorld } from "./setup";

const valid = { offer: "offer_annual", returnPath: "/welcome?from=paywall", cancelPath: "/article/1" };

describe.each(storeKinds)("POST /svc/v1/checkout (%s store)", (kind) => {
  let w: CheckoutWorld;
  let reader: Awaited<ReturnType<typeof signIn>>;

  beforeAll(async () => {
    w = await startCheckoutWorld(kind);
    reader = await signIn(w.h, w.box, "reader@example.com");
  }, 60_000);
  afterAll(async () => {
    await w.stop();
  }, 60_000);

  const checkout = (body: unknown, headers: Record<string, string> = {}) =>
    w.h.request("POST", "/svc/v1/checkout", {
      headers: { "x-svc-site-id": "news", origin: ORIGIN, ...headers },
      body,
    });
  const errorOf = async (res: Response) => ((await res.json()) as { error: { code: string; details?: unknown } }).error;

  it("creates a provider session for the signed-in reader and answers its URL", async () => {
    const before = w.stripe.sessions.length;
    const res = await checkout(valid, { cookie: reader.cookie });
    expect(res.status).toBe(200);
    expect(res.headers.get("access-control-allow-origin")).toBe(ORIGIN);
    expect(res.headers.get("access-control-allow-credentials")).toBe("true");
    const { url } = (await res.json()) as { url: string };
    const created = w.stripe.sessions[before];
    expect(created).toBeDefined();
    expect(url).toBe(`https://checkout.stripe.test/c/pay/${created?.id}`);
    // Form-encoded as Stripe takes it, under the tenant's secret key.
    expect(created?.authorization).toBe(`Bearer ${SECRET_KEY}`);
    expect(created?.form).toMatchObject({
      mode: "subscription",
      "line_items[0][price]": "price_annual",
      "line_items[0][quantity]": "1",
      success_url: "https://news.example/welcome?from=paywall",
      cancel_url: "https://news.example/article/1",
      customer_email: "reader@example.com",
      client_reference_id: reader.userId,
      "metadata[svc_site]": "news",
      "metadata[svc_offer]": "offer_annual",
    });
    const rows = await everyStoredRow(w);
    expect(rows).toContain(created?.id as string);
  });

  it("takes a signed-out reader's email, and a one-time offer in payment mode", async () => {
    const before = w.stripe.sessions.length;
    const res = await checkout({
      offer: "offer_pass",
      returnPath: "/thanks",
      cancelPath: "/",
      email: "anon@example.com",
    });
    expect(res.status).toBe(200);
    expect(w.stripe.sessions[before]?.form).toMatchObject({
      mode: "payment",
      "line_items[0][price]": "price_pass",
      customer_email: "anon@example.com",
    });
    expect(w.stripe.sessions[before]?.form.client_reference_id).toBeUndefined();
  });

  it("refuses stray members at the top level and nested (400), never calling the provider, logging or storing them", async () => {
    const before = w.stripe.sessions.length;
    const linesBefore = w.h.logger.lines.length;
    const topLevel = await fetch(`${w.base}/svc/v1/checkout`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-site-id": "news", origin: ORIGIN, cookie: reader.cookie },
      // A stray member whose name is the card number, as well as one whose value is.
      body: JSON.stringify({
        ...valid,
        cardNumber: "4242424242424242-TOPLEVEL-MARKER",
        "5555555555554444": "NAME-MARKER",
      }),
    });
    expect(topLevel.status).toBe(400);
    const top = await errorOf(topLevel);
    expect(top.code).toBe("bad_request");
    // A fixed pointer to the parent and the rule: never the member's own name.
    expect(top.details).toEqual([
      { path: "/", message: "has a member it does not accept (only offer, returnPath, cancelPath and email)" },
    ]);

    const nested = await fetch(`${w.base}/svc/v1/checkout`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-svc-site-id": "news", origin: ORIGIN },
      body: JSON.stringify({
        ...valid,
        offer: { id: "offer_annual", cvc: "987-NESTED-MARKER", "4000056655665556": { exp: "12/34" } },
        email: "x@example.com",
      }),
    });
    expect(nested.status).toBe(400);
    const inner = await errorOf(nested);
    expect(inner.details).toEqual([
      { path: "/offer", message: "holds members it does not accept (it must be a string)" },
    ]);
    const answered = JSON.stringify([top, inner]);
    expect(answered).not.toContain("MARKER");
    for (const card of ["5555555555554444", "4000056655665556", "cvc", "cardNumber"]) {
      expect(answered).not.toContain(card);
    }

    expect(w.stripe.sessions.length).toBe(before);
    const logged = w.h.logger.lines.slice(linesBefore).join("\n");
    // The access log did write these requests (so the check below can fail), without their bodies.
    expect(logged).toContain("/svc/v1/checkout");
    expect(logged).not.toContain("MARKER");
    expect(logged).not.toContain("4242424242424242");
    expect(logged).not.toContain("5555555555554444");
    const stored = await everyStoredRow(w);
    expect(stored).not.toContain("MARKER");
    expect(stored).not.toContain("4242424242424242");
    expect(stored).not.toContain("5555555555554444");
  });

  it("refuses a wrong shape with 422 and the failing paths, never echoing a value", async () => {
    const res = await checkout(
      { ...valid, returnPath: "https://evil.example/VALUE-MARKER" },
      { cookie: reader.cookie },
    );
    expect(res.status).toBe(422);
    const text = await res.text();
    expect(text).toContain("/returnPath");
    expect(text).not.toContain("VALUE-MARKER");
    const scheme = await checkout({ ...valid, cancelPath: "//evil.example/x" }, { cookie: reader.cookie });
    expect(scheme.status).toBe(422);
    const notObject = await checkout(["offer_annual"], { cookie: reader.cookie });
    expect(notObject.status).toBe(422);
  });

  it("is not served under /v1", async () => {
    const res = await w.h.request("POST", "/v1/checkout", {
      headers: { "x-svc-site-id": "news", origin: ORIGIN, cookie: reader.cookie },
      body: valid,
    });
    expect(res.status).toBe(404);
  });

  it("answers a preflight from an allowed origin and refuses another origin (403) or an API key (401)", async () => {
    const preflight = await w.h.request("OPTIONS", "/svc/v1/checkout", {
      headers: { origin: ORIGIN, "access-control-request-method": "POST" },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-methods")).toContain("POST");
    expect((await checkout(valid, { origin: "https://evil.example", cookie: reader.cookie })).status).toBe(403);
    expect((await checkout(valid, { origin: "", cookie: reader.cookie })).status).toBe(403);
    expect((await checkout(valid, { "x-api-key": w.key })).status).toBe(401);
    expect((await w.h.request("POST", "/svc/v1/checkout", { headers: { origin: ORIGIN }, body: valid })).status).toBe(
      400,
    );
    expect((await checkout(valid, { "x-svc-site-id": "nope" })).status).toBe(404);
  });

  it("knows who buys: email refused when signed in (400), required when signed out (422), a refresh asked for with a bare session (401)", async () => {
    const signedInEmail = await checkout({ ...valid, email: "other@example.com" }, { cookie: reader.cookie });
    expect(signedInEmail.status).toBe(400);
    const noEmail = await checkout(valid);
    expect(noEmail.status).toBe(422);
    expect(JSON.stringify(await errorOf(noEmail))).toContain("/email");
    const sessionOnly = reader.cookie.split("; ").find((c) => c.startsWith("svc.session_token=")) as string;
    expect((await checkout(valid, { cookie: sessionOnly })).status).toBe(401);
  });

  it("answers 404 for an offer that is not in the catalog or cannot be bought", async () => {
    expect((await checkout({ ...valid, offer: "offer_missing" }, { cookie: reader.cookie })).status).toBe(404);
    expect((await checkout({ ...valid, offer: "brochure" }, { cookie: reader.cookie })).status).toBe(404);
  });

  it("answers 503 with Retry-After when the provider is down, rate-limits or times out", async () => {
    for (const mode of ["down", "rate-limited", "hang"] as const) {
      w.stripe.setMode(mode);
      const res = await checkout(valid, { cookie: reader.cookie });
      expect({ mode, status: res.status }).toEqual({ mode, status: 503 });
      expect(res.headers.get("retry-after")).toMatch(/^[1-9][0-9]*$/);
      expect((await errorOf(res)).code).toBe("payment_provider_unavailable");
    }
    w.stripe.setMode("ok");
    expect((await checkout(valid, { cookie: reader.cookie })).status).toBe(200);
  });

  it("answers 503 without Retry-After when the provider refuses our settings (an unknown price)", async () => {
    const doc = (await import("../fixtures/documents")).checkoutDocument();
    (doc.catalog.offer_annual.checkout as { price: string }).price = "price_retired";
    expect((await w.h.admin("POST", "/admin/tenants/default/sites/news/deploy", { document: doc })).status).toBe(200);
    try {
      const res = await checkout(valid, { cookie: reader.cookie });
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBeNull();
    } finally {
      const back = (await import("../fixtures/documents")).checkoutDocument();
      await w.h.admin("POST", "/admin/tenants/default/sites/news/deploy", { document: back });
    }
  });

  it("refuses more than 20 checkouts a minute from one browser (429 with Retry-After)", async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 22; i++) {
      const res = await fetch(`${w.base}/svc/v1/checkout`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-svc-site-id": "news", origin: ORIGIN, cookie: reader.cookie },
        body: JSON.stringify(valid),
      });
      statuses.push(res.status);
      expect(res.headers.get("ratelimit-policy")).toBe('"checkout";q=20;w=60');
      const left = /^"checkout";r=(\d+);t=(\d+)$/.exec(res.headers.get("ratelimit") ?? "");
      expect(left).not.toBeNull();
      if (res.status === 429) {
        expect(Number(res.headers.get("retry-after"))).toBeGreaterThan(0);
        expect(left?.[1]).toBe("0");
      }
    }
    expect(statuses.filter((s) => s === 429).length).toBeGreaterThan(0);
    w.h.clock.advance(61_000);
  });
});

describe("checkout without a payment provider", () => {
  it("answers 503 without Retry-After, on the route and on the webhook", async () => {
    const db = await freshDatabase("embedded");
    const h = await startHarness(db);
    try {
      const { seedSite } = await import("../helpers/harness");
      const { checkoutDocument } = await import("../fixtures/documents");
      await seedSite(h, "news", checkoutDocument());
      const res = await h.request("POST", "/svc/v1/checkout", {
        headers: { "x-svc-site-id": "news", origin: ORIGIN },
        body: { ...valid, email: "a@example.com" },
      });
      expect(res.status).toBe(503);
      expect(res.headers.get("retry-after")).toBeNull();
      const hook = await h.request("POST", "/v1/checkout/webhook", {
        headers: { "stripe-signature": "t=1,v1=00" },
        rawBody: "{}",
      });
      expect(hook.status).toBe(503);
      expect(hook.headers.get("retry-after")).toBeNull();
    } finally {
      await h.stop();
      await db.drop();
    }
  }, 60_000);
});
