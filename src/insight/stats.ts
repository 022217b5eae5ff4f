/**
 * The statistics the experiment report uses, small enough to read whole: Wilson score intervals
 * for each variant's rate and a pooled two-proportion z-test for a variant against the control.
 */

/** z for a two-sided 95% interval. */
export const Z95 = 1.959963984540054;

/** Wilson score interval of a proportion (95%); [0, 0] with no trials. */
export function wilson(successes: number, trials: number, z = Z95): [number, number] {
  if (trials === 0) return [0, 0];
  const p = successes / trials;
  const z2 = z * z;
  const centre = p + z2 / (2 * trials);
  const spread = z * Math.sqrt((p * (1 - p)) / trials + z2 / (4 * trials * trials));
  const denominator = 1 + z2 / trials;
  return [Math.max(0, (centre - spread) / denominator), Math.min(1, (centre + spread) / denominator)];
}

/** The standard normal CDF (Abramowitz and Stegun 7.1.26 for erf; error below 1.5e-7). */
export function normalCdf(x: number): number {
  const t = 1 / (1 + (0.3275911 * Math.abs(x)) / Math.SQRT2);
  const poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  const erf = 1 - poly * Math.exp(-(x * x) / 2);
  return x >= 0 ? (1 + erf) / 2 : (1 - erf) / 2;
}

export interface ZTest {
  /** Rate of the variant minus the control's. */
  readonly difference: number;
  /** 95% interval of the difference (unpooled standard error). */
  readonly interval: [number, number];
  readonly z: number;
  /** Two-sided p-value under the pooled null (both rates equal). */
  readonly p: number;
}

/** Two-proportion z-test of variant B (x2 of n2) against control A (x1 of n1). */
export function twoProportionZTest(x1: number, n1: number, x2: number, n2: number): ZTest {
  const p1 = x1 / n1;
  const p2 = x2 / n2;
  const pooled = (x1 + x2) / (n1 + n2);
  const se0 = Math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2));
  const z = se0 === 0 ? 0 : (p2 - p1) / se0;
  const se = Math.sqrt((p1 * (1 - p1)) / n1 + (p2 * (1 - p2)) / n2);
  const difference = p2 - p1;
  return {
    difference,
    interval: [difference - Z95 * se, difference + Z95 * se],
    z,
    p: 2 * (1 - normalCdf(Math.abs(z))),
  };
}
