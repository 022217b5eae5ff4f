/**
 * The `RateLimit-Policy` and `RateLimit` response fields of the IETF draft "RateLimit header
 * fields for HTTP" (draft-ietf-httpapi-ratelimit-headers-09): one named policy, its quota `q` per
 * window of `w` seconds, and what is left of it `r` until the window resets in `t` seconds.
 */
export interface RatePolicy {
  /** The policy's name, as the draft's String item (`"browser-decide"`). */
  readonly name: string;
  readonly limit: number;
  readonly windowMs: number;
}

/**
 * Both fields for a cap on what is open at once (the interventions streams of a key): the
 * draft's quota unit `concurrent-requests`, no window and no reset (one frees a place by closing).
 */
export function concurrencyFields(name: string, limit: number, remaining: number): Record<string, string> {
  return {
    "ratelimit-policy": `"${name}";q=${limit};qu="concurrent-requests"`,
    ratelimit: `"${name}";r=${Math.max(0, remaining)}`,
  };
}

/** Both fields for an answer of a window aligned on `windowMs`, with `remaining` left in it. */
export function rateLimitFields(policy: RatePolicy, remaining: number, nowMs: number): Record<string, string> {
  const end = (Math.floor(nowMs / policy.windowMs) + 1) * policy.windowMs;
  const reset = Math.ceil((end - nowMs) / 1000);
  return {
    "ratelimit-policy": `"${policy.name}";q=${policy.limit};w=${Math.ceil(policy.windowMs / 1000)}`,
    ratelimit: `"${policy.name}";r=${Math.max(0, remaining)};t=${reset}`,
  };
}
