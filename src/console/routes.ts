import { Elysia } from "elysia";
import { consoleAuthRoutes } from "./auth-routes";
import { type ConsoleDocumentDeps, consoleDocumentRoutes } from "./document-routes";
import { type ConsoleInsightDeps, consoleInsightRoutes } from "./insight-routes";
import { consoleSiteRoutes } from "./site-routes";

/**
 * The operator console under /console (docs/console.md): server-rendered pages, its own cookie
 * and CSRF tokens, and its own HTML error pages. Mounted ahead of the JSON body parser and the
 * JSON error envelope: its forms are read by its own handlers.
 */
export function consoleRoutes(deps: ConsoleDocumentDeps & ConsoleInsightDeps) {
  return new Elysia()
    .use(consoleAuthRoutes(deps))
    .use(consoleSiteRoutes(deps))
    .use(consoleDocumentRoutes(deps))
    .use(consoleInsightRoutes(deps));
}
