import { SubjectIndex } from "./subject-index";

/** What the site's subjects ask of a table that indexes its values by their slots (`MeterTable`). */
export interface SlotHolder {
  /** Whether the table holds the subject in this slot. */
  holdsSlot(slot: number): boolean;
}

/**
 * The subjects of one (tenant, site), shared by every meter table of the site (each meter, each
 * period): a reader counted by several meters has its id stored once. A slot is the subject's in
 * every table of the site; each table keeps its values in arrays indexed by the slot and marks
 * the slots it holds, and a slot is freed when no table of the site holds it any more.
 *
 * One index per site rather than per table, because the hash table, the slot arrays and the ids'
 * characters would otherwise be held once per meter and period (docs/performance.md, "Memory").
 */
export class SiteSubjects {
  private index = new SubjectIndex();
  /** The tables that index their values by this site's slots. */
  readonly tables: SlotHolder[] = [];
  /** The last subject found and its slot: a request's meters look up the same subject in turn. */
  private lastSubject: string | null = null;
  private lastSlot = -1;

  /** The slot of a subject, or -1 (no table holds it). */
  get(subject: string): number {
    if (subject === this.lastSubject) return this.lastSlot;
    const slot = this.index.get(subject);
    if (slot >= 0) {
      this.lastSubject = subject;
      this.lastSlot = slot;
    }
    return slot;
  }

  /** The slot of a subject, added when absent. */
  slotFor(subject: string): number {
    const slot = this.get(subject);
    return slot >= 0 ? slot : this.index.add(subject);
  }

  /** The subject in a slot (a new string each call). */
  subjectAt(slot: number): string | undefined {
    return this.index.keyAt(slot);
  }

  /** A table dropped the subject in `slot`: the slot is freed once no table of the site holds it. */
  release(slot: number): void {
    for (let i = 0; i < this.tables.length; i++) if ((this.tables[i] as SlotHolder).holdsSlot(slot)) return;
    this.lastSubject = null;
    this.lastSlot = -1;
    this.index.deleteSlot(slot);
    // Emptied (e.g. every table evicted): give back the grown arrays.
    if (this.index.size === 0) this.index = new SubjectIndex();
  }
}
