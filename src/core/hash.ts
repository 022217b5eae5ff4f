/**
 * Stable experiment bucketing.
 *
 * Why our own hash: a variant assignment must be the same in every process, after every restart,
 * on every runtime and Bun version, and reproducible by an analyst in a notebook. `Bun.hash` is
 * documented as subject to change between versions, so we use FNV-1a 32-bit over the UTF-8 bytes
 * of `${salt}:${subject}`, followed by murmur3's 32-bit finaliser (`fmix32`) because plain FNV-1a
 * mixes its last bytes poorly and subjects often differ only in their last characters.
 *
 * Reference: bucket = floor(fmix32(fnv1a32(utf8(salt + ":" + subject))) * totalWeight / 2^32),
 * variants taken in ascending code-unit order of their names, each owning `weight` buckets.
 */

/** FNV-1a 32-bit offset basis: the state before any byte. */
const FNV_OFFSET_BASIS = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
/**
 * `Math.imul`, bound once for the hashes here and in the counters: a compiled function's read of a
 * global left its compiled form whenever the global object changed (docs/performance.md,
 * "Compiles in the measured windows").
 */
export const imul = Math.imul;

/**
 * FNV-1a 32-bit of the UTF-8 encoding of `input`, continuing from `state` (so a fixed prefix can be
 * hashed once). Lone surrogates encode as U+FFFD, as `TextEncoder` does. Returns an unsigned int.
 */
export function fnv1a32(input: string, state: number = FNV_OFFSET_BASIS): number {
  let h = state >>> 0;
  const n = input.length;
  for (let i = 0; i < n; i++) {
    let c = input.charCodeAt(i);
    if (c < 0x80) {
      h = imul(h ^ c, FNV_PRIME);
      continue;
    }
    if (c < 0x800) {
      h = imul(h ^ (0xc0 | (c >> 6)), FNV_PRIME);
      h = imul(h ^ (0x80 | (c & 0x3f)), FNV_PRIME);
      continue;
    }
    if (c >= 0xd800 && c <= 0xdfff) {
      const next = i + 1 < n ? input.charCodeAt(i + 1) : 0;
      if (c <= 0xdbff && next >= 0xdc00 && next <= 0xdfff) {
        c = 0x10000 + ((c - 0xd800) << 10) + (next - 0xdc00);
        i++;
        h = imul(h ^ (0xf0 | (c >> 18)), FNV_PRIME);
        h = imul(h ^ (0x80 | ((c >> 12) & 0x3f)), FNV_PRIME);
        h = imul(h ^ (0x80 | ((c >> 6) & 0x3f)), FNV_PRIME);
        h = imul(h ^ (0x80 | (c & 0x3f)), FNV_PRIME);
        continue;
      }
      c = 0xfffd;
    }
    h = imul(h ^ (0xe0 | (c >> 12)), FNV_PRIME);
    h = imul(h ^ (0x80 | ((c >> 6) & 0x3f)), FNV_PRIME);
    h = imul(h ^ (0x80 | (c & 0x3f)), FNV_PRIME);
  }
  return h >>> 0;
}

/** murmur3's 32-bit finaliser: spreads every input bit over the whole word. */
export function fmix32(input: number): number {
  let h = input >>> 0;
  h ^= h >>> 16;
  h = imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

/** The bucketing hash of a subject in an experiment: fmix32(fnv1a32(`${salt}:${subject}`)). */
export function bucketHash(salt: string, subject: string): number {
  return fmix32(fnv1a32(subject, fnv1a32(`${salt}:`)));
}

export interface CompiledExperiment {
  readonly name: string;
  readonly salt: string;
  /** Variant names in bucket order (ascending code-unit order, independent of JSON key order). */
  readonly variants: readonly string[];
  /** Deterministic variant for a subject. */
  readonly assign: (subject: string) => string;
}

/**
 * Precomputes the salt's hash state and the cumulative weights once, so that `assign` costs one
 * pass over the subject. Variants are sorted by name because documents may be stored where key
 * order is not preserved (Postgres jsonb), and bucket order must not depend on storage.
 */
export function compileExperiment(
  name: string,
  salt: string,
  weights: Readonly<Record<string, number>>,
): CompiledExperiment {
  const variants = Object.keys(weights).sort();
  if (variants.length === 0) throw new Error(`experiment ${name} has no variants`);
  const upper: number[] = [];
  let total = 0;
  for (const v of variants) {
    const w = weights[v] ?? 0;
    if (!(Number.isInteger(w) && w > 0))
      throw new Error(`experiment ${name}: weight of ${v} must be a positive integer`);
    total += w;
    upper.push(total);
  }
  const prefixState = fnv1a32(`${salt}:`);
  const count = variants.length;
  const frozenVariants = Object.freeze(variants);
  return Object.freeze({
    name,
    salt,
    variants: frozenVariants,
    assign(subject: string): string {
      const bucket = Math.floor((fmix32(fnv1a32(subject, prefixState)) * total) / 4294967296);
      for (let i = 0; i < count; i++) {
        if (bucket < (upper[i] as number)) return frozenVariants[i] as string;
      }
      return frozenVariants[count - 1] as string;
    },
  });
}
