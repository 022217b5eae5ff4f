import { describe, expect, it } from "bun:test";
import { MAX_SUBJECT_LENGTH, SubjectIndex } from "../../src/counters/subject-index";

describe("SubjectIndex", () => {
  it("agrees with a Map over random adds and deletes, through growth and slot reuse", () => {
    const index = new SubjectIndex();
    const model = new Map<string, number>();
    let seed = 7;
    const rand = () => {
      seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;
      return seed / 2 ** 32;
    };
    for (let step = 0; step < 60_000; step++) {
      // A small key space, so deletes hit present keys and probe runs collide often.
      const key = `s-${Math.floor(rand() * 5_000)}`;
      const held = model.get(key);
      if (rand() < 0.6) {
        if (held === undefined) model.set(key, index.add(key));
        else expect(index.get(key)).toBe(held);
      } else {
        expect(index.delete(key)).toBe(held ?? -1);
        model.delete(key);
      }
    }
    expect(index.size).toBe(model.size);
    for (const [key, slot] of model) {
      expect(index.get(key)).toBe(slot);
      expect(index.keyAt(slot)).toBe(key);
    }
    for (let i = 0; i < 5_000; i++) {
      if (!model.has(`s-${i}`)) expect(index.get(`s-${i}`)).toBe(-1);
    }
    // Freed slots are reused: never more slots than the most keys held at once could need.
    expect(index.slotLimit).toBeLessThanOrEqual(5_000);
  });

  it("tells apart keys whose only difference is non-ASCII, and the empty key", () => {
    const index = new SubjectIndex();
    const keys = ["", "é", "e\u0301", "😀", "\ud800", "\udc00"];
    const slots = keys.map((k) => index.add(k));
    expect(new Set(slots).size).toBe(keys.length);
    for (const [i, k] of keys.entries()) expect(index.get(k)).toBe(slots[i] as number);
  });

  it("keeps every key intact through churn that compacts its character arena, wide keys included", () => {
    const index = new SubjectIndex();
    const model = new Map<string, number>();
    const keyFor = (n: number) =>
      n % 3 === 0 ? `wide-é-😀-${n}` : n % 3 === 1 ? `latin-ÿ-${"x".repeat(n % 40)}-${n}` : `d-${n}`;
    // Waves of adds then deletes of most of them: dead bytes pile up, so the arena compacts.
    for (let wave = 0; wave < 6; wave++) {
      for (let i = 0; i < 3_000; i++) {
        const key = keyFor(wave * 3_000 + i);
        model.set(key, index.add(key));
      }
      let n = 0;
      for (const [key, slot] of model) {
        if (n++ % 4 === 0) continue;
        expect(index.delete(key)).toBe(slot);
        model.delete(key);
      }
    }
    expect(index.size).toBe(model.size);
    for (const [key, slot] of model) {
      expect(index.keyAt(slot)).toBe(key);
      expect(index.get(key)).toBe(slot);
    }
    expect(index.get(keyFor(1))).toBe(-1);
  });

  it("deletes by slot, and reports free slots as free", () => {
    const index = new SubjectIndex();
    const a = index.add("a");
    const b = index.add("b");
    expect(index.holds(a)).toBe(true);
    expect(index.deleteSlot(a)).toBe(true);
    expect(index.deleteSlot(a)).toBe(false);
    expect(index.holds(a)).toBe(false);
    expect(index.keyAt(a)).toBeUndefined();
    expect(index.get("a")).toBe(-1);
    expect(index.get("b")).toBe(b);
    expect(index.holds(99)).toBe(false);
    expect(() => index.add("z".repeat(MAX_SUBJECT_LENGTH + 1))).toThrow(RangeError);
  });
});
