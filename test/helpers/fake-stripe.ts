import Stripe from "stripe";

/** What the fake answers checkout-session creation with: as Stripe does, or an outage of a kind. */
export type FakeStripeMode = "ok" | "down" | "rate-limited" | "hang";

export interface CreatedSessionRecord {
  readonly id: string;
  /** The form-encoded request as Stripe receives it (bracketed keys, e.g. `line_items[0][price]`). */
  readonly form: Record<string, string>;
  readonly rawBody: string;
  readonly authorization: string | null;
}

/**
 * A fake Stripe: a real HTTP server on 127.0.0.1 speaking the part of Stripe's API checkout uses.
 * `POST /v1/checkout/sessions` takes the form-encoded request the `stripe` client sends (bearer
 * secret key) and answers the JSON object the client parses; known prices only (else 400
 * `resource_missing`, as Stripe). It also builds webhook deliveries signed as Stripe signs them
 * (the client's own `generateTestHeaderStringAsync`: `t=<seconds>,v1=<HMAC-SHA256 hex>`).
 */
export async function startFakeStripe(options: { secretKey: string; webhookSecret: string; prices: string[] }) {
  let mode: FakeStripeMode = "ok";
  let counter = 0;
  const sessions: CreatedSessionRecord[] = [];
  const hanging: (() => void)[] = [];
  const stripeError = (status: number, type: string, message: string, code?: string) =>
    Response.json({ error: { type, message, ...(code ? { code } : {}) } }, { status });

  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const url = new URL(request.url);
      if (request.method !== "POST" || url.pathname !== "/v1/checkout/sessions") {
        return stripeError(
          404,
          "invalid_request_error",
          `Unrecognized request URL (${request.method}: ${url.pathname}).`,
        );
      }
      const authorization = request.headers.get("authorization");
      if (authorization !== `Bearer ${options.secretKey}`) {
        return stripeError(401, "invalid_request_error", "Invalid API Key provided.");
      }
      if (!request.headers.get("content-type")?.startsWith("application/x-www-form-urlencoded")) {
        return stripeError(400, "invalid_request_error", "Request bodies must be form-encoded.");
      }
      const rawBody = await request.text();
      const form = Object.fromEntries(new URLSearchParams(rawBody));
      if (mode === "down") return stripeError(500, "api_error", "An unknown error occurred.");
      if (mode === "rate-limited") return stripeError(429, "invalid_request_error", "Too many requests.", "rate_limit");
      if (mode === "hang") {
        await new Promise<void>((resolve) => hanging.push(resolve));
        return stripeError(500, "api_error", "released");
      }
      const price = form["line_items[0][price]"];
      if (price === undefined || !options.prices.includes(price)) {
        return stripeError(400, "invalid_request_error", `No such price: '${price}'`, "resource_missing");
      }
      const id = `cs_test_${String(++counter).padStart(6, "0")}${Math.random().toString(36).slice(2, 10)}`;
      sessions.push({ id, form, rawBody, authorization });
      const metadata: Record<string, string> = {};
      for (const [k, v] of Object.entries(form)) {
        const m = /^metadata\[(.+)\]$/.exec(k);
        if (m) metadata[m[1] as string] = v;
      }
      return Response.json({
        id,
        object: "checkout.session",
        livemode: false,
        mode: form.mode,
        status: "open",
        payment_status: "unpaid",
        url: `https://checkout.stripe.test/c/pay/${id}`,
        success_url: form.success_url,
        cancel_url: form.cancel_url,
        customer_email: form.customer_email ?? null,
        client_reference_id: form.client_reference_id ?? null,
        metadata,
        created: Math.floor(Date.now() / 1000),
      });
    },
  });

  let eventCounter = 0;
  return {
    apiBase: `http://127.0.0.1:${server.port}`,
    sessions,
    setMode(next: FakeStripeMode) {
      mode = next;
      if (next !== "hang") for (const release of hanging.splice(0)) release();
    },
    /** An event as Stripe sends it: `{ id, object: "event", type, created, data: { object } }`. */
    event(type: string, object: Record<string, unknown>, createdSeconds: number) {
      return {
        id: `evt_test_${String(++eventCounter).padStart(6, "0")}${Math.random().toString(36).slice(2, 8)}`,
        object: "event",
        api_version: "2025-01-27.acacia",
        created: createdSeconds,
        livemode: false,
        pending_webhooks: 1,
        request: { id: null, idempotency_key: null },
        type,
        data: { object },
      };
    },
    /** The body and headers of one signed delivery, as Stripe posts it (timestamp in seconds). */
    async signedDelivery(event: unknown, timestampSeconds: number, secret = options.webhookSecret) {
      const body = JSON.stringify(event, null, 2);
      const signature = await Stripe.webhooks.generateTestHeaderStringAsync({
        payload: body,
        secret,
        timestamp: timestampSeconds,
      });
      return {
        body,
        headers: { "content-type": "application/json; charset=utf-8", "stripe-signature": signature },
      };
    },
    /** Posts a signed delivery to a real URL, as Stripe does. */
    async deliver(url: string, event: unknown, timestampSeconds: number, secret = options.webhookSecret) {
      const { body, headers } = await this.signedDelivery(event, timestampSeconds, secret);
      return fetch(url, {
        method: "POST",
        headers: { ...headers, "user-agent": "Stripe/1.0 (+https://stripe.com/docs/webhooks)" },
        body,
      });
    },
    stop: async () => {
      for (const release of hanging.splice(0)) release();
      await server.stop(true);
    },
  };
}

export type FakeStripe = Awaited<ReturnType<typeof startFakeStripe>>;
