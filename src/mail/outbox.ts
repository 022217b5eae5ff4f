import { and, eq, inArray, lte, sql } from "drizzle-orm";
import nodemailer from "nodemailer";
import type { Db } from "../../db/client";
import { mailOutbox } from "../../db/schema";
import { errorText } from "../infra/error-text";
import { AppError } from "../infra/errors";
import type { Logger } from "../logger";
import type { SealedText } from "./sealed-text";

export interface Mail {
  readonly tenantId: string;
  readonly to: string;
  readonly subject: string;
  readonly text: string;
  readonly html?: string;
  /** Extra headers (e.g. List-Unsubscribe and List-Unsubscribe-Post on newsletter mail). */
  readonly headers?: Readonly<Record<string, string>>;
}

/**
 * Where mail goes: SMTP in production; the log with the embedded development store and no SMTP;
 * `none` with a Postgres server (DATABASE_URL) and no SMTP: mail is refused (503), never printed.
 */
export interface MailTransport {
  readonly kind: "smtp" | "log" | "none";
  send(mail: Mail): Promise<void>;
}

export function smtpTransport(url: string, from: string): MailTransport {
  const transporter = nodemailer.createTransport(url);
  return {
    kind: "smtp",
    async send(mail) {
      await transporter.sendMail({
        from,
        to: mail.to,
        subject: mail.subject,
        text: mail.text,
        html: mail.html,
        headers: mail.headers === undefined ? undefined : { ...mail.headers },
      });
    },
  };
}

/**
 * Development only (the embedded store, no SMTP): prints the whole message, links included, as
 * one JSON log line on stdout.
 */
export function logTransport(write: (line: string) => void = (l) => console.log(l)): MailTransport {
  return {
    kind: "log",
    async send(mail) {
      write(
        JSON.stringify({
          time: new Date().toISOString(),
          level: "info",
          message: "mail (development: no SVC_SMTP_URL, so printed instead of sent)",
          to: mail.to,
          subject: mail.subject,
          text: mail.text,
        }),
      );
    },
  };
}

/** A Postgres server without SVC_SMTP_URL: no mail can be sent, and none is printed. */
export function noMailTransport(): MailTransport {
  return {
    kind: "none",
    async send() {
      throw mailNotConfigured();
    },
  };
}

/** 503 without Retry-After: the capability is not configured, so retrying will not help. */
function mailNotConfigured(): AppError {
  return new AppError("service_unavailable", "Mail is not configured on this server (SVC_SMTP_URL).");
}

const BATCH = 20;
const MAX_ATTEMPTS = 5;
const CLAIM_MS = 60_000;

/**
 * Mail is written to the outbox in the request and sent by a drainer: a slow or down SMTP
 * server never fails the request, and nothing is lost across restarts. Rows are claimed with
 * SKIP LOCKED (several processes may drain) and sent outside any transaction. Bodies are stored
 * sealed (AES-GCM under a key from SVC_SECRET, `sealed-text.ts`), since a body may hold a sign-in
 * link, and a sent row's body is blanked.
 */
export class Outbox {
  private timer: ReturnType<typeof setInterval> | null = null;
  private draining: Promise<number> | null = null;
  /** Timer ticks skip the store until then: nothing is due before it, as far as we know. */
  private quietUntil = 0;
  /** Bumped by every enqueue, so a drain that overlapped one never declares the outbox quiet. */
  private enqueued = 0;
  /** `enqueued` when the drain in flight began. */
  private drainingFrom = 0;
  /** Set by `stop`: no drain starts after it (rows wait in the outbox for the next start). */
  private stopped = false;

  /**
   * `shared`: other processes use the same store (a Postgres server), so every timer tick looks
   * for due rows. Otherwise (the embedded store) this process wrote every row, and after a drain
   * the ticks skip the store until the earliest unsent row falls due: an idle outbox costs no
   * query.
   */
  constructor(
    private readonly db: Db,
    private readonly transport: MailTransport,
    private readonly logger: Logger,
    private readonly now: () => number,
    private readonly shared: boolean,
    /** Seals bodies at rest (they may carry a sign-in link); from SVC_SECRET. */
    private readonly sealed: SealedText,
  ) {}

  /** Throws 503 (not configured) when this server cannot send mail: call before writing anything. */
  assertCanSend(): void {
    if (this.transport.kind === "none") throw mailNotConfigured();
  }

  /**
   * Writes a mail to the outbox and starts a drain. Mail sent on a caller's behalf goes through
   * `enqueueIn` instead, in the transaction that takes its mail budget (src/mail-budget).
   */
  async enqueue(mail: Mail): Promise<void> {
    await this.enqueueIn(this.db, mail);
    this.kick();
  }

  /**
   * Writes a mail inside the caller's transaction (the one that takes its mail budget and writes
   * its link); returns its id. Call `kick` once that transaction has committed: a drain that ran
   * before the commit would not see the row.
   */
  async enqueueIn(tx: Db, mail: Mail): Promise<number> {
    this.assertCanSend();
    const [row] = await tx
      .insert(mailOutbox)
      .values({
        tenantId: mail.tenantId,
        recipient: mail.to,
        subject: mail.subject,
        text: this.sealed.seal(mail.text),
        html: mail.html === undefined ? null : this.sealed.seal(mail.html),
        headers: mail.headers === undefined ? null : this.sealed.seal(JSON.stringify(mail.headers)),
        nextAttemptAt: new Date(this.now()),
        // The retention sweep ages sent mail by this clock (src/retention).
        createdAt: new Date(this.now()),
      })
      .returning({ id: mailOutbox.id });
    return row!.id;
  }

  /** Rows were written (and committed): the next tick looks again, and a drain starts now. */
  kick(): void {
    this.enqueued++;
    this.quietUntil = 0;
    void this.drain();
  }

  start(intervalMs = 1000): void {
    this.stopped = false;
    if (this.timer) return;
    this.timer = setInterval(() => {
      if (this.now() >= this.quietUntil) void this.drain();
    }, intervalMs);
    (this.timer as { unref?: () => void }).unref?.();
  }

  /** Stops the timer and waits out the drains in flight (a drain chained behind one included). */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    while (this.draining) await this.draining;
  }

  /** Mails not sent yet (pending or being sent), for /metrics. */
  async backlog(): Promise<number> {
    const [row] = await this.db
      .select({ n: sql<number | string>`count(*)` })
      .from(mailOutbox)
      .where(inArray(mailOutbox.status, ["pending", "sending"]));
    return Number(row?.n ?? 0);
  }

  /**
   * Sends what is due; returns how many were sent. Overlapping calls share one drain. It never
   * rejects: a store or transport failure is logged and the rows stay due (kicks and the timer
   * start drains nobody awaits).
   */
  drain(): Promise<number> {
    if (this.stopped) return Promise.resolve(0);
    if (this.draining) {
      // A drain in flight that began before the latest enqueue may miss its row: run another
      // after it, so a caller's drain always covers the mail written before it was called.
      if (this.enqueued === this.drainingFrom) return this.draining;
      return this.draining.then((sent) => this.drain().then((more) => sent + more));
    }
    this.drainingFrom = this.enqueued;
    this.draining = this.drainOnce()
      .catch((error: unknown) => {
        this.logger.warn("outbox drain failed", { error: errorText(error) });
        this.quietUntil = 0;
        return 0;
      })
      .finally(() => {
        this.draining = null;
      });
    return this.draining;
  }

  private async drainOnce(): Promise<number> {
    const generation = this.enqueued;
    const { sent, claimed } = await this.sendDue();
    if (claimed === BATCH || this.shared) {
      // More may be due now, or another process may leave rows behind: the next tick looks again.
      this.quietUntil = 0;
    } else {
      const next = await this.nextDue();
      this.quietUntil = generation === this.enqueued ? next : 0;
    }
    return sent;
  }

  /** When the earliest unsent row falls due (epoch ms); +Infinity when none is waiting. */
  private async nextDue(): Promise<number> {
    try {
      const [row] = await this.db
        .select({ at: sql<Date | string | null>`min(${mailOutbox.nextAttemptAt})` })
        .from(mailOutbox)
        .where(inArray(mailOutbox.status, ["pending", "sending"]));
      return row?.at == null ? Number.POSITIVE_INFINITY : new Date(row.at).getTime();
    } catch (error) {
      this.logger.warn("outbox due-time read failed", { error: errorText(error) });
      return 0;
    }
  }

  private async sendDue(): Promise<{ sent: number; claimed: number }> {
    const now = new Date(this.now());
    let rows: (typeof mailOutbox.$inferSelect)[];
    try {
      rows = await this.db
        .update(mailOutbox)
        .set({
          status: "sending",
          attempts: sql`${mailOutbox.attempts} + 1`,
          nextAttemptAt: new Date(now.getTime() + CLAIM_MS),
        })
        .where(
          inArray(
            mailOutbox.id,
            this.db
              .select({ id: mailOutbox.id })
              .from(mailOutbox)
              .where(and(inArray(mailOutbox.status, ["pending", "sending"]), lte(mailOutbox.nextAttemptAt, now)))
              .orderBy(mailOutbox.id)
              .limit(BATCH)
              .for("update", { skipLocked: true }),
          ),
        )
        .returning();
    } catch (error) {
      this.logger.warn("outbox claim failed", { error: errorText(error) });
      return { sent: 0, claimed: 0 };
    }
    let sent = 0;
    for (const row of rows) {
      try {
        await this.transport.send({
          tenantId: row.tenantId,
          to: row.recipient,
          subject: row.subject,
          text: this.sealed.open(row.text),
          html: row.html === null ? undefined : this.sealed.open(row.html),
          headers:
            row.headers === null ? undefined : (JSON.parse(this.sealed.open(row.headers)) as Record<string, string>),
        });
        await this.db
          .update(mailOutbox)
          .set({ status: "sent", sentAt: new Date(this.now()), text: "", html: null, headers: null, lastError: null })
          .where(eq(mailOutbox.id, row.id));
        sent++;
      } catch (error) {
        const failed = row.attempts >= MAX_ATTEMPTS;
        const backoffMs = Math.min(5 * 60_000, 2 ** row.attempts * 1000);
        this.logger.warn("mail not sent", {
          id: row.id,
          attempt: row.attempts,
          final: failed,
          error: errorText(error),
        });
        try {
          await this.db
            .update(mailOutbox)
            .set({
              status: failed ? "failed" : "pending",
              nextAttemptAt: new Date(this.now() + backoffMs),
              lastError: String(error).slice(0, 500),
            })
            .where(eq(mailOutbox.id, row.id));
        } catch (writeError) {
          // The claim's deadline (CLAIM_MS) makes the row due again without this write.
          this.logger.warn("outbox retry not recorded", { id: row.id, error: errorText(writeError) });
        }
      }
    }
    return { sent, claimed: rows.length };
  }
}
