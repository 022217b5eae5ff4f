import { Value } from "@sinclair/typebox/value";
import { t } from "elysia";
import { NAME_PATTERN } from "../core/document-schema";
import { validationError } from "../http/error-envelope";
import { AppError } from "../infra/errors";

/** Checkouts one browser may start per site in a minute: each one creates a session at the provider. */
export const CHECKOUT_LIMIT = 20;
export const CHECKOUT_WINDOW_MS = 60_000;

/** A path on the page's own origin: one leading slash, no scheme or host, no backslash or space. */
const PagePath = t.String({ minLength: 1, maxLength: 1024, pattern: "^/(?![/\\\\])[^\\s\\\\]*$" });

/**
 * POST /svc/v1/checkout: an allowlist. These members and no others, at any depth: a stray member
 * may be card data, so it is refused (400) before anything else reads the body, and neither the
 * body nor any of its values is logged, stored or echoed.
 */
const CheckoutBody = t.Object(
  {
    /** The catalog item's name (e.g. `offer_annual`); it must carry a `checkout` member. */
    offer: t.String({ pattern: NAME_PATTERN }),
    /** Where the provider sends the reader after paying, on the calling page's origin. */
    returnPath: PagePath,
    /** Where the provider sends the reader who gives up, on the calling page's origin. */
    cancelPath: PagePath,
    /** Signed out only: the address the purchase is granted to (an existing user, or a new one). */
    email: t.Optional(t.String({ format: "email", minLength: 3, maxLength: 254 })),
  },
  { additionalProperties: false },
);
export type CheckoutBodyValue = typeof CheckoutBody.static;

const ALLOWED: ReadonlySet<string> = new Set(Object.keys(CheckoutBody.properties));

export const CheckoutReply = t.Object({
  /** The provider's hosted checkout page: the browser navigates there. */
  url: t.String(),
});

/** Whether a value nested in the body holds any member: all of them are stray (the allowlist is flat). */
function holdsMembers(value: unknown): boolean {
  if (typeof value !== "object" || value === null) return false;
  return Array.isArray(value) ? value.length > 0 : Object.keys(value).length > 0;
}

/**
 * The 400 of stray members: each parent that holds one (the body, or one of the four members),
 * once, with the rule. Never the stray member's own name: it may be the card number.
 */
const strayMembers = (parents: ReadonlySet<string>) =>
  new AppError(
    "bad_request",
    "The checkout body carries members it does not accept; nothing was read or kept. Send only offer, returnPath, cancelPath and (signed out) email.",
    [...parents].map((path) => ({
      path,
      message:
        path === "/"
          ? "has a member it does not accept (only offer, returnPath, cancelPath and email)"
          : "holds members it does not accept (it must be a string)",
    })),
  );

/**
 * The checkout body, checked as an allowlist: any member other than the four, at any depth (an
 * object or array where a string belongs counts too), is 400 with the members' paths only; then
 * the types are checked (422 with paths). Never echoes a value.
 */
export function checkoutBodyOf(body: unknown): CheckoutBodyValue {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    throw validationError([{ path: "/", message: "must be an object" }]);
  }
  const parents = new Set<string>();
  for (const [key, value] of Object.entries(body)) {
    if (!ALLOWED.has(key)) parents.add("/");
    else if (holdsMembers(value)) parents.add(`/${key}`);
  }
  if (parents.size > 0) throw strayMembers(parents);
  if (!Value.Check(CheckoutBody, body)) {
    // Paths of the four members and TypeBox's generic messages only: they name types and
    // patterns, never values.
    throw validationError(
      [...Value.Errors(CheckoutBody, body)].map((e) => ({ path: e.path, message: e.message })),
      CheckoutBody,
    );
  }
  return body as CheckoutBodyValue;
}

/** The webhook's answer to the payment provider: `duplicate` when the event was already applied. */
export const WebhookAnswer = t.Object({ received: t.Boolean(), duplicate: t.Boolean() });
