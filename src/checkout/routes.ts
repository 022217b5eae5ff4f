import { Elysia, t } from "elysia";
import type { Db } from "../../db/client";
import type { Config } from "../config";
import type { KeyedRate } from "../counters/quota-leases";
import { takeRate } from "../counters/take-rate";
import type { ClientAddresses } from "../http/client-address";
import { browserCors } from "../http/cors";
import { type JsonApiDeps, jsonApi } from "../http/error-plugins";
import { credentials } from "../identity/credentials";
import { selectedSite } from "../sites/selection";
import { originRefused } from "./errors";
import { CheckoutReply, checkoutBodyOf } from "./model";
import { type CheckoutDeps, startCheckout } from "./service";
import { type CheckoutStore, DrizzleCheckoutStore } from "./store";

/** What checkout needs of the process (a narrow view of the app's deps). */
export type CheckoutRouteDeps = Parameters<typeof credentials>[0] &
  Omit<CheckoutDeps, "checkoutStore" | "config"> & {
    readonly database: { readonly db: Db };
    readonly config: Pick<Config, "paymentTimeoutMs" | "maxBodyBytes">;
    /**
     * Checkouts per client and site a minute (`CHECKOUT_LIMIT`): in memory on the embedded store,
     * leased across processes on a Postgres server (src/deps.ts).
     */
    readonly checkoutRate: KeyedRate;
    /** Who is calling, for the per-client window (behind the trusted proxies or not). */
    readonly clients: ClientAddresses;
    /** The checkout store; the drizzle one over `database` when not given (tests give the twin). */
    readonly checkoutStore?: CheckoutStore;
  };

/** The capability's dependencies, from the app's. */
export function checkoutDepsOf(deps: CheckoutRouteDeps): CheckoutDeps {
  return { ...deps, checkoutStore: deps.checkoutStore ?? new DrizzleCheckoutStore(deps.database.db) };
}

/**
 * POST /svc/v1/checkout: the browser mount only (no `/v1` twin; the spec's one such path). Site
 * header, origin allowlist (403), no API key (401), the signed access cookie or a signed-out
 * reader's email. The body is read as an allowlist (model.ts) and never logged or stored. Its
 * CORS, preflight included, is the shared `browserCors`. docs/checkout.md.
 */
export function checkoutRoutes(deps: CheckoutRouteDeps & JsonApiDeps) {
  const checkout = checkoutDepsOf(deps);
  const rate = deps.checkoutRate;
  const routes = new Elysia({ prefix: "/svc/v1" })
    .use(jsonApi(deps))
    .use(credentials(deps))
    .guard({ browser: true })
    .post(
      "/checkout",
      async ({ request, body, server, set, browserIdentityOf }) => {
        const site = selectedSite(deps.registry, request);
        const origin = request.headers.get("origin");
        if (origin === null || !site.live!.allowedOrigins.has(origin)) throw originRefused();
        const input = checkoutBodyOf(body);
        const now = deps.now();
        Object.assign(
          set.headers,
          await takeRate(
            rate,
            "checkout",
            `${site.tenantId}\u0001${site.id}\u0001${deps.clients.addressOf(server, request)}`,
            now,
          ),
        );
        const who = await browserIdentityOf(site.tenantId, now);
        const answer = await startCheckout(checkout, site, origin, input, who);
        set.headers["cache-control"] = "no-store";
        return answer;
      },
      // Read as unknown and checked by `checkoutBodyOf`: Elysia's cleaner would drop stray members
      // silently, where this route must refuse them.
      { body: t.Unknown(), response: { 200: CheckoutReply } },
    );
  return browserCors(deps.registry, routes);
}
