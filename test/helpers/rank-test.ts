/**
 * The Mann-Whitney U test (Wilcoxon rank-sum) of two samples: whether one tends to be larger than
 * the other, with no assumption about their distributions (timings are skewed and heavy-tailed).
 * Ranks are averaged over ties; the two-sided p-value comes from the normal approximation with
 * the tie correction, which is close for samples of 20 or more each.
 */
export function mannWhitneyU(a: readonly number[], b: readonly number[]): { u: number; z: number; p: number } {
  const n1 = a.length;
  const n2 = b.length;
  if (n1 === 0 || n2 === 0) throw new Error("mannWhitneyU needs two non-empty samples");
  const all = [...a.map((value) => ({ value, first: true })), ...b.map((value) => ({ value, first: false }))].sort(
    (x, y) => x.value - y.value,
  );
  let rankSumA = 0;
  let tieTerm = 0;
  for (let i = 0; i < all.length; ) {
    let j = i;
    while (j + 1 < all.length && all[j + 1]!.value === all[i]!.value) j++;
    const rank = (i + j + 2) / 2; // ranks are 1-based: positions i..j share their mean
    for (let k = i; k <= j; k++) if (all[k]!.first) rankSumA += rank;
    const t = j - i + 1;
    tieTerm += t * t * t - t;
    i = j + 1;
  }
  const u = rankSumA - (n1 * (n1 + 1)) / 2;
  const n = n1 + n2;
  const mean = (n1 * n2) / 2;
  const variance = ((n1 * n2) / 12) * (n + 1 - tieTerm / (n * (n - 1)));
  if (variance === 0) return { u, z: 0, p: 1 };
  // Continuity correction toward the mean.
  const z = (u - mean - Math.sign(u - mean) * 0.5) / Math.sqrt(variance);
  return { u, z, p: Math.min(1, 2 * (1 - normalCdf(Math.abs(z)))) };
}

/** The standard normal distribution function (Abramowitz and Stegun 7.1.26, error < 1.5e-7). */
function normalCdf(x: number): number {
  const t = 1 / (1 + 0.3275911 * (Math.abs(x) / Math.SQRT2));
  const poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  const erf = 1 - poly * Math.exp(-(x * x) / 2);
  return x >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
}

/** A small seeded generator (mulberry32): the order of a timing run's pairs, the same every run. */
export function seededRandom(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** How many of each kind's calls came `lag` calls after an `a`. */
export function afterA(order: readonly ("a" | "b")[], lag: number): { a: number; b: number } {
  const counts = { a: 0, b: 0 };
  for (let i = lag; i < order.length; i++) if (order[i - lag] === "a") counts[order[i] as "a" | "b"]++;
  return counts;
}

/**
 * The order of a timing run: `pairs` calls of each kind, shuffled (seeded), taken only when each
 * kind comes one, two and three calls after an `a` as often as the other (within one). What a
 * call leaves behind can slow the call after it: a console user's sign-in leaves a link and a
 * mail to write, and the call after one measured 0.3-0.7 ms slower whatever it was (server
 * store, medians of 30; the test prints them with TIMING_DEBUG=1). Within pairs in random order,
 * a `b` followed an `a` three times in four and an `a` once in four, so that carry-over alone
 * made `a` look faster (it failed CI at p = 4.6e-5).
 */
export function balancedOrder(pairs: number, seed: number): ("a" | "b")[] {
  if (!Number.isSafeInteger(pairs) || pairs < 1) throw new Error(`balancedOrder needs pairs >= 1 (got ${pairs})`);
  const random = seededRandom(seed);
  // A few hundred shuffles at most for 30 pairs (48 for seed 36); bounded all the same.
  for (let tries = 0; tries < 100_000; tries++) {
    const order: ("a" | "b")[] = [...Array(pairs).fill("a"), ...Array(pairs).fill("b")];
    for (let i = order.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [order[i], order[j]] = [order[j] as "a" | "b", order[i] as "a" | "b"];
    }
    const balanced = [1, 2, 3].every((lag) => {
      const after = afterA(order, lag);
      return Math.abs(after.a - after.b) <= 1;
    });
    if (balanced) return order;
  }
  throw new Error(`no balanced order of ${pairs} pairs found`);
}

/**
 * Times `pairs` calls of `a` and as many of `b` (wall time, and the CPU time the whole process
 * spent meanwhile, every thread counted: the database's too on the embedded store) in a
 * `balancedOrder`, after `warmup` pairs, alternating, that are not kept. `settle` runs before
 * every timed call, untimed: what a call hands off to the background is done before the next
 * call starts; what it still leaves behind falls on both kinds alike.
 */
export async function timePairs(options: {
  pairs: number;
  warmup?: number;
  seed?: number;
  a: (i: number) => Promise<unknown>;
  b: (i: number) => Promise<unknown>;
  settle: () => Promise<void>;
}): Promise<{
  a: number[];
  b: number[];
  cpu: { a: number[]; b: number[] };
  /** Every timed call's wall time by the kind of the call before it (what that one left behind). */
  after: { a: number[]; b: number[] };
}> {
  const warmup = options.warmup ?? 5;
  const order = [
    ...Array.from({ length: 2 * warmup }, (_, i) => (i % 2 === 0 ? "a" : "b") as "a" | "b"),
    ...balancedOrder(options.pairs, options.seed ?? 36),
  ];
  const a: number[] = [];
  const b: number[] = [];
  const cpu = { a: [] as number[], b: [] as number[] };
  const after = { a: [] as number[], b: [] as number[] };
  for (const [i, which] of order.entries()) {
    await options.settle();
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    await (which === "a" ? options.a(i) : options.b(i));
    const took = performance.now() - started;
    const used = process.cpuUsage(cpuBefore);
    if (i >= 2 * warmup) {
      (which === "a" ? a : b).push(took);
      cpu[which].push((used.user + used.system) / 1000);
      const before = order[i - 1];
      if (before !== undefined) after[before].push(took);
    }
  }
  return { a, b, cpu, after };
}
