import type { CompiledSite } from "../core/compile";
import type { CompiledMeter } from "../core/types";
import type { MeterCounters, MeterTable } from "../counters/meter-counters";
import type { SiteState } from "../sites/registry";

/**
 * A document's meter with its counter table for one period (looked up once per period). Never
 * changed in place: a new period gets a new slot, so a request that holds a slot across an await
 * keeps reading and ticking the table it loaded, even if the period rolls over meanwhile.
 */
export interface MeterSlot {
  readonly meter: CompiledMeter;
  readonly seenKind: boolean;
  readonly period: string;
  readonly table: MeterTable;
}

const slotCache = new WeakMap<CompiledSite, Map<string, MeterSlot>>();

/** The meter slots of a document (looked up once per request). */
export function slotsOf(document: CompiledSite): Map<string, MeterSlot> {
  let slots = slotCache.get(document);
  if (slots === undefined) {
    slots = new Map();
    slotCache.set(document, slots);
  }
  return slots;
}

/** A meter's slot for the period `now` falls in, or undefined for a meter the document lacks. */
export function meterSlot(
  meters: MeterCounters,
  site: SiteState,
  document: CompiledSite,
  slots: Map<string, MeterSlot>,
  name: string,
  now: number,
): MeterSlot | undefined {
  const known = slots.get(name);
  const meter = known?.meter ?? document.meters.get(name);
  if (meter === undefined) return undefined;
  const period = meter.periodKey(now);
  // A table is detached only once its period has been unused for a minute (meter-counters.ts).
  if (known !== undefined && known.period === period && !known.table.detached) return known;
  const seenKind = meter.kind === "seen";
  const slot = { meter, seenKind, period, table: meters.table(site.tenantId, site.id, name, period, seenKind) };
  slots.set(name, slot);
  return slot;
}

/** Position of a meter among a request's held slots (a handful at most), or -1. */
export function indexOfMeter(held: readonly MeterSlot[] | null, name: string): number {
  if (held === null) return -1;
  for (let i = 0; i < held.length; i++) if ((held[i] as MeterSlot).meter.name === name) return i;
  return -1;
}
