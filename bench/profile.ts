/**
 * Summarises a `.cpuprofile` (written by `bun --cpu-prof`): self time per function, highest
 * first, with its most frequent callers in the project's code, and project functions by inclusive
 * time. Also runnable on its own: `bun bench/profile.ts <file.cpuprofile> [top] [skip-seconds]`.
 */
import { readFileSync } from "node:fs";
import { relative } from "node:path";
import { ROOT } from "./server";

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number; columnNumber: number };
  hitCount?: number;
  children?: number[];
}

interface CpuProfile {
  nodes: ProfileNode[];
  samples?: number[];
  timeDeltas?: number[];
  startTime: number;
  endTime: number;
}

export interface ProfileEntry {
  function: string;
  location: string;
  self_ms: number;
  /** Share of the non-idle samples. */
  self_pct: number;
  /** The most frequent chain of callers in the project's own code (src/, db/), innermost first. */
  called_from: string;
}

export interface InclusiveEntry {
  function: string;
  location: string;
  total_pct: number;
}

export interface ProfileSummary {
  file: string;
  /** Seconds since the profile started that were summarised. */
  window_s?: [number, number | null];
  total_ms: number;
  idle_ms: number;
  top: ProfileEntry[];
  /** Project functions (src/, db/) by inclusive time: where the time goes from the server's point of view. */
  inclusive: InclusiveEntry[];
}

function location(url: string, line: number): string {
  if (!url) return "(native)";
  const path = url.startsWith("file://") ? url.slice(7) : url;
  const rel = path.startsWith(ROOT) ? relative(ROOT, path) : path;
  return `${rel}:${line + 1}`;
}

/**
 * Self and inclusive time per function over [fromS, toS] seconds since the profile started
 * (a negative `fromS` keeps only the last -fromS seconds).
 */
export function summariseProfile(file: string, top = 15, fromS = 0, toS = Number.POSITIVE_INFINITY): ProfileSummary {
  const profile = JSON.parse(readFileSync(file, "utf8")) as CpuProfile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const selfUs = new Map<number, number>();
  if (profile.samples && profile.timeDeltas) {
    // Each delta is the time before its sample; attribute the next delta to the sampled node.
    // A negative `fromS` keeps only the last -fromS seconds.
    const span = profile.timeDeltas.reduce((a, b) => a + b, 0);
    const from = fromS >= 0 ? fromS * 1e6 : span + fromS * 1e6;
    let t = 0;
    for (let i = 0; i < profile.samples.length; i++) {
      t += profile.timeDeltas[i] ?? 0;
      if (t < from || t > toS * 1e6) continue;
      const id = profile.samples[i] as number;
      const delta = profile.timeDeltas[i + 1] ?? profile.timeDeltas[i] ?? 0;
      selfUs.set(id, (selfUs.get(id) ?? 0) + Math.max(0, delta));
    }
  } else {
    const total = profile.endTime - profile.startTime;
    const hits = profile.nodes.reduce((a, n) => a + (n.hitCount ?? 0), 0) || 1;
    for (const n of profile.nodes) selfUs.set(n.id, ((n.hitCount ?? 0) * total) / hits);
  }
  const own = (n: ProfileNode) => /\/(src|db)\//.test(n.callFrame.url) && !n.callFrame.url.includes("node_modules");
  const label = (n: ProfileNode) =>
    `${n.callFrame.functionName || "(anonymous)"}@${location(n.callFrame.url, n.callFrame.lineNumber)}`;
  const grouped = new Map<string, { fn: string; loc: string; us: number; callers: Map<string, number> }>();
  const inclusive = new Map<string, number>();
  let idle = 0;
  let total = 0;
  for (const [id, us] of selfUs) {
    const node = byId.get(id);
    if (!node || us === 0) continue;
    const fn = node.callFrame.functionName || "(anonymous)";
    total += us;
    if (fn === "(idle)") {
      idle += us;
      continue;
    }
    const loc = location(node.callFrame.url, node.callFrame.lineNumber);
    const key = `${fn}@${loc}`;
    const g = grouped.get(key) ?? { fn, loc, us: 0, callers: new Map() };
    g.us += us;
    grouped.set(key, g);
    // Walk up the stack: the project's own callers, and inclusive time (each function once per stack).
    const chain: string[] = [];
    const seen = new Set<string>();
    for (let p = parent.get(id); p !== undefined; p = parent.get(p)) {
      const pn = byId.get(p);
      if (!pn) break;
      if (!own(pn)) continue;
      const l = label(pn);
      if (chain.length < 3) chain.push(l);
      if (!seen.has(l)) {
        seen.add(l);
        inclusive.set(l, (inclusive.get(l) ?? 0) + us);
      }
    }
    if (own(node) && !seen.has(key)) inclusive.set(key, (inclusive.get(key) ?? 0) + us);
    const c = chain.join(" < ") || "-";
    g.callers.set(c, (g.callers.get(c) ?? 0) + us);
  }
  const busy = total - idle || 1;
  const entries = [...grouped.values()].sort((a, b) => b.us - a.us).slice(0, top);
  return {
    file,
    window_s: [fromS, Number.isFinite(toS) ? toS : null],
    total_ms: Math.round(total / 1000),
    idle_ms: Math.round(idle / 1000),
    top: entries.map((e) => ({
      function: e.fn,
      location: e.loc,
      self_ms: Math.round(e.us / 100) / 10,
      self_pct: Math.round((e.us / busy) * 1000) / 10,
      called_from: [...e.callers].sort((a, b) => b[1] - a[1])[0]?.[0] ?? "-",
    })),
    inclusive: [...inclusive]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([k, us]) => {
        const at = k.lastIndexOf("@");
        return { function: k.slice(0, at), location: k.slice(at + 1), total_pct: Math.round((us / busy) * 1000) / 10 };
      }),
  };
}

if (import.meta.main) {
  const [file, n, from] = process.argv.slice(2);
  if (!file) {
    console.error("usage: bun bench/profile.ts <file.cpuprofile> [top] [skip-first-seconds]");
    process.exit(2);
  }
  const s = summariseProfile(file, n ? Number(n) : 25, from ? Number(from) : 0);
  console.log(`${s.file}: ${s.total_ms} ms sampled, ${s.idle_ms} ms idle`);
  console.table(s.top);
  console.table(s.inclusive);
}
