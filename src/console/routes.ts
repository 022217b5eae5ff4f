import { Elysia } from "elysia";
import type { Deps } from "../deps";
import { consoleAuthRoutes } from "./auth-routes";
import { consoleDocumentRoutes } from "./document-routes";
import { consoleSiteRoutes } from "./site-routes";

/**
 * The operator console under /console (docs/console.md): server-rendered pages, its own cookie
 * and CSRF tokens, and its own HTML error pages. Mounted ahead of the JSON body parser and the
 * JSON error envelope: its forms are read by its own handlers.
 */
export function consoleRoutes(deps: Deps) {
  return new Elysia().use(consoleAuthRoutes(deps)).use(consoleSiteRoutes(deps)).use(consoleDocumentRoutes(deps));
}
