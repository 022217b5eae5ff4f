import { AppError } from "../infra/errors";

/** The checkout capability's refusals (docs/checkout.md). */
export const unknownOffer = () =>
  new AppError("not_found", "Unknown offer: no catalog item of that name can be bought.");
export const emailWhenSignedIn = () =>
  new AppError("bad_request", "email is not accepted from a signed-in reader: the purchase goes to their account.");
export const emailRequired = () =>
  new AppError("validation_failed", "The request failed validation.", [
    { path: "/email", message: "required when signed out: the address the purchase is granted to" },
  ]);
export const accessRefreshRequired = () =>
  new AppError(
    "unauthorized",
    "The session's access cookie is missing or expired: refresh it (GET /v1/id/get-session) and retry, or send an email.",
  );
export const originRefused = () => new AppError("forbidden", "This origin is not allowed for the site.");
export const unknownReader = () => new AppError("unauthorized", "The signed-in reader is no longer a user.");

/** 503 without Retry-After: the tenant has not connected a payment provider (or it refuses our settings). */
export const checkoutNotConfigured = () =>
  new AppError("service_unavailable", "Checkout is not configured for this tenant.");

/** 503 with Retry-After: the payment provider timed out or is down. */
export const providerUnavailable = (retryAfterSeconds = 30) =>
  new AppError("payment_provider_unavailable", "The payment provider could not be reached.", undefined, {
    "retry-after": String(retryAfterSeconds),
  });

export const invalidSignature = () =>
  new AppError("invalid_signature", "The webhook signature does not verify (or is too old).");
