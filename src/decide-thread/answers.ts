import { type AnswerCounter, type RequestStats, RouteStats, UNMATCHED_ROUTE } from "../http/request-stats";
import type { Channel } from "./channel";

/** Fields a recorded answer takes in a batch: native, method, path, status, seconds, then the access log's four. */
const FIELDS = 9;

/**
 * The thread's transport counts its answers here, keyed decide's and forwarded ones alike, and
 * every `intervalMs` hands them to the main thread, whose `RequestStats` records them as its own
 * transport would have (/metrics, the access log). A record is a few values pushed on an array:
 * the histograms and the log line are written on the main thread, off the request thread.
 */
export class ThreadAnswers implements AnswerCounter {
  private batch: unknown[] = [];
  private readonly native = new Map<string, RouteStats>();
  private readonly timer: ReturnType<typeof setInterval>;

  constructor(
    private readonly channel: Channel,
    readonly accessLog: boolean,
    intervalMs: number,
  ) {
    this.timer = setInterval(() => this.send(), intervalMs);
    this.timer.unref();
  }

  nativeStats(method: string, path: string): RouteStats {
    const key = `${method} ${path}`;
    let stats = this.native.get(key);
    if (stats === undefined) {
      stats = new RouteStats(method, path);
      this.native.set(key, stats);
    }
    return stats;
  }

  routeOf(): string {
    return UNMATCHED_ROUTE;
  }

  answered(
    stats: RouteStats | undefined,
    method: string,
    path: string,
    status: number,
    seconds: number,
    requestId: string,
    site: string | string[] | null | undefined,
    peer?: string,
    forwardedFor?: string | string[] | null,
  ): void {
    const log = this.accessLog;
    this.batch.push(
      stats !== undefined,
      method,
      path,
      status,
      seconds,
      log ? requestId : undefined,
      log ? site : undefined,
      log ? peer : undefined,
      log ? forwardedFor : undefined,
    );
  }

  /** Hands the answers recorded so far to the main thread (also at stop). */
  send(): void {
    if (this.batch.length === 0) return;
    const batch = this.batch;
    this.batch = [];
    this.channel.emit("answers", batch);
  }

  stop(): void {
    clearInterval(this.timer);
    this.send();
  }
}

/** The main thread's side: each answer recorded in `requests` as its own transport would. */
export function recordAnswers(channel: Channel, requests: RequestStats): void {
  channel.on("answers", (payload) => {
    const batch = payload as unknown[];
    for (let i = 0; i + FIELDS <= batch.length; i += FIELDS) {
      const method = batch[i + 1] as string;
      const path = batch[i + 2] as string;
      requests.answered(
        batch[i] === true ? requests.nativeStats(method, path) : undefined,
        method,
        path,
        batch[i + 3] as number,
        batch[i + 4] as number,
        (batch[i + 5] as string | undefined) ?? "",
        batch[i + 6] as string | string[] | undefined,
        batch[i + 7] as string | undefined,
        batch[i + 8] as string | string[] | null | undefined,
      );
    }
  });
}
