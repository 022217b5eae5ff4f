/** The soak's results, its verdict on flatness and its console table (bench/soak.ts runs it). */
import type { SoakMix, TableSize } from "./soak-world";

/**
 * Weeks before the size can be flat: the first month (31 days) and the longest grace after it
 * (a session's 30 days plus 7, a meter period's 7 days, a document version's 30) end by day 42.
 */
export const SETTLED_FROM_WEEK = 6;
/** How much the later half's peak may exceed the earlier half's and still be called flat. */
export const FLAT_TOLERANCE = 0.05;
/** A table's own tolerance: 5% or two pages, whichever is more (one row can cost a page). */
const TABLE_SLACK_BYTES = 16_384;

export interface SoakWeek {
  week: number;
  date: string;
  databaseBytes: number;
  /** Above the store right after migrations and the demo seed (the empty schema and catalog). */
  storedBytes: number;
  /**
   * The largest stored size read after any day of the week: a month's meter rows peak the day
   * before its period is swept, between two weekly readings.
   */
  peakStoredBytes: number;
  /** The embedded store's data folder on disk (WAL included); null on a Postgres server. */
  folderBytes: number | null;
  liveReaders: number;
  bytesPerLiveReader: number;
  storedBytesPerLiveReader: number;
  catalogBytes: number;
  catalog: Record<string, number>;
  tables: Record<string, TableSize>;
  /** Progress only (seconds since the first day): never a measurement. */
  seconds: number;
}

export interface Flatness {
  fromWeek: number;
  toWeek: number;
  /** The largest stored size (above the empty store, any day) in the window's earlier half, and in its later half. */
  earlierPeak: number;
  laterPeak: number;
  /** laterPeak / earlierPeak − 1: above the tolerance, the store still grows. */
  growth: number;
  /** The database size over the window: (largest − smallest) / smallest. */
  databaseSpread: number;
  tolerance: number;
  /** null: too few weeks to judge. */
  held: boolean | null;
  /** Tables, and "(catalog)", whose later peak exceeds their earlier one by more than 5% (or two pages). */
  growingTables: string[];
}

export interface SoakResults {
  store: "embedded" | "postgres";
  weeks: number;
  mix: SoakMix;
  /** On a Postgres server the soak vacuums once a simulated day, standing in for autovacuum. */
  vacuum: string;
  emptyBytes: number;
  flatness: Flatness;
  results: SoakWeek[];
}

/**
 * Flat means: from `fromWeek` on, the later half of the weeks peaks no more than `tolerance` above
 * the earlier half. Peaks, not single weeks: a monthly meter's rows rise through its month and
 * fall when the last period is swept, so single weeks saw-tooth; a store that keeps growing
 * shows in the later peak. Over 14 weeks the halves are weeks 6-10 and 11-14, each holding one
 * peak of a 31-day month's rows (7 February: January's; 7 April: March's).
 */
export function flatness(
  weeks: readonly (Pick<SoakWeek, "week" | "databaseBytes" | "peakStoredBytes" | "tables"> & {
    catalogBytes?: number;
  })[],
  fromWeek = SETTLED_FROM_WEEK,
  tolerance = FLAT_TOLERANCE,
): Flatness {
  const window = weeks.filter((w) => w.week >= fromWeek);
  const half = Math.ceil(window.length / 2);
  const earlier = window.slice(0, half);
  const later = window.slice(half);
  const peak = (ws: typeof window, of: (w: (typeof window)[number]) => number) =>
    ws.reduce((m, w) => Math.max(m, of(w)), 0);
  const earlierPeak = peak(earlier, (w) => w.peakStoredBytes);
  const laterPeak = peak(later, (w) => w.peakStoredBytes);
  const sizes = window.map((w) => w.databaseBytes);
  const judged = window.length >= 3;
  const grew = (of: (w: (typeof window)[number]) => number) => {
    const before = peak(earlier, of);
    return peak(later, of) > Math.max(before * (1 + tolerance), before + TABLE_SLACK_BYTES);
  };
  const tables = Object.keys(window.at(-1)?.tables ?? {});
  const growingTables = judged ? tables.filter((t) => grew((w) => w.tables[t]?.bytes ?? 0)) : [];
  if (judged && grew((w) => w.catalogBytes ?? 0)) growingTables.push("(catalog)");
  const growth = earlierPeak > 0 ? laterPeak / earlierPeak - 1 : 0;
  return {
    fromWeek,
    toWeek: window.at(-1)?.week ?? fromWeek,
    earlierPeak,
    laterPeak,
    growth,
    databaseSpread: sizes.length > 0 ? Math.max(...sizes) / Math.min(...sizes) - 1 : 0,
    tolerance,
    held: judged ? growth <= tolerance : null,
    growingTables,
  };
}

const mb = (bytes: number) => `${(bytes / 1e6).toFixed(2)} MB`;

export function weekLine(w: SoakWeek): string {
  const disk = w.folderBytes === null ? "" : `  folder ${mb(w.folderBytes)}`;
  return `soak week ${String(w.week).padStart(2)}  ${w.date}  database ${mb(w.databaseBytes)}  stored ${mb(w.storedBytes)} (week's peak ${mb(w.peakStoredBytes)})${disk}  ${w.liveReaders} live readers: ${w.bytesPerLiveReader} B each, ${w.storedBytesPerLiveReader} B stored  (${w.seconds} s)`;
}

/** The verdict and each table's size at the settled week and the last, for the console. */
export function printSoak(r: SoakResults): void {
  const f = r.flatness;
  const first = r.results.find((w) => w.week === f.fromWeek);
  const last = r.results.at(-1);
  if (first && last) {
    const kb = (b: number | undefined) => `${Math.round((b ?? 0) / 1024)}`;
    const tables = Object.keys(last.tables)
      .filter((t) => (last.tables[t]?.bytes ?? 0) >= 32_768 || (first.tables[t]?.bytes ?? 0) >= 32_768)
      .sort((a, b) => (last.tables[b]?.bytes ?? 0) - (last.tables[a]?.bytes ?? 0));
    console.log(`soak: tables of 32 KB or more, week ${f.fromWeek} and week ${last.week} (KB; rows)`);
    console.table(
      Object.fromEntries([
        ...tables.map((t) => {
          const a = first.tables[t];
          const b = last.tables[t];
          return [
            t,
            {
              [`week ${f.fromWeek}`]: kb(a?.bytes),
              [`week ${last.week}`]: kb(b?.bytes),
              "heap / indexes / toast": `${kb(b?.heap)} / ${kb(b?.indexes)} / ${kb(b?.toast)}`,
              rows: `${a?.rows ?? 0} -> ${b?.rows ?? 0}`,
              dead: b?.dead ?? "-",
            },
          ];
        }),
        [
          "(catalog)",
          {
            [`week ${f.fromWeek}`]: kb(first.catalogBytes),
            [`week ${last.week}`]: kb(last.catalogBytes),
            "heap / indexes / toast": "-",
            rows: "-",
            dead: "-",
          },
        ],
      ]),
    );
  }
  const verdict =
    f.held === null
      ? `too few weeks to judge (flat is judged from week ${f.fromWeek} on, over 3 weeks or more)`
      : `${f.held ? "flat" : "NOT flat"}: weeks ${f.fromWeek}-${f.toWeek}, stored peak ${mb(f.earlierPeak)} in the earlier half, ${mb(f.laterPeak)} in the later (${(f.growth * 100).toFixed(1)}%, tolerance ${f.tolerance * 100}%); database size within ${(f.databaseSpread * 100).toFixed(1)}%${f.growingTables.length ? `; still growing: ${f.growingTables.join(", ")}` : ""}`;
  console.log(`soak (${r.store} store, ${r.mix.readers} readers, ${r.weeks} weeks): ${verdict}`);
}
