import type { SQL } from "drizzle-orm";
import { type Db, rowsOf } from "../../db/client";
import { errorCodeOf } from "../../db/connection-error";
import { DEFAULT_READ_DEADLINE_MS, StoreUnavailable } from "../infra/deadline";
import type { SeenAdmission } from "./meter-values";

/** One call waiting in a batch. */
export interface Waiting {
  /** When it was queued (the batcher's clock, ms). */
  readonly at: number;
  readonly resolve: (admission: SeenAdmission) => void;
  readonly reject: (error: unknown) => void;
}

/** Tries of a statement Postgres chose as a deadlock's victim (it rolled the statement back whole). */
const DEADLOCK_TRIES = 3;

/**
 * The batching both kinds of admission on a Postgres server share (`CountAdmissions`,
 * `SeenAdmissions`): the calls that arrive while a statement is out go together in the next one.
 * Idle, a call leaves at the end of the current microtask run, alone; under load the batch grows
 * with the load, and a call waits at most for the statement before its own. One statement is out
 * at a time per process.
 *
 * A subclass keeps the queue: `take` removes the next batch from it (failing calls queued longer
 * than `maxWaitMs` unsent), `admitBatch` runs it and answers its calls, `requeue` runs when a
 * batch is done, before the next is taken.
 */
export abstract class AdmissionBatcher<Batch> {
  private sending = false;
  /** When the statement out was sent (the batcher's clock, ms). */
  private sentAt = 0;
  private scheduled = false;
  /** Calls asked and statements sent: /metrics, the tests. */
  calls = 0;
  statements = 0;

  /**
   * `maxWaitMs`: a call still queued after this long (a statement before it hung) is given up
   * unsent, failed as the store unavailable: its request has stopped waiting (the read deadline)
   * and counted it in this process, and a late admission would count it twice.
   */
  constructor(
    private readonly db: Pick<Db, "execute">,
    protected readonly maxWaitMs = DEFAULT_READ_DEADLINE_MS,
    protected readonly now: () => number = () => performance.now(),
  ) {}

  /**
   * The next batch, removed from the queue, its calls queued before `stale` failed unsent
   * (`keptWaiting`, `giveUpStale`); `null` when no call is left in the queue to send.
   */
  protected abstract take(stale: number): Batch | null;
  /** Runs the batch and answers each of its calls (resolved or rejected, every one). */
  protected abstract admitBatch(batch: Batch): Promise<void>;
  /** Calls held back from the batches taken go into the queue; whether there were any. */
  protected requeue(): boolean {
    return false;
  }

  /** Queues one call (`enqueue` puts its waiting into the queue) and sends when due. */
  protected queued(enqueue: (waiting: Waiting) => void): Promise<SeenAdmission> {
    this.calls++;
    // The statement out has not answered within the deadline (Postgres hangs): fail at once, as
    // a refused connection does, rather than queue behind it.
    if (this.sending && this.now() - this.sentAt > this.maxWaitMs) {
      return Promise.reject(new StoreUnavailable("deadline"));
    }
    return new Promise((resolve, reject) => {
      enqueue({ at: this.now(), resolve, reject });
      this.schedule();
    });
  }

  private schedule(): void {
    if (this.sending || this.scheduled) return;
    this.scheduled = true;
    queueMicrotask(() => {
      this.scheduled = false;
      this.send();
    });
  }

  private send(): void {
    if (this.sending) return;
    const batch = this.take(this.now() - this.maxWaitMs);
    if (batch === null) {
      if (this.requeue()) this.schedule();
      return;
    }
    this.sending = true;
    this.sentAt = this.now();
    void this.admitBatch(batch).then(() => this.next());
  }

  private next(): void {
    this.sending = false;
    this.requeue();
    this.schedule();
  }

  /**
   * One statement; run again when Postgres chose it as a deadlock's victim (it rolled the
   * statement back whole, so running it again admits nothing twice).
   */
  protected async run<Row>(statement: SQL): Promise<Row[]> {
    for (let attempt = 1; ; attempt++) {
      this.statements++;
      try {
        return rowsOf<Row>(await this.db.execute(statement));
      } catch (error) {
        if (attempt >= DEADLOCK_TRIES || errorCodeOf(error) !== "40P01") throw error;
      }
    }
  }
}

/** Whether a call queued at `waiting.at` is within the deadline (`stale`); one past it is failed unsent. */
export function keptWaiting(waiting: Waiting, stale: number): boolean {
  if (waiting.at >= stale) return true;
  waiting.reject(new StoreUnavailable("deadline"));
  return false;
}

/** The calls queued since `stale` (the batcher's clock); the older ones are failed unsent. */
export function giveUpStale(waiting: Waiting[], stale: number): Waiting[] {
  if ((waiting[0] as Waiting).at >= stale) return waiting;
  return waiting.filter((w) => keptWaiting(w, stale));
}
