import { errorResponseOf } from "../http/error-envelope";
import { presentsApiKey } from "../identity/service";
import { AppError } from "../infra/errors";
import { verifiedEvent } from "../outside/stripe/client";
import { tenantOf } from "../sites/selection";
import { checkoutNotConfigured, invalidSignature } from "./errors";
import { type CheckoutRouteDeps, checkoutDepsOf } from "./routes";
import { applyEvent } from "./service";

/** Where the payment provider posts its events (`/v1` only; register `https://<tenant host>/v1/checkout/webhook`). */
export const CHECKOUT_WEBHOOK_PATH = "/v1/checkout/webhook";

const tooLarge = () => new AppError("payload_too_large", "The request body is too large.");

/**
 * POST /v1/checkout/webhook: no key and no site header. The provider's signature is the
 * credential: verified with the `stripe` client's helper over the exact raw body, under the
 * webhook secret of the tenant the Host names, with a timestamp at most five minutes old (an
 * older delivery is a replay: 400). An event is applied once by its id (`checkout_events`); a
 * second delivery answers 200 `duplicate: true` and changes nothing. The site and offer come from
 * our own record of the checkout session, never from what the event claims.
 *
 * Served as a plain handler registered ahead of the app's JSON parser, so the raw body reaches
 * the signature check byte for byte.
 */
export function checkoutWebhookHandler(deps: CheckoutRouteDeps) {
  const checkout = checkoutDepsOf(deps);
  return async (request: Request): Promise<Response> => {
    try {
      if (presentsApiKey(request.headers)) {
        throw new AppError(
          "unauthorized",
          "API keys are not accepted on this route; the provider's signature is its credential.",
        );
      }
      const tenantId = tenantOf(deps.registry, request);
      if (tenantId === null) throw new AppError("not_found", "Unknown tenant.");
      const length = request.headers.get("content-length");
      if (length !== null && Number(length) > deps.config.maxBodyBytes) throw tooLarge();
      const raw = await request.text();
      if (Buffer.byteLength(raw) > deps.config.maxBodyBytes) throw tooLarge();
      const settings = await deps.services.resolve(tenantId, "stripe");
      if (!settings.configured) throw checkoutNotConfigured();
      const event = await verifiedEvent(
        raw,
        request.headers.get("stripe-signature"),
        settings.config.webhookSecret,
        deps.now(),
      );
      if (event === null || typeof event.id !== "string" || typeof event.type !== "string" || event.id.length > 255) {
        throw invalidSignature();
      }
      const outcome = await applyEvent(checkout, tenantId, event);
      return Response.json({ received: true, duplicate: outcome.duplicate });
    } catch (error) {
      return errorResponseOf(deps.logger, request, error);
    }
  };
}
