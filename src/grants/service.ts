import type { GrantRow } from "../users/store";

export interface HeldGrantJson {
  grant: string;
  expiresAt: string | null;
}

/**
 * The grants a user holds at `now`, in the stored order (by name). A grant whose expiry has
 * passed is left out, as decisions leave it out: it no longer grants anything.
 */
export function heldGrants(rows: readonly GrantRow[], now: number): HeldGrantJson[] {
  const held: HeldGrantJson[] = [];
  for (const row of rows) {
    if (row.expiresAt !== null && row.expiresAt.getTime() <= now) continue;
    held.push({ grant: row.grant, expiresAt: row.expiresAt?.toISOString() ?? null });
  }
  return held;
}
