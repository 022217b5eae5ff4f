/**
 * Open-loop schedules aligned to the server's rate windows (fixed 10-second windows at epoch
 * multiples of 10 s). Each key gets exactly `perKey` sends per segment, interleaved across keys
 * and evenly spaced inside [start + head, start + segment - tail]: the tail guard keeps a late
 * send from spilling into the next window, so no key can exceed its quota in any aligned window.
 */

export const WINDOW_MS = 10_000;

/** The next window boundary at least `leadMs` from now (epoch ms). */
export function nextWindowStart(leadMs: number, nowMs = Date.now()): number {
  return Math.ceil((nowMs + leadMs) / WINDOW_MS) * WINDOW_MS;
}

export interface ScheduleOptions {
  keys: number;
  perKey: number;
  segments: number;
  segmentMs: number;
  /** Epoch ms where segment 0 starts (a window boundary for aligned runs). */
  startEpoch: number;
  /** Distinct pre-built requests per key; request id = key * requestsPerKey + n. */
  requestsPerKey: number;
  headMs?: number;
  tailMs?: number;
}

export interface Schedule {
  sendAtEpoch: Float64Array;
  requestOf: Uint32Array;
  keyOf: Uint16Array;
  segmentOf: Uint16Array;
}

export function buildSchedule(o: ScheduleOptions): Schedule {
  const head = o.headMs ?? 10;
  const tail = o.tailMs ?? 100;
  const perSegment = o.keys * o.perKey;
  const n = perSegment * o.segments;
  const step = (o.segmentMs - head - tail) / perSegment;
  const s: Schedule = {
    sendAtEpoch: new Float64Array(n),
    requestOf: new Uint32Array(n),
    keyOf: new Uint16Array(n),
    segmentOf: new Uint16Array(n),
  };
  let i = 0;
  for (let seg = 0; seg < o.segments; seg++) {
    const base = o.startEpoch + seg * o.segmentMs + head;
    for (let q = 0; q < perSegment; q++) {
      const key = q % o.keys;
      const nth = seg * o.perKey + Math.floor(q / o.keys);
      s.sendAtEpoch[i] = base + q * step;
      s.keyOf[i] = key;
      s.segmentOf[i] = seg;
      s.requestOf[i] = key * o.requestsPerKey + (nth % o.requestsPerKey);
      i++;
    }
  }
  return s;
}
