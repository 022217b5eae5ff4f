import type { Config } from "../config";

/** What the request thread is told at start (src/decide-thread/thread.ts): plain data only. */
export interface ThreadSettings {
  readonly port: number;
  readonly host: string;
  /** In a cluster's worker process the listener shares the port (a Worker on the small heap does not see node:cluster's state). */
  readonly reusePort: boolean;
  /** The embedded store (one process, exact in memory) or a server (admissions, leases). */
  readonly embedded: boolean;
  readonly maxBodyBytes: number;
  readonly keepAliveMs: number;
  /** One log line per answered request (SVC_ACCESS_LOG): the thread then sends what it needs. */
  readonly accessLog: boolean;
  readonly igluVendor: string;
  readonly readDeadlineMs: number;
  readonly meterEntries: number;
  readonly flushIntervalMs: number;
  readonly statsFlushIntervalMs: number;
  readonly impactSampleEvery: number;
  /** The key impact samples hash subjects with: the process' one, so both threads' samples agree. */
  readonly impactHashKey: Uint8Array;
  readonly secret: string;
  readonly keyedDecideLimit: number;
  readonly decideWindowMs: number;
}

/** A change the main thread applied, passed on as it came (src/changes/change-feed.ts). */
export interface ThreadChange {
  readonly topic: string;
  readonly tenantId: string;
  readonly subject: string;
}

export function threadSettingsOf(
  config: Config,
  input: {
    port: number;
    embedded: boolean;
    keyedDecideLimit: number;
    decideWindowMs: number;
    impactHashKey: Uint8Array;
    reusePort: boolean;
  },
): ThreadSettings {
  return {
    ...input,
    host: config.host,
    maxBodyBytes: config.maxBodyBytes,
    keepAliveMs: config.httpIdleTimeoutMs,
    accessLog: config.accessLog,
    igluVendor: config.igluVendor,
    readDeadlineMs: config.readDeadlineMs,
    meterEntries: config.meterEntries,
    flushIntervalMs: config.flushIntervalMs,
    statsFlushIntervalMs: config.statsFlushIntervalMs,
    impactSampleEvery: config.impactSampleEvery,
    secret: config.secret,
  };
}
