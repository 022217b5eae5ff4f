import { gt, sql } from "drizzle-orm";
import { type Database, rowsOf } from "../../db/client";
import { changeLog } from "../../db/schema";
import { errorText } from "../infra/error-text";
import type { Logger } from "../logger";

export type ChangeTopic = "tenant" | "site" | "key" | "grants" | "traits" | "gift" | "streaming" | "newsletters";

export interface Change {
  readonly topic: ChangeTopic;
  readonly tenantId: string;
  readonly subject: string;
  /** The change log row's id, on changes read back from the log. */
  readonly id?: number;
}

const CHANNEL = "svc_changes";

/**
 * Tells every process that a tenant, site, key or user's grants changed, so it reloads that
 * one thing. Writers append to `change_log` (and NOTIFY on a server); readers apply rows past
 * the last id they saw: on NOTIFY, and on a short poll as the safety net for a lost NOTIFY. A
 * `pollMs` of 0 means no timer at all: the embedded store has one process, which applies its
 * own changes as it publishes them.
 */
export class ChangeFeed {
  private lastId = 0;
  private timer: ReturnType<typeof setInterval> | null = null;
  private unlisten: (() => Promise<void>) | null = null;
  private polling: Promise<void> | null = null;
  private again = false;
  /** When the change log was last read successfully (performance.now()), for /metrics. */
  lastReadAt = performance.now();

  constructor(
    private readonly database: Database,
    private readonly apply: (change: Change) => Promise<void>,
    private readonly logger: Logger,
    private readonly pollMs: number,
  ) {}

  /** Skips history: the caller loads full state at start, so only later changes matter. */
  async start(): Promise<void> {
    const rows = rowsOf<{ id: number | string }>(
      await this.database.db.execute(sql`select coalesce(max(id), 0) as id from change_log`),
    );
    this.lastId = Number(rows[0]?.id ?? 0);
    const sub = await this.database.listen(CHANNEL, () => void this.poll());
    this.unlisten = sub?.unlisten ?? null;
    if (this.pollMs <= 0) return;
    this.timer = setInterval(() => void this.poll(), this.pollMs);
    (this.timer as { unref?: () => void }).unref?.();
  }

  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    if (this.unlisten) await this.unlisten();
    this.unlisten = null;
    if (this.polling) await this.polling;
  }

  /**
   * Seconds since this process last read the change log: how far behind other processes'
   * changes it may be. 0 without a poll timer (the embedded store: this process makes and
   * applies every change itself).
   */
  lagSeconds(now = performance.now()): number {
    return this.pollMs > 0 && this.timer !== null ? (now - this.lastReadAt) / 1000 : 0;
  }

  /** Records a change and applies it in this process before returning. */
  async publish(change: Change): Promise<void> {
    await this.database.db.insert(changeLog).values(change);
    await this.notify();
    await this.poll();
  }

  /**
   * Tells every process that `change_log` has rows past what they saw, and starts applying them
   * here without waiting: for a writer that inserted its change row in its own statement and has
   * already applied the change to its own process (a streaming batch).
   */
  async announce(): Promise<void> {
    await this.notify();
    void this.poll();
  }

  private async notify(): Promise<void> {
    if (this.database.kind === "server") {
      await this.database.db.execute(sql`select pg_notify(${CHANNEL}, '')`);
    }
  }

  /** Applies every change past the last one seen; overlapping calls coalesce. */
  poll(): Promise<void> {
    if (this.polling) {
      this.again = true;
      return this.polling;
    }
    this.polling = (async () => {
      do {
        this.again = false;
        try {
          const rows = await this.database.db
            .select()
            .from(changeLog)
            .where(gt(changeLog.id, this.lastId))
            .orderBy(changeLog.id)
            .limit(1000);
          for (const row of rows) {
            try {
              await this.apply(row);
            } catch (error) {
              this.logger.error("applying a change failed", {
                topic: row.topic,
                subject: row.subject,
                error: errorText(error),
              });
            }
            this.lastId = row.id;
          }
          this.lastReadAt = performance.now();
          if (rows.length === 1000) this.again = true;
        } catch (error) {
          this.logger.warn("change poll failed", { error: errorText(error) });
        }
      } while (this.again);
    })().finally(() => {
      this.polling = null;
    });
    return this.polling;
  }
}
