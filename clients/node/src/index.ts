import createClient, { type Client } from "openapi-fetch";
import type { components, paths } from "./schema";

export type { components, paths } from "./schema";

type Schemas = components["schemas"];
export type DecideBody = Omit<Schemas["DecideBody"], "explain">;
export type DecideAnswer = Schemas["DecideAnswer"];
export type ExplainAnswer = Schemas["ExplainAnswer"];
export type DecisionEntry = Schemas["DecisionEntry"];

/** Why an answer is the fallback rather than the service's. */
export type FallbackReason =
  /** The deadline passed before the service answered. */
  | { kind: "deadline" }
  /** The connection failed (refused, reset, DNS). */
  | { kind: "network"; message: string }
  /** The service asked to be left alone (429, or 503 with Retry-After) for longer than the deadline allows, or still does. */
  | { kind: "retry_after"; status: number; untilMs: number }
  /** The service answered an error (the envelope's code): a bad key, an unknown site, an invalid body, 5xx. */
  | { kind: "refused"; status: number; code: string };

/** A decide answer, the service's or the fallback's (then `fallback` says why). */
export type DecideResult = DecideAnswer & { fallback?: FallbackReason };

/** The parts of a site document the fallback reads: each feature's `onError` outcome. */
export interface SiteDocument {
  readonly features?: Readonly<
    Record<string, { readonly onError?: string; readonly outcomes?: Readonly<Record<string, unknown>> }>
  >;
}

export interface DecideClientOptions {
  /** Where the service answers, e.g. `https://svc.example` (keyed decide is `POST /v1/decide`). */
  readonly baseUrl: string;
  /** A site-pinned API key (`svc_...`): server side only, never in a browser. */
  readonly apiKey: string;
  /** The site the key is pinned to (`x-svc-site-id`). */
  readonly site: string;
  /** The deadline of one call, retries included, in milliseconds (default 1000). */
  readonly timeoutMs?: number;
  /** Retries after a 429 or 503 carrying Retry-After, when the wait fits the deadline (default 1). */
  readonly maxRetries?: number;
  /** The site document as last deployed: a feature's fallback is its `onError` outcome. */
  readonly document?: SiteDocument;
  /** Fallback entries by feature name; they win over the document's `onError`. */
  readonly defaults?: Readonly<Record<string, DecisionEntry>>;
  /** Told each time an answer is a fallback (log it, count it). */
  readonly onFallback?: (reason: FallbackReason, features: readonly string[]) => void;
  /** A fetch to use instead of the runtime's (its connection pool is the keep-alive). */
  readonly fetch?: (request: Request) => Promise<Response>;
  /** The clock, for Retry-After windows (default Date.now). */
  readonly now?: () => number;
  /** Waits `ms` or until `signal` aborts (default a timer). */
  readonly sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

export interface CallOptions {
  /** This call's deadline in milliseconds, instead of the client's. */
  readonly timeoutMs?: number;
  /** Aborts the call; the answer is then the fallback (`deadline`). */
  readonly signal?: AbortSignal;
  /** A preview token: decide against the staged document. */
  readonly previewToken?: string;
}

export interface DecideClient {
  /** Decides `body.features`; never throws for the service's sake: a failure answers the fallback. */
  decide(body: DecideBody, options?: CallOptions): Promise<DecideResult>;
  /** Why each feature decides as it does (no meter ticks, no exposures); throws `DecideError` on failure. */
  explain(body: DecideBody, options?: CallOptions): Promise<ExplainAnswer>;
  /** The typed client of the whole API (openapi-fetch), with the key and site header set. */
  readonly api: Client<paths>;
}

/** A failed explain: the status and the envelope's code (or `deadline`, `network`). */
export class DecideError extends Error {
  constructor(
    readonly reason: FallbackReason,
    message: string,
  ) {
    super(message);
    this.name = "DecideError";
  }
}

const DEFAULT_TIMEOUT_MS = 1000;

/**
 * A client for keyed decide from a publisher's server: one connection pool for every call
 * (the runtime's fetch keeps connections alive), a deadline per call, `Retry-After` honoured (a
 * retry when the wait fits the deadline; until then calls answer the fallback without asking), and
 * a fallback when the service cannot answer: each feature's entry from `defaults`, else its
 * `onError` outcome in `document`, else the feature is listed in `unanswered`.
 */
export function createDecideClient(options: DecideClientOptions): DecideClient {
  const now = options.now ?? Date.now;
  const sleep = options.sleep ?? abortableSleep;
  const maxRetries = options.maxRetries ?? 1;
  const api = createClient<paths>({
    baseUrl: options.baseUrl.replace(/\/+$/, ""),
    headers: { authorization: `Bearer ${options.apiKey}`, "x-svc-site-id": options.site },
    ...(options.fetch === undefined ? {} : { fetch: options.fetch }),
  });
  /** The service asked for quiet until then (Retry-After): calls answer the fallback until it passes. */
  let quietUntil = 0;
  let quietStatus = 429;

  async function call(
    body: DecideBody & { explain?: boolean },
    call: CallOptions,
  ): Promise<{ answer: DecideAnswer | ExplainAnswer } | { failed: FallbackReason }> {
    const deadline = now() + (call.timeoutMs ?? options.timeoutMs ?? DEFAULT_TIMEOUT_MS);
    if (now() < quietUntil) return { failed: { kind: "retry_after", status: quietStatus, untilMs: quietUntil } };
    const timeout = AbortSignal.timeout(Math.max(0, deadline - now()));
    const signal = call.signal === undefined ? timeout : AbortSignal.any([timeout, call.signal]);
    const header: Record<string, string> = { "x-svc-site-id": options.site };
    if (call.previewToken !== undefined) header["x-svc-preview"] = call.previewToken;
    for (let attempt = 0; ; attempt++) {
      const result = await api
        .POST("/v1/decide", { params: { header: header as { "x-svc-site-id": string } }, body, signal })
        .catch((error: unknown) => (error instanceof Error ? error : new Error(String(error))));
      if (result instanceof Error) {
        if (signal.aborted) return { failed: { kind: "deadline" } };
        return { failed: { kind: "network", message: result.message } };
      }
      const { data, response } = result;
      if (data !== undefined) return { answer: data };
      const code = errorCode(result.error);
      const wait = retryAfterMs(response, now());
      if (wait === undefined || (response.status !== 429 && response.status !== 503)) {
        return { failed: { kind: "refused", status: response.status, code } };
      }
      const until = now() + wait;
      if (attempt >= maxRetries || until >= deadline) {
        quietUntil = Math.max(quietUntil, until);
        quietStatus = response.status;
        return { failed: { kind: "retry_after", status: response.status, untilMs: until } };
      }
      try {
        await sleep(wait, signal);
      } catch {
        return { failed: { kind: "deadline" } };
      }
      if (signal.aborted) return { failed: { kind: "deadline" } };
    }
  }

  function fallback(body: DecideBody, reason: FallbackReason): DecideResult {
    options.onFallback?.(reason, body.features);
    const decisions: Record<string, DecisionEntry> = {};
    const unanswered: string[] = [];
    for (const feature of body.features) {
      const entry = options.defaults?.[feature] ?? onErrorEntry(options.document, feature);
      if (entry === undefined) unanswered.push(feature);
      else decisions[feature] = entry;
    }
    return { decisions, unanswered, preview: false, exposures: [], fallback: reason };
  }

  return {
    api,
    async decide(body, callOptions = {}) {
      const outcome = await call({ ...body, explain: false }, callOptions);
      if ("failed" in outcome) return fallback(body, outcome.failed);
      const answer = outcome.answer;
      if (!isDecideAnswer(answer)) return fallback(body, { kind: "refused", status: 200, code: "no_decisions" });
      return answer;
    },
    async explain(body, callOptions = {}) {
      const outcome = await call({ ...body, explain: true }, callOptions);
      if ("failed" in outcome) throw new DecideError(outcome.failed, `explain failed: ${outcome.failed.kind}`);
      const answer = outcome.answer;
      if (isDecideAnswer(answer)) {
        throw new DecideError({ kind: "refused", status: 200, code: "no_explain" }, "explain failed: no explain");
      }
      return answer;
    },
  };
}

/** The answer is discriminated by its required member: `decisions` (decide) or `explain`. */
function isDecideAnswer(answer: DecideAnswer | ExplainAnswer): answer is DecideAnswer {
  return answer.decisions !== undefined;
}

/** The feature's `onError` outcome as a decision entry: its verdict and its plain fields. */
function onErrorEntry(document: SiteDocument | undefined, feature: string): DecisionEntry | undefined {
  const definition = document?.features?.[feature];
  if (definition?.onError === undefined) return undefined;
  const outcome = (definition.outcomes?.[definition.onError] ?? {}) as { type?: unknown; fields?: unknown };
  const entry: DecisionEntry = { outcome: definition.onError };
  if (typeof outcome.type === "string") entry.type = outcome.type;
  if (typeof outcome.fields === "object" && outcome.fields !== null) {
    // A catalog reference resolves on the service only: the fallback carries the plain fields.
    const plain = Object.entries(outcome.fields).filter(
      ([, v]) => !(typeof v === "object" && v !== null && "$ref" in v),
    );
    if (plain.length > 0) entry.fields = Object.fromEntries(plain);
  }
  return entry;
}

function errorCode(error: unknown): string {
  const code = (error as { error?: { code?: unknown } } | undefined)?.error?.code;
  return typeof code === "string" ? code : "unknown";
}

/** Retry-After in milliseconds: whole seconds or an HTTP date; undefined when absent or unreadable. */
function retryAfterMs(response: Response, nowMs: number): number | undefined {
  const value = response.headers.get("retry-after")?.trim();
  if (value === undefined || value === "") return undefined;
  if (/^\d+$/.test(value)) return Number(value) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? undefined : Math.max(0, date - nowMs);
}

function abortableSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(signal.reason);
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    signal.addEventListener("abort", onAbort, { once: true });
  });
}
