import { type SQL, sql } from "drizzle-orm";
import { type Db, rowsOf } from "../../db/client";
import type { RetentionSettings } from "../config";
import { periodEndBound } from "../core/period";

const MINUTE_MS = 60_000;
const DAY_MS = 86_400_000;

/**
 * One retention rule: which rows of a table have ended and may go. `where` is the predicate of
 * the ended rows at `now`; the sweeper deletes them a batch at a time (docs/operations.md,
 * "Retention", lists every table, these and the ones bounded by live data).
 */
export interface RetentionRule {
  readonly table: string;
  readonly where: (settings: RetentionSettings, now: number) => SQL;
}

const before = (ms: number) => new Date(ms).toISOString();

/** A site's newest document versions that stay whatever their age (a rollback target always exists). */
export const DOCUMENT_VERSIONS_ALWAYS = 10;

/** Rules over one table each; meter periods (two tables and their key) are swept by `sweepMeterPeriods`. */
export const RETENTION_RULES: readonly RetentionRule[] = [
  {
    table: "change_log",
    // The newest row stays: a process that starts reads max(id) as where it begins.
    where: (s, now) =>
      sql`created_at < ${before(now - s.changeLogMinutes * MINUTE_MS)} and id < (select max(id) from change_log)`,
  },
  { table: "sessions", where: (s, now) => sql`expires_at < ${before(now - s.expiredDays * DAY_MS)}` },
  { table: "magic_links", where: (s, now) => sql`expires_at < ${before(now - s.expiredDays * DAY_MS)}` },
  { table: "console_tokens", where: (s, now) => sql`expires_at < ${before(now - s.expiredDays * DAY_MS)}` },
  {
    table: "invitations",
    where: (s, now) => {
      const cutoff = before(now - s.expiredDays * DAY_MS);
      return sql`(expires_at < ${cutoff} or (status <> 'pending' and created_at < ${cutoff}))`;
    },
  },
  {
    table: "newsletter_confirmations",
    where: (s, now) => sql`expires_at < ${before(now - s.expiredDays * DAY_MS)}`,
  },
  {
    table: "newsletter_standings",
    // A pending standing past its deadline reads as no standing at all.
    where: (s, now) => sql`status = 'pending' and pending_until < ${before(now - s.expiredDays * DAY_MS)}`,
  },
  { table: "grants", where: (s, now) => sql`expires_at < ${before(now - s.expiredDays * DAY_MS)}` },
  {
    // A link's redemptions (members of the `$gift` seen counter, subject = gift id) go first.
    table: "meter_seen",
    where: (s, now) =>
      sql`meter_id in (select id from meter_keys where meter = '$gift') and subject in (select id::text from gift_links where expires_at < ${before(now - s.expiredDays * DAY_MS)})`,
  },
  {
    table: "gift_links",
    where: (s, now) =>
      sql`expires_at < ${before(now - s.expiredDays * DAY_MS)} and not exists (select 1 from meter_seen m join meter_keys k on k.id = m.meter_id where k.meter = '$gift' and m.subject = gift_links.id::text)`,
  },
  {
    table: "gift_allowances",
    // Allowances count per UTC month: only the current one is read.
    where: (s, now) => sql`period < ${monthOf(now - s.expiredDays * DAY_MS - 31 * DAY_MS)}`,
  },
  {
    table: "checkout_sessions",
    // A session never completed: the provider expires it within a day.
    where: (s, now) => sql`status = 'open' and created_at < ${before(now - s.checkoutEventDays * DAY_MS)}`,
  },
  {
    table: "checkout_events",
    where: (s, now) => sql`processed_at < ${before(now - s.checkoutEventDays * DAY_MS)}`,
  },
  {
    table: "mail_outbox",
    where: (s, now) => sql`status in ('sent', 'failed') and created_at < ${before(now - s.mailDays * DAY_MS)}`,
  },
  {
    table: "site_documents",
    // The live and staged versions always stay, and the newest `DOCUMENT_VERSIONS_ALWAYS`; past
    // those, a version goes once it is `documentDays` old or `documentVersions` newer ones exist.
    where: (s, now) => sql`version <= (select max(d.version) from site_documents d
        where d.tenant_id = site_documents.tenant_id and d.site_id = site_documents.site_id)
        - (case when created_at < ${before(now - s.documentDays * DAY_MS)}
            then ${Math.min(DOCUMENT_VERSIONS_ALWAYS, s.documentVersions)}::int else ${s.documentVersions}::int end)
      and not exists (select 1 from sites x where x.tenant_id = site_documents.tenant_id and x.id = site_documents.site_id
        and (x.live_version = site_documents.version or x.preview_version = site_documents.version))`,
  },
  {
    table: "mail_budget",
    // A window's spending is read only while the window lasts; the budget also prunes as it spends.
    where: (_s, now) => sql`expires_at < ${before(now)}`,
  },
  { table: "audit_log", where: (s, now) => sql`at < ${before(now - s.auditDays * DAY_MS)}` },
  { table: "identity_conflicts", where: (s, now) => sql`created_at < ${before(now - s.auditDays * DAY_MS)}` },
  { table: "jobs", where: (s, now) => sql`state = 'dead' and run_at < ${before(now - s.auditDays * DAY_MS)}` },
  {
    table: "decision_counts",
    // Each grain for its own days: minutes for the last hours, hours for weeks, days for years.
    where: (s, now) =>
      sql`((grain = 'minute' and bucket < ${before(now - s.decisionMinuteDays * DAY_MS)})
        or (grain = 'hour' and bucket < ${before(now - s.decisionHourDays * DAY_MS)})
        or (grain = 'day' and bucket < ${before(now - s.decisionDayDays * DAY_MS)}))`,
  },
  {
    table: "recommendation_usage",
    where: (s, now) => sql`period < ${monthOf(now - s.auditDays * DAY_MS)}`,
  },
];

function monthOf(ms: number): string {
  return new Date(ms).toISOString().slice(0, 7);
}

/** Deletes at most `batch` ended rows of one rule's table; returns how many went. */
export async function sweepBatch(
  db: Db,
  rule: RetentionRule,
  settings: RetentionSettings,
  now: number,
): Promise<number> {
  const table = sql.identifier(rule.table);
  const result = await db.execute(
    sql`delete from ${table} where ctid = any(array(select ctid from ${table} where ${rule.where(settings, now)} limit ${settings.batch})) returning 1 as gone`,
  );
  return rowsOf(result).length;
}

/** A meter's own retention in days (its document's `retainDays`), or undefined for the global setting. */
export type MeterRetention = (tenantId: string, siteId: string, meter: string) => number | undefined;

/**
 * Meter periods that ended their meter's retention days ago everywhere (`retainDays` in the live
 * document, else `meterDays`): their meter_seen and meter_counts rows go a batch at a time, then
 * their meter_keys row. Returns the rows deleted by this call (at most about one batch), 0 once
 * nothing of an ended period is left.
 */
export async function sweepMeterPeriods(
  db: Db,
  settings: RetentionSettings,
  now: number,
  retentionOf: MeterRetention = () => undefined,
): Promise<number> {
  const keys = rowsOf<{ id: number; tenant_id: string; site_id: string; meter: string; period: string }>(
    await db.execute(sql`select id, tenant_id, site_id, meter, period from meter_keys where period <> 'all'`),
  );
  for (const key of keys) {
    const end = periodEndBound(key.period);
    const days = retentionOf(key.tenant_id, key.site_id, key.meter) ?? settings.meterDays;
    if (end === null || end > now - days * DAY_MS) continue;
    let gone = 0;
    for (const table of ["meter_seen", "meter_counts"]) {
      const t = sql.identifier(table);
      const rows = await db.execute(
        sql`delete from ${t} where ctid = any(array(select ctid from ${t} where meter_id = ${key.id} limit ${settings.batch})) returning 1 as gone`,
      );
      gone += rowsOf(rows).length;
      if (gone > 0) return gone;
    }
    await db.execute(sql`delete from meter_keys where id = ${key.id}`);
    return 1;
  }
  return 0;
}
