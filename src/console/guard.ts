import { auditRecordOf, recordAudit } from "../audit/summary";
import type { PeerSource } from "../http/client-address";
import { readCookie } from "../identity/cookies";
import { errorText } from "../infra/error-text";
import { AppError, statusOf } from "../infra/errors";
import { FormError, formOf, htmlResponse, redirect } from "./http";
import { CONSOLE_PATH, CONSOLE_SESSION_COOKIE, type ConsoleSession, canWrite } from "./model";
import { messagePage } from "./pages/sign-in";
import { type ConsoleDeps, consoleSession, sameToken } from "./service";

export type Page = (session: ConsoleSession, form: Map<string, string> | null) => Promise<Response>;

/** A console request and the server it reached (its peer decides whether forwarded headers count). */
export interface Arrival {
  readonly request: Request;
  readonly server: PeerSource | null;
}

/**
 * Same-origin posts only: a browser's Origin (when sent) must be the console's own, the origin
 * the browser reached (behind a trusted proxy, its forwarded scheme and host).
 */
export function crossSite(deps: Pick<ConsoleDeps, "clients">, { request, server }: Arrival): boolean {
  const origin = request.headers.get("origin");
  return origin !== null && origin !== deps.clients.originOf(server, request);
}

/** Any error of a console handler as a page: AppErrors with their status, the rest as 500 (logged). */
export function errorPage(deps: ConsoleDeps, error: unknown, session: ConsoleSession | null): Response {
  if (error instanceof FormError)
    return htmlResponse(messagePage("Not accepted", error.message, session), error.status);
  if (error instanceof AppError) {
    const status = statusOf(error);
    const response = htmlResponse(
      messagePage(status === 404 ? "Not found" : "Not done", error.message, session),
      status,
    );
    for (const [name, value] of Object.entries(error.headers ?? {})) response.headers.set(name, value);
    return response;
  }
  deps.logger.error("console error", { error: errorText(error) });
  return htmlResponse(messagePage("Something went wrong", "The console could not do that. Try again.", session), 500);
}

/**
 * A signed-in console page. No session: to the sign-in page. A post must come from the console
 * (Origin) with the session's CSRF token (`_csrf`); `write` pages refuse a viewer with 403, so the
 * server refuses what the page does not offer.
 */
export async function signedIn(
  deps: ConsoleDeps,
  arrival: Arrival,
  options: { write: boolean },
  page: Page,
): Promise<Response> {
  const request = arrival.request;
  let session: ConsoleSession | null = null;
  try {
    session = await consoleSession(deps, readCookie(request.headers.get("cookie"), CONSOLE_SESSION_COOKIE));
    if (session === null) {
      if (request.method === "GET") return redirect(`${CONSOLE_PATH}/sign-in`);
      return htmlResponse(messagePage("Signed out", "Your console session has ended. Sign in again.", null), 401);
    }
    let form: Map<string, string> | null = null;
    if (request.method === "POST") {
      if (crossSite(deps, arrival)) throw new AppError("forbidden", "The form did not come from the console.");
      form = await formOf(request, deps.config.maxBodyBytes);
      if (!sameToken(form.get("_csrf"), session.csrf)) {
        throw new AppError(
          "forbidden",
          "The form has expired or did not come from the console. Reload the page and try again.",
        );
      }
    }
    if (options.write && !canWrite(session.role)) {
      throw new AppError("forbidden", `Your role (${session.role}) can read the console but not change anything.`);
    }
    return await page(session, form);
  } catch (error) {
    return errorPage(deps, error, session);
  }
}

/** Records a console action in the audit log under the admin route it matches (same summaries). */
export async function audited(
  deps: ConsoleDeps,
  session: ConsoleSession,
  action: { method?: string; route: string; params: Record<string, string>; response: unknown },
): Promise<void> {
  const record = auditRecordOf(
    { method: action.method ?? "POST", route: action.route, params: action.params, response: action.response },
    `console:${session.email}`,
    new Date(deps.now()),
  );
  await recordAudit(deps, record);
}
