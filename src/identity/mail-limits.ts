import { AppError } from "../infra/errors";

export interface SlidingLimit {
  /** Most mails admitted in any window of `windowMs`. */
  readonly limit: number;
  readonly windowMs: number;
}

export interface SignInMailLimitSettings {
  /** Per recipient address (within a tenant): what one mailbox can be sent. */
  readonly perAddress: SlidingLimit;
  /** Per client address (the peer IP, within a tenant): what one caller can make us send. */
  readonly perClient: SlidingLimit;
  /** Per site: the ceiling on the site's sign-in mail whatever the callers' addresses. */
  readonly perSite: SlidingLimit;
}

/** The limits of sign-in mail (docs/security.md). Held per process: N processes admit N times as many. */
export const SIGN_IN_MAIL_LIMITS: SignInMailLimitSettings = Object.freeze({
  perAddress: { limit: 3, windowMs: 60_000 },
  perClient: { limit: 20, windowMs: 10 * 60_000 },
  perSite: { limit: 500, windowMs: 10 * 60_000 },
});

/**
 * A sliding log per key: the times of the last admissions, at most `limit` of them. Exact over
 * any window (a fixed window would admit twice the limit across its edge). Memory is bounded by
 * what is admitted: a refusal records nothing, and keys whose newest admission left the window
 * are swept.
 */
class SlidingLog {
  private readonly admitted = new Map<string, number[]>();

  constructor(private readonly settings: SlidingLimit) {}

  /** 0 when the key may be admitted now, else the whole seconds until it may (at least 1). */
  waitSeconds(key: string, nowMs: number): number {
    const times = this.live(key, nowMs);
    if (times === undefined || times.length < this.settings.limit) return 0;
    const oldest = times[times.length - this.settings.limit]!;
    return Math.max(1, Math.ceil((oldest + this.settings.windowMs - nowMs) / 1000));
  }

  record(key: string, nowMs: number): void {
    const times = this.live(key, nowMs) ?? [];
    times.push(nowMs);
    if (times.length > this.settings.limit) times.splice(0, times.length - this.settings.limit);
    this.admitted.set(key, times);
  }

  sweep(nowMs: number): void {
    for (const [key, times] of this.admitted) {
      if (times[times.length - 1]! <= nowMs - this.settings.windowMs) this.admitted.delete(key);
    }
  }

  get size(): number {
    return this.admitted.size;
  }

  private live(key: string, nowMs: number): number[] | undefined {
    const times = this.admitted.get(key);
    if (times === undefined) return undefined;
    const since = nowMs - this.settings.windowMs;
    let drop = 0;
    while (drop < times.length && times[drop]! <= since) drop++;
    if (drop > 0) times.splice(0, drop);
    return times;
  }
}

export interface SignInMailCaller {
  readonly tenantId: string;
  readonly siteId: string;
  /** The recipient, already normalised (trimmed, lower case). */
  readonly address: string;
  /** The peer address of the request ("unknown" when the server cannot tell). */
  readonly client: string;
}

const SWEEP_EVERY = 256;

/**
 * Sign-in mail limits per address, per client and per site. `take` admits only when all three
 * admit, so a refused request spends nothing; the answer never depends on whether the address
 * belongs to a user.
 */
export class SignInMailLimits {
  private readonly perAddress: SlidingLog;
  private readonly perClient: SlidingLog;
  private readonly perSite: SlidingLog;
  private takes = 0;

  constructor(settings: SignInMailLimitSettings = SIGN_IN_MAIL_LIMITS) {
    this.perAddress = new SlidingLog(settings.perAddress);
    this.perClient = new SlidingLog(settings.perClient);
    this.perSite = new SlidingLog(settings.perSite);
  }

  /** 0 when admitted (and recorded), else the Retry-After in whole seconds (nothing recorded). */
  take(caller: SignInMailCaller, nowMs: number): number {
    if (++this.takes % SWEEP_EVERY === 0) this.sweep(nowMs);
    const address = `${caller.tenantId}\u0001${caller.address}`;
    const client = `${caller.tenantId}\u0001${caller.client}`;
    const site = `${caller.tenantId}\u0001${caller.siteId}`;
    const wait = Math.max(
      this.perAddress.waitSeconds(address, nowMs),
      this.perClient.waitSeconds(client, nowMs),
      this.perSite.waitSeconds(site, nowMs),
    );
    if (wait > 0) return wait;
    this.perAddress.record(address, nowMs);
    this.perClient.record(client, nowMs);
    this.perSite.record(site, nowMs);
    return 0;
  }

  /** Keys held (tests check that the logs do not grow without bound). */
  heldKeys(): number {
    return this.perAddress.size + this.perClient.size + this.perSite.size;
  }

  sweep(nowMs: number): void {
    this.perAddress.sweep(nowMs);
    this.perClient.sweep(nowMs);
    this.perSite.sweep(nowMs);
  }
}

export const tooManySignInMails = (retryAfterSeconds: number) =>
  new AppError(
    "rate_limited",
    "Too many sign-in links were asked for; try again later.",
    { retryAfterSeconds },
    {
      "retry-after": String(retryAfterSeconds),
    },
  );

const byDeps = new WeakMap<object, SignInMailLimits>();

/**
 * The limits of one set of identity deps, shared by both mounts: `deps.signInMail` when given
 * (tests pass small limits), else one instance made on first use for those deps.
 */
export function signInMailLimitsOf(deps: { readonly signInMail?: SignInMailLimits }): SignInMailLimits {
  if (deps.signInMail) return deps.signInMail;
  let limits = byDeps.get(deps);
  if (limits === undefined) {
    limits = new SignInMailLimits();
    byDeps.set(deps, limits);
  }
  return limits;
}
