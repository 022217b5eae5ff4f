/**
 * Meter values as the counters hold them, and the key they are stored and looked up under.
 */

/**
 * A seen meter's members for one subject: one article id (the common case, no array), or an
 * array of them. The count of a seen meter is its number of members.
 */
export type SeenValue = string | readonly string[];

/** A held value: a count meter's count, or a seen meter's members. */
export type MeterValue = number | SeenValue;

export const NO_ITEMS: readonly string[] = Object.freeze([]);

/** What a loaded row gives: the stored count and, for seen meters, the stored members. */
export interface Loaded {
  count: number;
  items: string[] | null;
}

/** Separates the key's columns (a character no id is allowed to hold in any useful way). */
export const SEP = "\u0001";

/** The counter key of (tenant, site, meter, subject, period): the loader's and the filter's key. */
export function meterKey(tenant: string, site: string, meter: string, subject: string, period: string): string {
  return tenant + SEP + site + SEP + meter + SEP + subject + SEP + period;
}

/** Count of a held value. */
export function countOf(value: MeterValue): number {
  return typeof value === "number" ? value : typeof value === "string" ? 1 : value.length;
}

/** Whether a held seen value holds `item`. */
export function holds(value: MeterValue, item: string): boolean {
  if (typeof value === "string") return value === item;
  if (typeof value === "number") return false;
  // A plain loop: a seen meter holds a handful of ids, too few to pay for a native includes call.
  for (let i = 0; i < value.length; i++) if (value[i] === item) return true;
  return false;
}

/** What the store answered an admission, and the meter's key id (kept by the table). */
export interface SeenAdmission {
  readonly outcome: "added" | "member" | "full";
  readonly before: number;
  readonly keyId: number;
}
