import { describe, expect, it, test } from "bun:test";
import {
  createPeriodKey,
  isoWeek,
  isValidTimeZone,
  type MeterPeriod,
  periodEndBound,
  periodKey,
} from "../../src/core/period";

const at = (iso: string) => Date.parse(iso);

describe("period keys", () => {
  test.each([
    ["day", "UTC", "2026-11-21T12:00:00Z", "2026-11-21"],
    ["month", "UTC", "2026-11-21T12:00:00Z", "2026-11"],
    ["year", "UTC", "2026-11-21T12:00:00Z", "2026"],
    ["forever", "UTC", "2026-11-21T12:00:00Z", "all"],
    ["week", "UTC", "2026-11-21T12:00:00Z", "2026-W47"],
    // 23:30Z on 30 November is already 1 December in Berlin (UTC+1), still November in London.
    ["month", "Europe/Berlin", "2026-11-30T23:30:00Z", "2026-12"],
    ["month", "Europe/London", "2026-11-30T23:30:00Z", "2026-11"],
    ["day", "Europe/Berlin", "2026-11-30T23:30:00Z", "2026-12-01"],
    // New York is behind: early UTC on 1 January is still the old year there.
    ["year", "America/New_York", "2027-01-01T03:00:00Z", "2026"],
    ["year", "Asia/Tokyo", "2026-12-31T16:00:00Z", "2027"],
    // Half-hour and 45-minute offsets.
    ["day", "Asia/Kolkata", "2026-11-21T18:29:00Z", "2026-11-21"],
    ["day", "Asia/Kolkata", "2026-11-21T18:30:00Z", "2026-11-22"],
    ["day", "Asia/Kathmandu", "2026-11-21T18:15:00Z", "2026-11-22"],
    // Summer time: London is UTC+1 in July.
    ["day", "Europe/London", "2026-07-14T23:30:00Z", "2026-07-15"],
    // ISO weeks: Monday starts a week; the week-year can differ from the calendar year.
    ["week", "UTC", "2026-11-22T23:59:59Z", "2026-W47"],
    ["week", "UTC", "2026-11-23T00:00:00Z", "2026-W48"],
    ["week", "UTC", "2026-12-31T12:00:00Z", "2026-W53"],
    ["week", "UTC", "2027-01-03T12:00:00Z", "2026-W53"],
    ["week", "UTC", "2027-01-04T12:00:00Z", "2027-W01"],
    ["week", "UTC", "2024-12-30T12:00:00Z", "2025-W01"],
    ["week", "UTC", "2021-01-03T12:00:00Z", "2020-W53"],
    // Sunday 23:30 UTC is Monday 00:30 in Berlin: a new week there.
    ["week", "Europe/Berlin", "2026-11-22T23:30:00Z", "2026-W48"],
    ["week", "Europe/London", "2026-11-22T23:30:00Z", "2026-W47"],
  ] as [MeterPeriod, string, string, string][])("%s in %s at %s is %s", (period, tz, instant, expected) => {
    expect(periodKey(period, tz, at(instant))).toBe(expected);
    expect(createPeriodKey(period, tz)(at(instant))).toBe(expected);
  });

  test("the cached key function follows the clock across a boundary", () => {
    const key = createPeriodKey("month", "Europe/Berlin");
    expect(key(at("2026-11-30T22:59:00Z"))).toBe("2026-11");
    expect(key(at("2026-11-30T22:59:59Z"))).toBe("2026-11");
    expect(key(at("2026-11-30T23:00:00Z"))).toBe("2026-12");
    expect(key(at("2026-11-30T22:59:30Z"))).toBe("2026-11");
  });

  test("isoWeek agrees with a day-by-day count over several years", () => {
    // Walk every day from Monday 2024-01-01 (2024-W01): weeks advance on Mondays only.
    let expectedYear = 2024;
    let expectedWeek = 1;
    const start = Date.UTC(2024, 0, 1);
    for (let d = 0; d < 366 * 4; d++) {
      const date = new Date(start + d * 86_400_000);
      if (d > 0 && date.getUTCDay() === 1) {
        expectedWeek++;
        // A new week-year starts on the Monday of the week holding 4 January.
        const thursday = new Date(date.getTime() + 3 * 86_400_000);
        if (thursday.getUTCFullYear() !== expectedYear) {
          expectedYear = thursday.getUTCFullYear();
          expectedWeek = 1;
        }
      }
      expect(isoWeek(date.getUTCFullYear(), date.getUTCMonth() + 1, date.getUTCDate())).toEqual({
        year: expectedYear,
        week: expectedWeek,
      });
    }
  });
});

describe("time zones", () => {
  test.each([
    ["Europe/London", true],
    ["UTC", true],
    ["America/Argentina/Buenos_Aires", true],
    ["Etc/GMT+5", true],
    ["Europe/Atlantis", false],
    ["+01:00", false],
    ["", false],
    ["local", false],
  ])("%p valid: %p", (tz, valid) => {
    expect(isValidTimeZone(tz)).toBe(valid);
  });
});

describe("periodEndBound", () => {
  const H14 = 14 * 3_600_000;
  it.each([
    ["2026-11-21", Date.UTC(2026, 10, 22) + H14],
    ["2026-W47", Date.UTC(2026, 10, 23) + H14],
    ["2027-W01", Date.UTC(2027, 0, 11) + H14],
    ["2026-12", Date.UTC(2027, 0, 1) + H14],
    ["2026", Date.UTC(2027, 0, 1) + H14],
  ])("puts the end of %s after its last local midnight anywhere", (key, end) => {
    expect(periodEndBound(key)).toBe(end);
  });

  it("never ends a forever meter, nor a key it cannot read", () => {
    expect(periodEndBound("all")).toBeNull();
    expect(periodEndBound("2026-13-xx")).toBeNull();
  });

  it("ends every period key after each instant that has it, in the farthest time zones", () => {
    for (const tz of ["Pacific/Kiritimati", "Etc/GMT+12", "UTC", "America/New_York"]) {
      for (const period of ["day", "week", "month", "year"] as const) {
        // Every 30 minutes over the turn of a year, a month and an ISO week.
        for (let t = Date.UTC(2026, 11, 26); t < Date.UTC(2027, 0, 6); t += 1_800_000) {
          expect(periodEndBound(periodKey(period, tz, t))!).toBeGreaterThan(t);
        }
      }
    }
  });
});
