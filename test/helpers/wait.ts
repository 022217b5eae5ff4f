/**
 * Waiting on a condition instead of on time: `check` is polled every `everyMs` (a short interval,
 * not a guess at how long the work takes) until it holds or `ms` have passed.
 */
export async function until(check: () => boolean | Promise<boolean>, ms = 5_000, everyMs = 10): Promise<boolean> {
  const deadline = performance.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (performance.now() >= deadline) return false;
    await Bun.sleep(everyMs);
  }
}

/** Polls until `check` holds; how long it took, or an error past `ms`. */
export async function within(ms: number, check: () => Promise<boolean>): Promise<number> {
  const start = performance.now();
  if (await until(check, ms)) return performance.now() - start;
  throw new Error(`not within ${ms} ms`);
}
