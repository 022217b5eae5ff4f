import type { ChangeFeed } from "../changes/change-feed";
import type { Config } from "../config";
import { type CheckoutOfferDefinition, parseDuration } from "../core/document-schema";
import type { BrowserIdentity } from "../identity/browser-credential";
import type { OutsideCalls } from "../infra/tracing";
import type { Logger } from "../logger";
import type { ServiceConfigs } from "../outside/service-config";
import { createCheckoutSession, PaymentProviderError, type StripeEvent, stripeClient } from "../outside/stripe/client";
import type { SiteState } from "../sites/registry";
import type { UserStore } from "../users/store";
import {
  accessRefreshRequired,
  checkoutNotConfigured,
  emailRequired,
  emailWhenSignedIn,
  providerUnavailable,
  unknownOffer,
  unknownReader,
} from "./errors";
import type { CheckoutBodyValue } from "./model";
import type { CheckoutStore, EventOutcome, RevokeBy } from "./store";

export interface CheckoutDeps {
  readonly services: ServiceConfigs;
  readonly users: UserStore;
  readonly changes: ChangeFeed;
  readonly logger: Logger;
  readonly now: () => number;
  readonly config: Pick<Config, "paymentTimeoutMs">;
  readonly checkoutStore: CheckoutStore;
  /** Traces (null or absent when off): calls to the payment provider are client spans. */
  readonly tracing?: OutsideCalls | null;
}

/** The offer a catalog item makes, when it can be bought. */
function offerOf(site: SiteState, name: string): CheckoutOfferDefinition {
  const catalog = site.live?.document.catalog;
  const item = catalog !== undefined && Object.hasOwn(catalog, name) ? catalog[name] : undefined;
  if (item?.checkout === undefined) throw unknownOffer();
  return item.checkout;
}

/**
 * Starts a checkout: the offer, the reader (the access cookie's user, or a signed-out reader's
 * address), the tenant's provider settings, then the provider's hosted session, recorded so the
 * webhook can grant it. Answers the URL the browser navigates to. `origin` is the calling page's
 * (already checked against the site's allowlist): the return and cancel paths are on it.
 */
export async function startCheckout(
  deps: CheckoutDeps,
  site: SiteState,
  origin: string,
  body: CheckoutBodyValue,
  who: BrowserIdentity,
): Promise<{ url: string }> {
  const offer = offerOf(site, body.offer);
  let userId: string | null = null;
  let email: string | undefined;
  if (who.claims !== null) {
    if (body.email !== undefined) throw emailWhenSignedIn();
    const user = await deps.users.userById(site.tenantId, who.claims.userId);
    if (user === undefined || user.erasedAt !== null) throw unknownReader();
    userId = user.id;
    email = user.email;
  } else if (body.email !== undefined) {
    email = body.email;
  } else {
    throw who.accessMissing ? accessRefreshRequired() : emailRequired();
  }

  const settings = await deps.services.resolve(site.tenantId, "stripe");
  if (!settings.configured) throw checkoutNotConfigured();
  const client = stripeClient(settings.config, deps.config.paymentTimeoutMs, deps.tracing?.fetch("stripe"));
  let created: { id: string; url: string };
  try {
    created = await createCheckoutSession(client, {
      mode: offer.mode,
      price: offer.price,
      successUrl: `${origin}${body.returnPath}`,
      cancelUrl: `${origin}${body.cancelPath}`,
      customerEmail: email,
      clientReferenceId: userId ?? undefined,
      metadata: { svc_tenant: site.tenantId, svc_site: site.id, svc_offer: body.offer },
    });
  } catch (error) {
    throw checkoutErrorOf(deps, site.tenantId, error);
  }
  await deps.checkoutStore.recordSession({
    id: created.id,
    tenantId: site.tenantId,
    siteId: site.id,
    offer: body.offer,
    grant: offer.grant,
    mode: offer.mode,
    durationMs: offer.duration === undefined ? null : parseDuration(offer.duration),
    userId,
  });
  return { url: created.url };
}

/** A provider failure as its 503: with Retry-After for an outage, without for our settings. */
function checkoutErrorOf(deps: CheckoutDeps, tenantId: string, error: unknown): unknown {
  if (!(error instanceof PaymentProviderError)) return error;
  // The message names the error's kind and status, never the key or the reader.
  deps.logger.warn("payment provider call failed", { tenantId, kind: error.kind, reason: error.message });
  return error.kind === "unavailable" ? providerUnavailable() : checkoutNotConfigured();
}

type Obj = Record<string, unknown>;
const text = (o: Obj, key: string): string | null => (typeof o[key] === "string" ? (o[key] as string) : null);
/** An expandable member: an id string, or an expanded object carrying the id. */
const idOf = (o: Obj, key: string): string | null => {
  const v = o[key];
  if (typeof v === "string") return v;
  if (typeof v === "object" && v !== null && typeof (v as Obj).id === "string") return (v as Obj).id as string;
  return null;
};

/** What one verified event does: grant, revoke, or nothing. */
export type EventAction =
  | { readonly kind: "grant"; readonly sessionId: string; readonly object: Obj }
  | { readonly kind: "revoke"; readonly by: RevokeBy[] }
  | { readonly kind: "ignore" };

/**
 * Reads a verified event: a paid checkout grants; a cancelled subscription revokes; a full refund
 * revokes the purchase it paid for (by payment), or else the customer's subscriptions.
 * A checkout completed but not yet paid (a delayed payment method) waits for
 * `checkout.session.async_payment_succeeded`.
 */
function actionOf(event: StripeEvent): EventAction {
  const object = (event.data?.object ?? {}) as unknown as Obj;
  switch (event.type) {
    case "checkout.session.completed": {
      const paid = object.payment_status === "paid" || object.payment_status === "no_payment_required";
      const id = text(object, "id");
      return paid && id !== null ? { kind: "grant", sessionId: id, object } : { kind: "ignore" };
    }
    case "checkout.session.async_payment_succeeded": {
      const id = text(object, "id");
      return id !== null ? { kind: "grant", sessionId: id, object } : { kind: "ignore" };
    }
    case "customer.subscription.deleted": {
      const id = text(object, "id");
      return id !== null ? { kind: "revoke", by: [{ subscriptionId: id }] } : { kind: "ignore" };
    }
    case "charge.refunded": {
      if (object.refunded !== true) return { kind: "ignore" };
      const by: RevokeBy[] = [];
      const paymentIntent = idOf(object, "payment_intent");
      const customer = idOf(object, "customer");
      if (paymentIntent !== null) by.push({ paymentIntentId: paymentIntent });
      if (customer !== null) by.push({ customerSubscriptions: customer });
      return by.length > 0 ? { kind: "revoke", by } : { kind: "ignore" };
    }
    default:
      return { kind: "ignore" };
  }
}

/**
 * Applies a verified event once (by its id): grants or revokes in one transaction with the event's
 * record, then tells every process through the change feed (`grants`), so decide reads the change
 * within the feed's delay and the browser's next access-cookie refresh carries it.
 */
export async function applyEvent(deps: CheckoutDeps, tenantId: string, event: StripeEvent): Promise<EventOutcome> {
  const action = actionOf(event);
  // What a revoking event ends, kept with it: a completion delivered after it then grants nothing.
  const subject =
    action.kind === "revoke"
      ? (action.by
          .map((by) =>
            "subscriptionId" in by ? by.subscriptionId : "paymentIntentId" in by ? by.paymentIntentId : null,
          )
          .find((x) => x !== null) ?? null)
      : null;
  const outcome = await deps.checkoutStore.applyOnce(
    tenantId,
    { id: event.id, type: event.type, subject },
    async (tx) => {
      if (action.kind === "ignore") return [];
      if (action.kind === "revoke") {
        const changed = new Set<string>();
        for (const by of action.by) {
          const { ended, changedUsers } = await deps.checkoutStore.revoke(tx, tenantId, by);
          for (const user of changedUsers) changed.add(user);
          // A refund matched by its payment ends that purchase only.
          if (ended > 0) break;
        }
        return [...changed];
      }
      return deps.checkoutStore.complete(tx, tenantId, action.sessionId, (row) => {
        const customerDetails = (action.object.customer_details ?? {}) as Obj;
        const email = text(customerDetails, "email") ?? text(action.object, "customer_email");
        if (row.userId === null && email === null) {
          deps.logger.warn("completed checkout has no address to grant", { tenantId, sessionId: row.id });
          return null;
        }
        const at = new Date(typeof event.created === "number" ? event.created * 1000 : deps.now());
        return {
          reader: row.userId !== null ? { userId: row.userId } : { email: email as string },
          expiresAt: row.mode === "payment" && row.durationMs !== null ? new Date(at.getTime() + row.durationMs) : null,
          subscriptionId: idOf(action.object, "subscription"),
          paymentIntentId: idOf(action.object, "payment_intent"),
          customerId: idOf(action.object, "customer"),
          at,
        };
      });
    },
  );
  if (!outcome.duplicate) {
    for (const userId of outcome.changedUsers)
      await deps.changes.publish({ topic: "grants", tenantId, subject: userId });
  }
  return outcome;
}
