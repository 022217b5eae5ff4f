import { fmix32, imul } from "../core/hash";

const EMPTY = 0;
const MIN_CAPACITY = 16;
/** `starts` of a free slot. */
const FREE = -1;
/** `lengths` flag: the key is stored as two bytes per code unit (some unit is above 0xff). */
const WIDE = 0x8000;
const LENGTH_MASK = 0x7fff;
/** Longest key the index stores (decide's subjects are at most 128 code units). */
export const MAX_SUBJECT_LENGTH = LENGTH_MASK;

/**
 * A string -> slot index for meter tables holding millions of subjects: open addressing with
 * linear probing and backward-shift deletion over typed arrays, freed slots reused, and the keys'
 * characters kept in one byte arena rather than as strings.
 *
 * Written here rather than taken from a library because none fits and a `Map` of strings costs
 * several times as much at this size (docs/performance.md, "Memory"). Here an entry costs two 4-byte words of table at load
 * factor at most 1/2, a start and a length (6 bytes), and its characters: one
 * byte each when every code unit is at most 0xff (Latin-1, which covers ASCII ids), two otherwise.
 * No per-key object exists, so the collector has nothing to trace for a million subjects.
 *
 * Freed keys leave their bytes behind; the arena is compacted when it must grow and at least half
 * of it is dead.
 */
/** A copy of a typed array in a larger one of the same kind (the tables grow by doubling). */
export function grown<T extends Int32Array | Uint16Array | Uint8Array>(array: T, size: number): T {
  const next = new (array.constructor as new (length: number) => T)(size);
  next.set(array);
  return next;
}

export class SubjectIndex {
  /** Open-addressing table: slot + 1, or EMPTY. */
  private buckets = new Int32Array(MIN_CAPACITY);
  private mask = MIN_CAPACITY - 1;
  /** Per slot: the key's first byte in `bytes` (FREE when the slot is free), and its length. */
  private starts = new Int32Array(MIN_CAPACITY);
  private lengths = new Uint16Array(MIN_CAPACITY);
  /** The keys' characters, back to back (a Buffer, so a key decodes natively in `keyAt`). */
  private bytes: Buffer = Buffer.alloc(256);
  private used = 0;
  /** Bytes in `bytes[0, used)` that belong to deleted keys. */
  private dead = 0;
  /** Freed slots (a stack). */
  private free = new Int32Array(MIN_CAPACITY);
  private freeCount = 0;
  private limit = 0;
  private count = 0;

  get size(): number {
    return this.count;
  }

  /** One past the highest slot ever handed out (slots below it may be free). */
  get slotLimit(): number {
    return this.limit;
  }

  /** Whether a slot holds a key. */
  holds(slot: number): boolean {
    return slot >= 0 && slot < this.limit && (this.starts[slot] as number) !== FREE;
  }

  /** The key in a slot, or undefined when the slot is free (a new string each call). */
  keyAt(slot: number): string | undefined {
    if (!this.holds(slot)) return undefined;
    const at = this.starts[slot] as number;
    const stored = this.lengths[slot] as number;
    const length = stored & LENGTH_MASK;
    // Latin-1 is one byte per code unit; wide keys are stored low byte first (UTF-16LE).
    return (stored & WIDE) === 0
      ? this.bytes.toString("latin1", at, at + length)
      : this.bytes.toString("utf16le", at, at + 2 * length);
  }

  /** The slot of `key`, or -1. */
  get(key: string): number {
    const at = this.find(key, hashOf(key));
    return at < 0 ? -1 : (this.buckets[at] as number) - 1;
  }

  /** The bucket holding `key` (whose hash is `hash`), or -1. */
  private find(key: string, hash: number): number {
    const mask = this.mask;
    const buckets = this.buckets;
    let i = hash & mask;
    for (;;) {
      const entry = buckets[i] as number;
      if (entry === EMPTY) return -1;
      if (this.equals(entry - 1, key)) return i;
      i = (i + 1) & mask;
    }
  }

  private equals(slot: number, key: string): boolean {
    const stored = this.lengths[slot] as number;
    const length = key.length;
    if ((stored & LENGTH_MASK) !== length) return false;
    const at = this.starts[slot] as number;
    const bytes = this.bytes;
    if ((stored & WIDE) === 0) {
      for (let i = 0; i < length; i++) if (bytes[at + i] !== key.charCodeAt(i)) return false;
      return true;
    }
    for (let i = 0; i < length; i++) {
      const unit = (bytes[at + 2 * i] as number) | ((bytes[at + 2 * i + 1] as number) << 8);
      if (unit !== key.charCodeAt(i)) return false;
    }
    return true;
  }

  /** Adds a key that is not present; returns its slot. */
  add(key: string): number {
    const length = key.length;
    if (length > MAX_SUBJECT_LENGTH) throw new RangeError(`a subject is at most ${MAX_SUBJECT_LENGTH} characters`);
    if ((this.count + 1) * 2 > this.buckets.length) this.grow();
    let wide = false;
    for (let i = 0; i < length; i++) {
      if (key.charCodeAt(i) > 0xff) {
        wide = true;
        break;
      }
    }
    const size = wide ? 2 * length : length;
    if (this.used + size > this.bytes.length) this.makeRoom(size);
    const at = this.used;
    const bytes = this.bytes;
    if (wide) {
      for (let i = 0; i < length; i++) {
        const unit = key.charCodeAt(i);
        bytes[at + 2 * i] = unit & 0xff;
        bytes[at + 2 * i + 1] = unit >>> 8;
      }
    } else for (let i = 0; i < length; i++) bytes[at + i] = key.charCodeAt(i);
    this.used = at + size;

    let slot: number;
    if (this.freeCount > 0) slot = this.free[--this.freeCount] as number;
    else {
      slot = this.limit++;
      if (slot >= this.starts.length) this.growSlots();
    }
    this.starts[slot] = at;
    this.lengths[slot] = wide ? length | WIDE : length;
    this.place(hashOf(key), slot);
    this.count += 1;
    return slot;
  }

  /** Removes a key; returns its freed slot, or -1 when it was not present. */
  delete(key: string): number {
    const i = this.find(key, hashOf(key));
    if (i < 0) return -1;
    const slot = (this.buckets[i] as number) - 1;
    this.unlink(i);
    this.release(slot);
    return slot;
  }

  /** Removes the key in a slot; returns false when the slot was free. */
  deleteSlot(slot: number): boolean {
    if (!this.holds(slot)) return false;
    const mask = this.mask;
    let i = this.storedHash(slot) & mask;
    while (this.buckets[i] !== slot + 1) i = (i + 1) & mask;
    this.unlink(i);
    this.release(slot);
    return true;
  }

  /** Empties bucket `i`, pulling later entries of its probe run into the hole (no tombstones). */
  private unlink(i: number): void {
    const mask = this.mask;
    const buckets = this.buckets;
    let hole = i;
    let j = i;
    for (;;) {
      j = (j + 1) & mask;
      const entry = buckets[j] as number;
      if (entry === EMPTY) break;
      const home = this.storedHash(entry - 1) & mask;
      // Move j into the hole unless its home lies cyclically in (hole, j].
      const inRange = hole <= j ? home > hole && home <= j : home > hole || home <= j;
      if (!inRange) {
        buckets[hole] = entry;
        hole = j;
      }
    }
    buckets[hole] = EMPTY;
  }

  /** Bytes the key in a slot takes in the arena. */
  private byteLengthOf(slot: number): number {
    const stored = this.lengths[slot] as number;
    return (stored & WIDE) === 0 ? stored : 2 * (stored & LENGTH_MASK);
  }

  private release(slot: number): void {
    this.dead += this.byteLengthOf(slot);
    this.starts[slot] = FREE;
    if (this.freeCount >= this.free.length) this.free = grown(this.free, this.free.length * 2);
    this.free[this.freeCount++] = slot;
    this.count -= 1;
  }

  /**
   * The hash of the key in a slot, from its stored characters (not kept per slot: a table grows
   * or deletes far less often than it looks up, and 4 bytes a subject is worth more).
   */
  private storedHash(slot: number): number {
    const at = this.starts[slot] as number;
    const stored = this.lengths[slot] as number;
    const length = stored & LENGTH_MASK;
    const bytes = this.bytes;
    let h = FNV_BASIS;
    if ((stored & WIDE) === 0) for (let i = 0; i < length; i++) h = imul(h ^ (bytes[at + i] as number), FNV_PRIME);
    else {
      for (let i = 0; i < length; i++) {
        const unit = (bytes[at + 2 * i] as number) | ((bytes[at + 2 * i + 1] as number) << 8);
        h = imul(h ^ unit, FNV_PRIME);
      }
    }
    return fmix32(h >>> 0) | 0;
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
    for (let slot = 0; slot < this.limit; slot++) {
      if (this.starts[slot] !== FREE) this.place(this.storedHash(slot), slot);
    }
  }

  private growSlots(): void {
    const size = this.starts.length * 2;
    this.starts = grown(this.starts, size);
    this.lengths = grown(this.lengths, size);
  }

  /**
   * Room for `size` more bytes in a new arena holding only the live keys: the same length when at
   * least half of the old one is dead and the rest fits, else half again what is needed.
   */
  private makeRoom(size: number): void {
    const live = this.used - this.dead;
    const reuse = this.dead * 2 >= this.used && live + size <= this.bytes.length;
    const next = Buffer.alloc(reuse ? this.bytes.length : Math.max(256, Math.ceil((live + size) * 1.5)));
    if (this.dead === 0) next.set(this.bytes.subarray(0, this.used));
    else {
      let at = 0;
      for (let slot = 0; slot < this.limit; slot++) {
        const from = this.starts[slot] as number;
        if (from === FREE) continue;
        const n = this.byteLengthOf(slot);
        next.set(this.bytes.subarray(from, from + n), at);
        this.starts[slot] = at;
        at += n;
      }
      this.used = at;
      this.dead = 0;
    }
    this.bytes = next;
  }
}

/** FNV-1a over the UTF-16 code units, then murmur3's finaliser (process-local: never persisted). */
const FNV_BASIS = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
function hashOf(key: string): number {
  let h = FNV_BASIS;
  for (let i = 0; i < key.length; i++) h = imul(h ^ key.charCodeAt(i), FNV_PRIME);
  return fmix32(h >>> 0) | 0;
}
