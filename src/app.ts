import { Elysia } from "elysia";
import { adminRoutes } from "./admin/routes";
import { browserDecideRoutes, forwardRoutes } from "./decide/browser-routes";
import { KEYED_DECIDE_PATH, keyedDecideHandler } from "./decide/routes";
import type { Deps } from "./deps";
import { bodyTooLarge, jsonBody } from "./http/body-limit";
import { errorEnvelope } from "./http/error-envelope";
import { onBothMounts } from "./http/mounts";
import { perTurn } from "./http/turn-batch";
import { identityConfigRoutes } from "./identity/config-routes";
import { identityRoutes } from "./identity/routes";
import { upstreamPushRoutes } from "./identity/upstream-routes";

/** Builds the whole HTTP app from its dependencies. */
export function createApp(deps: Deps) {
  const maxBody = deps.config.maxBodyBytes;
  // Under sustained load the requests of one event-loop turn are decided together, after the
  // turn's reads (turn-batch.ts: the hot path's code then runs warm); otherwise at once.
  const decide = perTurn(keyedDecideHandler(deps));
  // Keyed decide is a Bun native route on the listening server (no Elysia lifecycle on the hot
  // path); `app.handle` reaches the same handler through the route below. It is registered
  // before the global parse hook so Elysia never reads its body.
  const nativeRoutes = { [KEYED_DECIDE_PATH]: { POST: decide } };
  const app = new Elysia({ serve: { routes: nativeRoutes } as object })
    .post(KEYED_DECIDE_PATH, ({ request }) => decide(request))
    .use(errorEnvelope(deps.logger))
    .use(jsonBody(maxBody))
    .onRequest(({ request }) => bodyTooLarge(request, maxBody))
    .get("/health", () => ({ ok: true }))
    .use(adminRoutes(deps))
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
