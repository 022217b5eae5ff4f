import { Elysia } from "elysia";
import type { Config } from "../config";
import type { ClientAddresses, PeerSource } from "../http/client-address";
import { appErrorResponse, errorResponseOf } from "../http/error-envelope";
import { type JsonApiDeps, jsonApi } from "../http/error-plugins";
import type { Mount } from "../http/mounts";
import { requestIdFor } from "../http/request-id";
import { trustedLinkOrigin } from "../identity/link-origin";
import { errorText } from "../infra/error-text";
import { AppError } from "../infra/errors";
import type { Logger } from "../logger";
import type { SiteRegistry } from "../sites/registry";
import { selectedSite, tenantOf } from "../sites/selection";
import type { NewsletterDeps } from "./deps";
import { SubscriptionsBody, SubscriptionsQuery } from "./model";
import { confirmPage, outcomePage, outcomeStatus, PAGE_HEADERS, unsubscribePage } from "./pages";
import {
  confirmationOf,
  confirmSubscription,
  getSubscriptions,
  listsOf,
  putSubscriptions,
  unsubscribeByLink,
  unsubscribeLinkOf,
} from "./service";
import { type NewsletterSubjectDeps, newsletterSubject } from "./subject";

/** The newsletter routes' deps: the subject's, the newsletter deps, and the service-wide origin for links. */
export interface NewsletterRouteDeps extends NewsletterSubjectDeps {
  readonly newsletters: NewsletterDeps;
  readonly config: Pick<Config, "publicUrl">;
  /** Who is calling (the consent proof's address, the anonymous path's window). */
  readonly clients: ClientAddresses;
}

/** The emailed links' deps: the newsletter deps, the tenant by host, and the log for a failed link. */
export interface NewsletterLinkRouteDeps {
  readonly newsletters: NewsletterDeps;
  readonly registry: SiteRegistry;
  readonly logger: Logger;
  /** Who confirmed (the consent proof's address). */
  readonly clients: ClientAddresses;
}

type Server = PeerSource | null;

/** The mount emailed newsletter links are served on (spec: `/v1` only). */
const LINK_MOUNT = "/v1";

/**
 * The newsletter routes of one browser mount (`/v1` or `/svc/v1`), under the mount's per-site
 * CORS: the site's lists (no credential), and a person's subscriptions (session, upstream
 * login, API key with `userId`, or nobody). docs/newsletters.md.
 */
export function newsletterRoutes(deps: NewsletterRouteDeps & JsonApiDeps, prefix: Mount) {
  const nl = deps.newsletters;
  return new Elysia({ prefix })
    .use(jsonApi(deps))
    .get("/newsletters/lists", ({ request }) => listsOf(selectedSite(deps.registry, request)))
    .get(
      "/newsletters/subscriptions",
      async ({ request, query }) => getSubscriptions(nl, await newsletterSubject(deps, request, query.userId)),
      { query: SubscriptionsQuery },
    )
    .put(
      "/newsletters/subscriptions",
      async ({ request, body, server, set }) => {
        const subject = await newsletterSubject(deps, request, body.userId);
        const result = await putSubscriptions(nl, {
          subject,
          body,
          client: deps.clients.addressOf(server, request),
          linkBase: () =>
            trustedLinkOrigin(
              deps.registry,
              deps.config.publicUrl,
              subject.site.tenantId,
              deps.clients.urlOf(server, request),
            ) + LINK_MOUNT,
        });
        set.status = result.status;
        Object.assign(set.headers, result.rateLimit);
        return result.body;
      },
      { body: SubscriptionsBody },
    );
}

function tokenOf(request: Request): string {
  try {
    return new URL(request.url).searchParams.get("token") ?? "";
  } catch {
    return "";
  }
}

function page(html: string, status = 200): Response {
  return new Response(html, { status, headers: PAGE_HEADERS });
}

/** The link's own URL (path and query), for the page's form to POST back to. */
function selfOf(request: Request): string {
  const url = new URL(request.url);
  return url.pathname + url.search;
}

/**
 * The emailed links, on `/v1` only: confirmation (GET shows a page, POST confirms) and RFC 8058
 * one-click unsubscribe (GET shows a page with a button, POST unsubscribes at once). A mail
 * client's one-click POST sends a form body (`List-Unsubscribe=One-Click`), which these routes
 * never read (`parse: "none"`). They answer pages, not JSON.
 */
export function newsletterLinkRoutes(deps: NewsletterLinkRouteDeps) {
  const nl = deps.newsletters;
  const guarded =
    (handler: (request: Request, server: Server) => Promise<Response>) =>
    async ({ request, server }: { request: Request; server: Server }) => {
      try {
        return await handler(request, server);
      } catch (error) {
        if (error instanceof AppError) return appErrorResponse(error, requestIdFor(request));
        deps.logger.error("newsletter link failed", { error: errorText(error) });
        return page(outcomePage({ kind: "unknown_link", label: null }).replace("not valid", "not usable now"), 500);
      }
    };
  // Its own error rendering (the envelope) for what fails before a handler runs; its bodies are
  // never parsed (a one-click unsubscribe posts a form).
  return new Elysia({ prefix: LINK_MOUNT })
    .onError({ as: "local" }, ({ code, error, request }) => errorResponseOf(deps.logger, request, error, code))
    .get(
      "/newsletters/confirm",
      guarded(async (request) => {
        const found = await confirmationOf(nl, tenantOf(deps.registry, request), tokenOf(request));
        if (found.kind !== "usable") return page(outcomePage(found), outcomeStatus(found.kind));
        return page(confirmPage(found.label ?? "this newsletter", selfOf(request)));
      }),
    )
    .post(
      "/newsletters/confirm",
      guarded(async (request, server) => {
        const outcome = await confirmSubscription(
          nl,
          tenantOf(deps.registry, request),
          tokenOf(request),
          deps.clients.addressOf(server, request),
        );
        return page(outcomePage(outcome), outcomeStatus(outcome.kind));
      }),
      { parse: "none" },
    )
    .get(
      "/newsletters/unsubscribe",
      guarded(async (request) => {
        const link = await unsubscribeLinkOf(nl, tenantOf(deps.registry, request), tokenOf(request));
        if (link === null) return page(outcomePage({ kind: "unknown_link", label: null }), 404);
        return page(unsubscribePage(link.label, selfOf(request)));
      }),
    )
    .post(
      "/newsletters/unsubscribe",
      guarded(async (request) => {
        const outcome = await unsubscribeByLink(nl, tenantOf(deps.registry, request), tokenOf(request));
        return page(outcomePage(outcome), outcomeStatus(outcome.kind));
      }),
      { parse: "none" },
    );
}
