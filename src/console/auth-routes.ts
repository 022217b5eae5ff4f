import { Elysia } from "elysia";
import { readCookie } from "../identity/cookies";
import { AppError } from "../infra/errors";
import { consoleScript, consoleStyle, editorScript, insightScript } from "./assets";
import { type Arrival, crossSite, errorPage } from "./guard";
import { consoleCookie, formOf, htmlResponse, redirect } from "./http";
import { CONSOLE_CSRF_COOKIE, CONSOLE_PATH, CONSOLE_SESSION_COOKIE, CONSOLE_SESSION_TTL_MS } from "./model";
import { confirmSignInPage, signInPage } from "./pages/sign-in";
import {
  type ConsoleDeps,
  consumeSignInLink,
  endConsoleSession,
  newToken,
  requestSignInLink,
  sameToken,
} from "./service";

const NO_PARSE = { parse: "none" } as const;
const CSRF_MAX_AGE = 60 * 60;

/** The sign-in form's CSRF token: the browser's double-submit cookie, made when it has none. */
function preSessionCsrf(request: Request): { token: string; cookies: string[] } {
  const held = readCookie(request.headers.get("cookie"), CONSOLE_CSRF_COOKIE);
  if (held !== null && /^[A-Za-z0-9_-]{43}$/.test(held)) return { token: held, cookies: [] };
  const token = newToken();
  return { token, cookies: [consoleCookie(CONSOLE_CSRF_COOKIE, token, CSRF_MAX_AGE)] };
}

/** A pre-session post: same origin, and the form's token equal to the cookie's. */
async function preSessionForm(deps: ConsoleDeps, arrival: Arrival): Promise<Map<string, string>> {
  const request = arrival.request;
  if (crossSite(deps, arrival)) throw new AppError("forbidden", "The form did not come from the console.");
  const form = await formOf(request, 16_384);
  const held = readCookie(request.headers.get("cookie"), CONSOLE_CSRF_COOKIE);
  if (held === null || !sameToken(form.get("_csrf"), held)) {
    throw new AppError("forbidden", "The form has expired. Reload the page and try again.");
  }
  return form;
}

const asset = (body: string, type: string, etag: string, request: Request) =>
  request.headers.get("if-none-match") === etag
    ? new Response(null, { status: 304, headers: { etag } })
    : new Response(body, {
        headers: { "content-type": type, etag, "cache-control": "no-cache", "x-content-type-options": "nosniff" },
      });

/** Sign-in by mailed link, sign-out, and the console's static assets (two scripts, one stylesheet). */
export function consoleAuthRoutes(deps: ConsoleDeps) {
  return new Elysia({ prefix: CONSOLE_PATH })
    .get(
      "/assets/console.js",
      async ({ request }) => {
        try {
          const script = await consoleScript();
          return asset(script.body, script.type, script.etag, request);
        } catch (error) {
          return errorPage(deps, error, null);
        }
      },
      NO_PARSE,
    )
    .get(
      "/assets/insight.js",
      async ({ request }) => {
        try {
          const script = await insightScript();
          return asset(script.body, script.type, script.etag, request);
        } catch (error) {
          return errorPage(deps, error, null);
        }
      },
      NO_PARSE,
    )
    .get(
      "/assets/editor.js",
      async ({ request }) => {
        try {
          const script = await editorScript();
          return asset(script.body, script.type, script.etag, request);
        } catch (error) {
          return errorPage(deps, error, null);
        }
      },
      NO_PARSE,
    )
    .get(
      "/assets/console.css",
      ({ request }) => {
        const style = consoleStyle();
        return asset(style.body, style.type, style.etag, request);
      },
      NO_PARSE,
    )
    .get(
      "/sign-in",
      ({ request }) => {
        const csrf = preSessionCsrf(request);
        return htmlResponse(signInPage(csrf.token), 200, csrf.cookies);
      },
      NO_PARSE,
    )
    .post(
      "/sign-in",
      async ({ request, server }) => {
        const csrf = preSessionCsrf(request);
        let email = "";
        try {
          const form = await preSessionForm(deps, { request, server });
          email = form.get("email") ?? "";
          const tenantId = deps.registry.tenantForHost(request.headers.get("host"));
          if (tenantId === null) throw new AppError("not_found", "No tenant answers this host name.");
          await requestSignInLink(deps, {
            tenantId,
            email,
            requestUrl: deps.clients.urlOf(server, request),
            client: deps.clients.addressOf(server, request),
          });
          return htmlResponse(signInPage(csrf.token, { sent: true }), 200, csrf.cookies);
        } catch (error) {
          if (error instanceof AppError && error.code === "validation_failed") {
            const errors = (error.details ?? []) as { path: string; message: string }[];
            return htmlResponse(signInPage(csrf.token, { errors, email }), 422, csrf.cookies);
          }
          return errorPage(deps, error, null);
        }
      },
      NO_PARSE,
    )
    .get(
      "/auth",
      ({ request }) => {
        const token = new URL(request.url).searchParams.get("token") ?? "";
        const csrf = preSessionCsrf(request);
        return htmlResponse(confirmSignInPage(token.slice(0, 512), csrf.token), 200, csrf.cookies);
      },
      NO_PARSE,
    )
    .post(
      "/auth",
      async ({ request, server }) => {
        try {
          const form = await preSessionForm(deps, { request, server });
          const started = await consumeSignInLink(deps, form.get("token"));
          return redirect(CONSOLE_PATH, [
            consoleCookie(CONSOLE_SESSION_COOKIE, started.token, CONSOLE_SESSION_TTL_MS / 1000),
            consoleCookie(CONSOLE_CSRF_COOKIE, "", 0),
          ]);
        } catch (error) {
          return errorPage(deps, error, null);
        }
      },
      NO_PARSE,
    )
    .post(
      "/sign-out",
      async ({ request, server }) => {
        // Signing out needs no CSRF token: the worst a forged post does is end a session.
        if (crossSite(deps, { request, server }))
          return errorPage(deps, new AppError("forbidden", "The form did not come from the console."), null);
        await endConsoleSession(deps, readCookie(request.headers.get("cookie"), CONSOLE_SESSION_COOKIE));
        return redirect(`${CONSOLE_PATH}/sign-in`, [consoleCookie(CONSOLE_SESSION_COOKIE, "", 0)]);
      },
      NO_PARSE,
    );
}
