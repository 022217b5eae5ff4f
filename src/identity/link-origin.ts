import { AppError } from "../infra/errors";

/** What the trust rule reads about tenants (the SiteRegistry in the app). */
export interface TenantOrigins {
  publicUrl(tenantId: string): string | null;
  hasHostsOf(tenantId: string): boolean;
  isHostOf(tenantId: string, hostname: string): boolean;
}

/** Host names that can only be this machine: trusted for links when a tenant configured nothing. */
const LOOPBACK = new Set(["localhost", "127.0.0.1", "[::1]"]);

const untrustedLinkOrigin = () =>
  new AppError(
    "bad_request",
    "Sign-in links cannot be built for this host: it is not one of the tenant's host names. " +
      "The operator sets the tenant's public URL (svc tenant public-url <tenant> <url>) or SVC_PUBLIC_URL.",
  );

/**
 * The origin a mailed link is built on, never one a caller can choose: the tenant's public URL;
 * else the request's scheme and host name when the host name is one of the tenant's host names,
 * on that scheme's default port (a host name is configured without a port, so the port a caller
 * writes in `Host` never reaches a link: a service on another port sets a public URL); else
 * `SVC_PUBLIC_URL` (the single-tenant shortcut); else, for a tenant with no host names at all (the
 * demo / single-tenant install answering every host), a loopback origin (localhost, 127.0.0.1,
 * [::1]). Anything else is refused (400): a forged Host never reaches a reader's mailbox.
 */
export function trustedLinkOrigin(
  tenants: TenantOrigins,
  servicePublicUrl: string | undefined,
  tenantId: string,
  requestUrl: string,
): string {
  const configured = tenants.publicUrl(tenantId);
  if (configured) return configured;
  let reached: URL | null = null;
  try {
    reached = new URL(requestUrl);
  } catch {
    reached = null;
  }
  const web = reached !== null && (reached.protocol === "http:" || reached.protocol === "https:");
  if (web && tenants.isHostOf(tenantId, reached!.hostname)) return `${reached!.protocol}//${reached!.hostname}`;
  if (servicePublicUrl) return servicePublicUrl;
  if (web && !tenants.hasHostsOf(tenantId) && LOOPBACK.has(reached!.hostname)) return reached!.origin;
  throw untrustedLinkOrigin();
}
