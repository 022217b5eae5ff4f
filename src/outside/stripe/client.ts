import type Stripe from "stripe";
import type { Fetch } from "../../infra/tracing";
import type { ServiceConfig } from "../service-config-model";

/**
 * The client module, loaded on first use rather than at start: a server whose tenants never
 * check out never holds it (stripe, recombee and storyblok together measured about 6 MB of RSS).
 */
const stripeModule = (): typeof Stripe => require("stripe") as typeof Stripe;

export type StripeSettings = ServiceConfig<"stripe">;

/** How old a webhook's signed timestamp may be (seconds): an older delivery is a replay, refused. */
const WEBHOOK_TOLERANCE_SECONDS = 300;

/**
 * A payment provider call that failed: `unavailable` (timeout, outage, rate limit: retry later)
 * or `misconfigured` (bad key, unknown price: retrying will not help). Never carries the key.
 */
export class PaymentProviderError extends Error {
  constructor(
    readonly kind: "unavailable" | "misconfigured",
    message: string,
  ) {
    super(message);
  }
}

export interface CheckoutSessionRequest {
  readonly mode: "payment" | "subscription";
  readonly price: string;
  readonly successUrl: string;
  readonly cancelUrl: string;
  /** Prefills the provider's form (a signed-in reader's, or a signed-out reader's own address). */
  readonly customerEmail?: string;
  /** Ours, for people reading the provider's dashboard; the webhook acts on our own row. */
  readonly metadata: Readonly<Record<string, string>>;
  readonly clientReferenceId?: string;
}

/**
 * Stripe through its maintained client (`stripe` on npm), one client per call with the tenant's
 * settings: `apiBase` becomes the client's host, port and protocol (tests point it at a fake on
 * 127.0.0.1). No automatic retries: a checkout is a reader waiting, so an outage answers 503 at
 * once and the page retries.
 */
export function stripeClient(settings: StripeSettings, timeoutMs: number, fetch?: Fetch): Stripe {
  const config: ConstructorParameters<typeof Stripe>[1] = {
    maxNetworkRetries: 0,
    timeout: timeoutMs,
    telemetry: false,
  };
  if (settings.apiBase !== undefined) {
    const base = new URL(settings.apiBase);
    config.protocol = base.protocol === "http:" ? "http" : "https";
    config.host = base.hostname;
    config.port = base.port || (base.protocol === "http:" ? 80 : 443);
  }
  // Traced: Stripe's fetch client on the traced fetch (a client span per call, the trace context
  // sent). Untraced, its default client, as it always was.
  if (fetch !== undefined) config.httpClient = stripeModule().createFetchHttpClient(fetch as typeof globalThis.fetch);
  return new (stripeModule())(settings.secretKey, config);
}

/** Creates a hosted checkout session and answers its id and the URL the browser goes to. */
export async function createCheckoutSession(
  client: Stripe,
  request: CheckoutSessionRequest,
): Promise<{ id: string; url: string }> {
  let session: Stripe.Checkout.Session;
  try {
    session = await client.checkout.sessions.create({
      mode: request.mode,
      line_items: [{ price: request.price, quantity: 1 }],
      success_url: request.successUrl,
      cancel_url: request.cancelUrl,
      ...(request.customerEmail === undefined ? {} : { customer_email: request.customerEmail }),
      ...(request.clientReferenceId === undefined ? {} : { client_reference_id: request.clientReferenceId }),
      metadata: { ...request.metadata },
      ...(request.mode === "subscription" ? { subscription_data: { metadata: { ...request.metadata } } } : {}),
    });
  } catch (error) {
    throw providerErrorOf(error);
  }
  if (typeof session.id !== "string" || typeof session.url !== "string" || !/^https?:\/\//.test(session.url)) {
    throw new PaymentProviderError("unavailable", "the payment provider answered no checkout URL");
  }
  return { id: session.id, url: session.url };
}

/** A client failure as unavailable (retry) or misconfigured (do not). */
function providerErrorOf(error: unknown): PaymentProviderError {
  if (error instanceof PaymentProviderError) return error;
  if (error instanceof stripeModule().errors.StripeError) {
    const status = error.statusCode ?? 0;
    if (
      error.type === "StripeConnectionError" ||
      error.type === "StripeAPIError" ||
      error.type === "StripeRateLimitError" ||
      status >= 500 ||
      status === 429
    ) {
      return new PaymentProviderError(
        "unavailable",
        `payment provider unavailable (${error.type}, ${status || "no status"})`,
      );
    }
    return new PaymentProviderError("misconfigured", `payment provider refused the call (${error.type}, ${status})`);
  }
  return new PaymentProviderError("unavailable", "payment provider call failed");
}

/**
 * Verifies a webhook delivery with the client's own helper over the exact raw body: the
 * signature under the tenant's webhook secret and a timestamp no older than the tolerance at
 * `nowMs`. Answers the event, or null for anything that does not verify.
 */
export async function verifiedEvent(
  rawBody: string,
  signature: string | null,
  webhookSecret: string,
  nowMs: number,
): Promise<Stripe.Event | null> {
  if (signature === null || signature.length === 0 || signature.length > 4096) return null;
  try {
    return await stripeModule().webhooks.constructEventAsync(
      rawBody,
      signature,
      webhookSecret,
      WEBHOOK_TOLERANCE_SECONDS,
      undefined,
      nowMs,
    );
  } catch {
    return null;
  }
}

export type StripeEvent = Stripe.Event;
