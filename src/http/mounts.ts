import type { AnyElysia } from "elysia";

/** The two mounts of browser-facing routes: equal, neither deprecated. */
export const BROWSER_MOUNTS = ["/v1", "/svc/v1"] as const;
export type Mount = (typeof BROWSER_MOUNTS)[number];

/**
 * Registers a browser-facing route group on both `/v1` and `/svc/v1`. The builder gets the
 * mount prefix so URLs it mints (e.g. emailed links) carry the prefix the request used.
 * Key-only routes are registered on `/v1` alone, with a plain `new Elysia({ prefix: "/v1" })`.
 */
export function onBothMounts<T extends AnyElysia>(app: T, build: (prefix: Mount) => AnyElysia): T {
  let out: AnyElysia = app;
  for (const prefix of BROWSER_MOUNTS) out = out.use(build(prefix));
  return out as T;
}
