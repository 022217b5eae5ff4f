import { Value } from "@sinclair/typebox/value";
import { t } from "elysia";
import { isStorableText } from "../core/text";

/** Console roles: owner and admin may change things; a viewer only reads (issue 26). */
const CONSOLE_ROLES = ["owner", "admin", "viewer"] as const;
export type ConsoleRole = (typeof CONSOLE_ROLES)[number];

export interface ConsoleUser {
  readonly tenantId: string;
  readonly email: string;
  readonly role: ConsoleRole;
  readonly createdAt: string;
}

/** A signed-in console user, as every console page sees them. */
export interface ConsoleSession {
  readonly tenantId: string;
  readonly email: string;
  readonly role: ConsoleRole;
  /** The session's CSRF token: every form posts it back (`_csrf`). */
  readonly csrf: string;
}

export const canWrite = (role: ConsoleRole): boolean => role === "owner" || role === "admin";

/** How long a mailed console sign-in link works, and how long a console session lasts. */
export const CONSOLE_LINK_TTL_MS = 15 * 60_000;
export const CONSOLE_SESSION_TTL_MS = 8 * 60 * 60_000;

/** The console's cookies: only on the /console path, never read by any other route. */
export const CONSOLE_SESSION_COOKIE = "svc.console_session";
/** Before sign-in, the sign-in form's CSRF token rides in this cookie (double submit). */
export const CONSOLE_CSRF_COOKIE = "svc.console_csrf";
export const CONSOLE_PATH = "/console";

/** The same check as the identity routes' `format: "email"` (Elysia registers the format). */
const EMAIL = t.String({ format: "email", minLength: 3, maxLength: 254 });

/** A console user's address, trimmed and lower-cased; null when it is not an address. */
export function normalEmail(value: unknown): string | null {
  if (typeof value !== "string") return null;
  const email = value.trim().toLowerCase();
  return Value.Check(EMAIL, email) && isStorableText(email) ? email : null;
}

export function isRole(value: unknown): value is ConsoleRole {
  return typeof value === "string" && (CONSOLE_ROLES as readonly string[]).includes(value);
}

const ConsoleUserView = t.Object({
  tenantId: t.String(),
  email: t.String(),
  role: t.Union([t.Literal("owner"), t.Literal("admin"), t.Literal("viewer")]),
  createdAt: t.String({ format: "date-time" }),
});

/** GET /admin/tenants/:tenant/console-users. */
export const ConsoleUsersAnswer = t.Object({ users: t.Array(ConsoleUserView) });
/** POST /admin/tenants/:tenant/console-users (added, or its role changed). */
export const ConsoleUserAnswer = t.Object({ user: ConsoleUserView });
/** DELETE /admin/tenants/:tenant/console-users/:email. */
export const RemovedConsoleUserAnswer = t.Object({ removed: t.String() });
