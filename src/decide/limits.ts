/** Keyed decide: 2,000 requests per fixed 10-second window per key. */
export const KEYED_DECIDE_LIMIT = 2_000;
/** Browser decide and forward: 200 requests per 10 seconds per client per site. */
export const BROWSER_LIMIT = 200;
export const DECIDE_WINDOW_MS = 10_000;
