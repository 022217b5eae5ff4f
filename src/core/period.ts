/**
 * Meter periods: the key of the period an instant falls in, in the meter's IANA time zone.
 *
 *   day     "2026-11-21"   local calendar day
 *   week    "2026-W47"     ISO 8601 week (Monday start; the year is the ISO week-year)
 *   month   "2026-11"
 *   year    "2026"
 *   forever "all"
 */

export type MeterPeriod = "day" | "week" | "month" | "year" | "forever";

const DAY_MS = 86_400_000;
const MINUTE_MS = 60_000;

/** Formatters are costly to build and immutable: one per time zone for the whole process. */
const formatters = new Map<string, Intl.DateTimeFormat>();

function formatterFor(timeZone: string): Intl.DateTimeFormat {
  let f = formatters.get(timeZone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat("en-US", {
      timeZone,
      calendar: "gregory",
      numberingSystem: "latn",
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
    });
    formatters.set(timeZone, f);
  }
  return f;
}

/** Names only (no "+01:00" offsets, which newer engines also accept): IANA-style identifiers. */
const TIME_ZONE_NAME = /^[A-Za-z][A-Za-z0-9_+\-/]{0,63}$/;

/** Whether `timeZone` is an IANA time zone name this runtime knows (e.g. "Europe/London", "UTC"). */
export function isValidTimeZone(timeZone: string): boolean {
  if (!TIME_ZONE_NAME.test(timeZone)) return false;
  try {
    formatterFor(timeZone);
    return true;
  } catch {
    return false;
  }
}

/** Local calendar date (year, month 1-12, day 1-31) of an instant in a time zone. */
function localDate(nowMs: number, timeZone: string): { year: number; month: number; day: number } {
  let year = 0;
  let month = 0;
  let day = 0;
  for (const part of formatterFor(timeZone).formatToParts(nowMs)) {
    if (part.type === "year") year = Number(part.value);
    else if (part.type === "month") month = Number(part.value);
    else if (part.type === "day") day = Number(part.value);
  }
  return { year, month, day };
}

/** ISO 8601 week-year and week number (1-53) of a calendar date. */
export function isoWeek(year: number, month: number, day: number): { year: number; week: number } {
  const days = Math.floor(Date.UTC(year, month - 1, day) / DAY_MS);
  // 1970-01-01 was a Thursday: Monday = 0 ... Sunday = 6.
  const dow = (((days + 3) % 7) + 7) % 7;
  const thursday = days - dow + 3;
  const weekYear = new Date(thursday * DAY_MS).getUTCFullYear();
  const jan1 = Math.floor(Date.UTC(weekYear, 0, 1) / DAY_MS);
  return { year: weekYear, week: Math.floor((thursday - jan1) / 7) + 1 };
}

function pad2(n: number): string {
  return n < 10 ? `0${n}` : String(n);
}

function keyOf(period: MeterPeriod, nowMs: number, timeZone: string): string {
  const { year, month, day } = localDate(nowMs, timeZone);
  switch (period) {
    case "day":
      return `${year}-${pad2(month)}-${pad2(day)}`;
    case "week": {
      const w = isoWeek(year, month, day);
      return `${w.year}-W${pad2(w.week)}`;
    }
    case "month":
      return `${year}-${pad2(month)}`;
    case "year":
      return String(year);
    case "forever":
      return "all";
  }
}

/**
 * Builds the period-key function of one meter. The formatter is resolved now (so an unknown time
 * zone throws at compile, not per request), and the last key is cached per UTC minute: every
 * time zone in use today is offset by whole minutes, so no period boundary falls inside a minute.
 */
export function createPeriodKey(period: MeterPeriod, timeZone: string): (nowMs: number) => string {
  if (period === "forever") return () => "all";
  formatterFor(timeZone);
  let lastMinute = Number.NaN;
  let lastKey = "";
  return (nowMs: number): string => {
    const minute = Math.floor(nowMs / MINUTE_MS);
    if (minute !== lastMinute) {
      lastKey = keyOf(period, nowMs, timeZone);
      lastMinute = minute;
    }
    return lastKey;
  };
}

/** Uncached period key of an instant (for tools and tests). */
export function periodKey(period: MeterPeriod, timeZone: string, nowMs: number): string {
  return keyOf(period, nowMs, timeZone);
}

/** Whole hours a time zone is ahead of or behind UTC at most (UTC-12 ... UTC+14). */
const LARGEST_OFFSET_MS = 14 * 60 * MINUTE_MS;

/**
 * An instant by which the period of `key` has ended in every time zone (its UTC end plus the
 * largest offset), or null when it never ends ("all") or the key is not a period key. Retention
 * reads only keys, not the meter's time zone, so it waits for the latest zone.
 */
export function periodEndBound(key: string): number | null {
  let m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(key);
  if (m) return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]) + 1) + LARGEST_OFFSET_MS;
  m = /^(\d{4})-W(\d{2})$/.exec(key);
  if (m) {
    const jan4 = Date.UTC(Number(m[1]), 0, 4);
    const dow = ((new Date(jan4).getUTCDay() + 6) % 7) * DAY_MS;
    return jan4 - dow + Number(m[2]) * 7 * DAY_MS + LARGEST_OFFSET_MS;
  }
  m = /^(\d{4})-(\d{2})$/.exec(key);
  if (m) return Date.UTC(Number(m[1]), Number(m[2]), 1) + LARGEST_OFFSET_MS;
  m = /^(\d{4})$/.exec(key);
  if (m) return Date.UTC(Number(m[1]) + 1, 0, 1) + LARGEST_OFFSET_MS;
  return null;
}
