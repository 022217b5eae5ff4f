import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../../db/client";
import type { DecisionCountRow } from "../counters/decision-counts";
import {
  type BucketQuery,
  type CheckoutConversion,
  type CheckoutDay,
  type DecisionCountBucket,
  type InsightStore,
  type MeterValueCount,
  summedRows,
} from "./store";

const iso = (ms: number) => new Date(ms).toISOString();
const ms = (v: unknown) => (v instanceof Date ? v.getTime() : new Date(String(v)).getTime());

/** Insight on Postgres: decision counts (`decision_counts`), checkout sessions and meter rows. */
export class DrizzleInsightStore implements InsightStore {
  constructor(private readonly db: Db) {}

  async addDecisionCounts(rows: readonly DecisionCountRow[]): Promise<void> {
    // Rows as column arrays through unnest: a constant-size statement, built on the request
    // thread in a few array pushes (a `values` list of 11 bound parameters a row, built with the
    // query builder, held that thread for milliseconds a flush).
    const cols = {
      tenant: [] as string[],
      site: [] as string[],
      grain: [] as string[],
      bucket: [] as string[],
      feature: [] as string[],
      outcome: [] as string[],
      experiment: [] as string[],
      variant: [] as string[],
      verdict: [] as string[],
      offer: [] as string[],
      count: [] as number[],
    };
    for (const r of summedRows(rows).values()) {
      cols.tenant.push(r.tenantId);
      cols.site.push(r.siteId);
      cols.grain.push(r.grain);
      cols.bucket.push(iso(r.bucket));
      cols.feature.push(r.feature);
      cols.outcome.push(r.outcome);
      cols.experiment.push(r.experiment);
      cols.variant.push(r.variant);
      cols.verdict.push(r.verdict);
      cols.offer.push(r.offer);
      cols.count.push(r.count);
    }
    if (cols.count.length === 0) return;
    // Each array as text[] (postgres.js serializes a text[] or int8[] parameter, not a timestamptz[]).
    const text = (values: string[]) => sql`${sql.param(values)}::text[]`;
    await this.db.execute(sql`insert into decision_counts
      (tenant_id, site_id, grain, bucket, feature, outcome, experiment, variant, verdict, offer, count)
      select * from unnest(${text(cols.tenant)}, ${text(cols.site)}, ${text(cols.grain)},
        ${text(cols.bucket)}::timestamptz[], ${text(cols.feature)}, ${text(cols.outcome)},
        ${text(cols.experiment)}, ${text(cols.variant)}, ${text(cols.verdict)}, ${text(cols.offer)},
        ${sql.param(cols.count)}::bigint[])
      on conflict (tenant_id, site_id, grain, bucket, feature, outcome, experiment, variant)
      do update set count = decision_counts.count + excluded.count, verdict = excluded.verdict, offer = excluded.offer`);
  }

  async decisionBuckets(q: BucketQuery): Promise<DecisionCountBucket[]> {
    const rows = rowsOf<Record<string, unknown>>(
      await this.db.execute(sql`select bucket, feature, outcome, experiment, variant, verdict, offer, count
        from decision_counts
        where tenant_id = ${q.tenantId} and site_id = ${q.siteId} and grain = ${q.grain}
          and bucket >= ${iso(q.from)}::timestamptz and bucket < ${iso(q.to)}::timestamptz
        order by bucket, feature, outcome, experiment, variant`),
    );
    return rows.map((r) => ({
      bucket: ms(r.bucket),
      feature: String(r.feature),
      outcome: String(r.outcome),
      experiment: String(r.experiment),
      variant: String(r.variant),
      verdict: String(r.verdict),
      offer: String(r.offer),
      count: Number(r.count),
    }));
  }

  async checkoutDays(tenantId: string, siteId: string, from: number, to: number): Promise<CheckoutDay[]> {
    // Started by the day a session was created; completed and granted by the day it completed.
    const rows = rowsOf<Record<string, unknown>>(
      await this.db.execute(sql`select day, offer, sum(started)::int as started, sum(completed)::int as completed,
          sum(granted)::int as granted from (
          select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD') as day, offer, 1 as started, 0 as completed, 0 as granted
            from checkout_sessions where tenant_id = ${tenantId} and site_id = ${siteId}
              and created_at >= ${iso(from)}::timestamptz and created_at < ${iso(to)}::timestamptz
          union all
          select to_char(completed_at at time zone 'UTC', 'YYYY-MM-DD'), offer, 0, 1,
              case when granted_user_id is null then 0 else 1 end
            from checkout_sessions where tenant_id = ${tenantId} and site_id = ${siteId}
              and completed_at >= ${iso(from)}::timestamptz and completed_at < ${iso(to)}::timestamptz
        ) s group by day, offer order by day, offer`),
    );
    return rows.map((r) => ({
      day: Date.parse(`${String(r.day)}T00:00:00Z`),
      offer: String(r.offer),
      started: Number(r.started),
      completed: Number(r.completed),
      granted: Number(r.granted),
    }));
  }

  async conversions(tenantId: string, siteId: string, from: number, to: number): Promise<CheckoutConversion[]> {
    const rows = rowsOf<Record<string, unknown>>(
      await this.db.execute(sql`select granted_user_id, offer, completed_at from checkout_sessions
        where tenant_id = ${tenantId} and site_id = ${siteId} and granted_user_id is not null
          and completed_at >= ${iso(from)}::timestamptz and completed_at < ${iso(to)}::timestamptz`),
    );
    return rows.map((r) => ({
      userId: String(r.granted_user_id),
      offer: String(r.offer),
      completedAt: ms(r.completed_at),
    }));
  }

  async meterValues(
    tenantId: string,
    siteId: string,
    meter: string,
    period: string,
    kind: "seen" | "count",
  ): Promise<MeterValueCount[]> {
    const perSubject =
      kind === "seen"
        ? sql`select count(*)::int as value from meter_seen s join meter_keys k on k.id = s.meter_id
            where k.tenant_id = ${tenantId} and k.site_id = ${siteId} and k.meter = ${meter} and k.period = ${period}
            group by s.subject`
        : sql`select c.count as value from meter_counts c join meter_keys k on k.id = c.meter_id
            where k.tenant_id = ${tenantId} and k.site_id = ${siteId} and k.meter = ${meter} and k.period = ${period}
              and c.count > 0`;
    const rows = rowsOf<Record<string, unknown>>(
      await this.db.execute(
        sql`select value, count(*)::int as readers from (${perSubject}) v group by value order by value`,
      ),
    );
    return rows.map((r) => ({ value: Number(r.value), readers: Number(r.readers) }));
  }
}
