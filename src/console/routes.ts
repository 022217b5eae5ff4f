import { Elysia } from "elysia";
import { classify } from "../http/error-envelope";
import { consoleAuthRoutes } from "./auth-routes";
import { type ConsoleDocumentDeps, consoleDocumentRoutes } from "./document-routes";
import { errorPage } from "./guard";
import { type ConsoleInsightDeps, consoleInsightRoutes } from "./insight-routes";
import { consoleSiteRoutes } from "./site-routes";

/**
 * The operator console under /console (docs/console.md): server-rendered pages, its own cookie
 * and CSRF tokens, and its own HTML error pages, for its handlers' failures (src/console/guard.ts)
 * and for what fails before a handler runs. Its forms are read by its own handlers
 * (`parse: "none"` on every route), wherever the app registers the group.
 */
export function consoleRoutes(deps: ConsoleDocumentDeps & ConsoleInsightDeps) {
  return new Elysia()
    .onError({ as: "local" }, ({ code, error }) => errorPage(deps, classify(error, code) ?? error, null))
    .use(consoleAuthRoutes(deps))
    .use(consoleSiteRoutes(deps))
    .use(consoleDocumentRoutes(deps))
    .use(consoleInsightRoutes(deps));
}
