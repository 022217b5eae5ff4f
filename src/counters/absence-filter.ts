import { imul } from "../core/hash";

/**
 * A Bloom filter over counter keys that exist in Postgres. "Not in the filter" is certain, so a
 * miss on such a key needs no read: the counter starts at zero. Own code because a fixed-size
 * bit array with two hashes is all it takes (npm's bloom packages bring far more than this).
 * Sized for `capacity` keys at ~1% false positives; past that it degrades to more reads, never
 * to wrong answers.
 */
export class AbsenceFilter {
  private readonly bits: Uint32Array;
  private readonly size: number;

  constructor(capacity: number) {
    // ~9.6 bits per key for 1% with k=7; round to a power of two for cheap masking.
    let size = 1024;
    while (size < capacity * 10) size *= 2;
    this.size = size;
    this.bits = new Uint32Array(size / 32);
  }

  add(key: string): void {
    const [h1, h2] = hashes(key);
    for (let i = 0; i < 7; i++) {
      const bit = (h1 + i * h2) & (this.size - 1);
      this.bits[bit >>> 5]! |= 1 << (bit & 31);
    }
  }

  /** False means the key is certainly absent. */
  mightContain(key: string): boolean {
    const [h1, h2] = hashes(key);
    for (let i = 0; i < 7; i++) {
      const bit = (h1 + i * h2) & (this.size - 1);
      if ((this.bits[bit >>> 5]! & (1 << (bit & 31))) === 0) return false;
    }
    return true;
  }
}

/** Two 32-bit FNV-1a variants (different offsets) for double hashing. */
function hashes(key: string): [number, number] {
  let a = 0x811c9dc5;
  let b = 0x01000193 ^ 0x5bd1e995;
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    a = imul(a ^ c, 0x01000193);
    b = imul(b ^ c, 0x5bd1e995);
  }
  return [a >>> 0, (b >>> 0) | 1];
}
