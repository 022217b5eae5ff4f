import { Elysia } from "elysia";
import { adminRoutes } from "./admin/routes";
import { browserDecideRoutes, forwardRoutes } from "./decide/browser-routes";
import { keyedDecideRoutes } from "./decide/routes";
import type { Deps } from "./deps";
import { bodyTooLarge, jsonBody } from "./http/body-limit";
import { errorEnvelope } from "./http/error-envelope";
import { onBothMounts } from "./http/mounts";
import { identityConfigRoutes } from "./identity/config-routes";
import { identityRoutes } from "./identity/routes";
import { upstreamPushRoutes } from "./identity/upstream-routes";

/** Builds the whole HTTP app from its dependencies. */
export function createApp(deps: Deps) {
  const maxBody = deps.config.maxBodyBytes;
  const app = new Elysia()
    .use(errorEnvelope(deps.logger))
    .use(jsonBody(maxBody))
    .onRequest(({ request }) => bodyTooLarge(request, maxBody))
    .get("/health", () => ({ ok: true }))
    .use(adminRoutes(deps))
    .use(keyedDecideRoutes(deps))
    .use(upstreamPushRoutes(deps))
    .use(browserDecideRoutes(deps));
  return onBothMounts(app, (prefix) =>
    new Elysia()
      .use(identityConfigRoutes(deps, prefix))
      .use(identityRoutes(deps, prefix))
      .use(forwardRoutes(deps, prefix)),
  );
}

export type App = ReturnType<typeof createApp>;
