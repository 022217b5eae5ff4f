/**
 * Types shared by the pure decision core (documents, compile, facts, evaluate, verifier) and the
 * code above it. Nothing here imports Elysia, drizzle, postgres, Bun.env or reads the clock.
 */

/** One grant fact as rules see it: `grants.<name>` is present (true) while the grant is held. */
export type GrantFacts = Readonly<Record<string, true>>;

/** A meter as read before this request's own ticks. */
export interface MeterRead {
  readonly allowance: number;
  readonly count: number;
  /** For a `seen` meter: whether the current article is already counted in this period. */
  readonly seen: boolean;
}

/**
 * The frozen fact snapshot, built once per request by the decide service and read by every
 * named feature. `null` for a namespace means "unavailable": a rule that reads it routes the
 * feature to its error slot.
 */
export interface FactSnapshot {
  /** Epoch milliseconds at which the request is decided (injected clock). */
  readonly now: number;
  /** Verified content descriptor (parsed payload), or null when absent, forged or expired. */
  readonly content: Readonly<Record<string, unknown>> | null;
  /** The descriptor's article id (`content.id`) used by seen meters; null when no content. */
  readonly articleId: string | null;
  /** Held grants of the subject user (empty object when the user holds none or is anonymous). */
  readonly grants: GrantFacts;
  /** User traits, or null when no user is known. */
  readonly user: Readonly<Record<string, unknown>> | null;
  /**
   * `org.id`, `org.slug`, `org.role` (the active organization) and `org.roles.<organizationId>`,
   * from the browser's access cookie; empty for a signed-out browser; null (unavailable) on the
   * keyed route, which carries no cookie.
   */
  readonly org: Readonly<Record<string, unknown>> | null;
  /** Unverified passthrough from the caller. Never merged with signed facts. */
  readonly context: Readonly<Record<string, unknown>>;
  /**
   * `streaming.<pipeline>.<field>` (and `.window_end`, ISO 8601): the user's latest row per
   * pipeline; empty for an anonymous subject and when no named feature reads `streaming.*`.
   */
  readonly streaming: Readonly<Record<string, Readonly<Record<string, unknown>>>>;
  /** Mapped upstream claims; empty until the identity capability lands. */
  readonly external: Readonly<Record<string, unknown>>;
  /** Gift-link facts; empty until gift links land. */
  readonly gift: Readonly<Record<string, unknown>>;
  /**
   * `newsletters.<slug>`: the user's standing on each list the site deploys (`subscribed`,
   * `unsubscribed`, `pending`, `unknown`); set only when a named feature reads it (absent: read
   * as empty, so a rule's `eq` is false).
   */
  readonly newsletters?: Readonly<Record<string, string>>;
  /** Subject of per-user meters and experiment splits: the user id, else the device id. */
  readonly subject: string | null;
  /**
   * Meter values before this request's ticks, for the meters the named features may read.
   * Returns undefined when the meter cannot be read (no subject): the reading rule errors.
   */
  readonly meter: (name: string) => MeterRead | undefined;
}

/** What one feature resolved to. */
export interface FeatureDecision {
  readonly outcome: string;
  /** Present iff the matched outcome declared a verdict. */
  readonly type?: string;
  /** Present iff the outcome has fields (reference fields already resolved to catalog objects). */
  readonly fields?: Readonly<Record<string, unknown>>;
  /** Present iff a rule read a meter: values before this request's ticks. */
  readonly meters?: Readonly<Record<string, { readonly allowance: number; readonly count: number }>>;
  /** Journey features only. */
  readonly url?: string;
  readonly fallbackUrl?: string;
}

export interface Exposure {
  readonly experiment: string;
  readonly variant: string;
}

/** Result of evaluating one feature: a pure function of (compiled feature, snapshot). */
export interface FeatureResult {
  readonly decision: FeatureDecision;
  /** Meter names the matched rule charges. */
  readonly ticks: readonly string[];
  readonly exposure?: Exposure;
  /** The decision as a decide answer writes it (`decisionJson`), when the decision is shared. */
  readonly json?: string;
  /** Otherwise its outcome's JSON up to the meters (`decisionJsonHead`), written at compile. */
  readonly jsonHead?: string;
  /**
   * Where this ending is counted: its position in the document's `outcomeKeys` (one per feature,
   * outcome and experiment variant), so counting a decision is one typed-array increment.
   */
  readonly slot: number;
}

/** What one counted decision slot stands for (`CompiledSite.outcomeKeys`). */
export interface OutcomeKey {
  readonly feature: string;
  readonly outcome: string;
  /** The outcome's verdict (`deny` counts as walled), or null. */
  readonly type: string | null;
  /** The outcome's `checkoutOffer` field when it is a string (the offer the wall shows), or null. */
  readonly offer: string | null;
  /** The experiment and variant of a split rule's arm; empty strings otherwise. */
  readonly experiment: string;
  readonly variant: string;
}

/** Result of a batch: effects deduplicated across features, applied by the caller afterwards. */
export interface BatchResult {
  /** The answered features, each once, in first-seen order of the requested names. */
  readonly answered: readonly CompiledFeature[];
  /** What each answered feature resolved to, index for index with `answered`. */
  readonly results: readonly FeatureResult[];
  /** The same decisions by feature name (built on first read). */
  readonly decisions: Record<string, FeatureDecision>;
  readonly unanswered: string[];
  /** Each meter at most once per request. */
  readonly ticks: readonly string[];
  /** One exposure per experiment, in first-seen order of the requested names. */
  readonly exposures: readonly Exposure[];
}

export type MeterKind = "seen" | "count";

export interface CompiledMeter {
  readonly name: string;
  readonly kind: MeterKind;
  readonly allowance: number;
  /** Period key for an instant, e.g. "2026-11" for a monthly meter in its time zone. */
  readonly periodKey: (nowMs: number) => string;
}

export type FeaturePurpose = "decision" | "journey";

export interface CompiledFeature {
  readonly name: string;
  /** The name as a JSON object key with its colon (`"paywall":`), quoted once at compile. */
  readonly jsonKey: string;
  readonly purpose: FeaturePurpose;
  /** enabled && published && running on this site. */
  readonly answerable: boolean;
  readonly published: boolean;
  /** Meters any rule may read or tick (so the caller can load them before evaluating). */
  readonly meters: readonly string[];
  readonly evaluate: (snapshot: FactSnapshot) => FeatureResult;
}

export type IdentityMode = "external_only" | "dual" | "svc_only";

export interface ContentDescriptor {
  readonly payload: string;
  readonly signature: string;
}
