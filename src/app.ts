import { Elysia } from "elysia";
import { adminRoutes } from "./admin/routes";
import { keyedDecideRoutes } from "./decide/routes";
import type { Deps } from "./deps";
import { bodyTooLarge } from "./http/body-limit";
import { errorEnvelope } from "./http/error-envelope";

/** Builds the whole HTTP app from its dependencies. */
export function createApp(deps: Deps) {
  const maxBody = deps.config.maxBodyBytes;
  return new Elysia()
    .use(errorEnvelope(deps.logger))
    .onRequest(({ request }) => bodyTooLarge(request, maxBody))
    .get("/health", () => ({ ok: true }))
    .use(adminRoutes(deps))
    .use(keyedDecideRoutes(deps));
}

export type App = ReturnType<typeof createApp>;
