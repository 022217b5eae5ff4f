// The import graph of src/ and db/, folder by folder: which folders import each other in a loop
// (a knot), which files import each other in a loop (a circle), and the imports that close them.
// `npx bun scripts/import-graph.ts` prints it; `--json` prints the same as one JSON object.
// test/architecture/imports.test.ts holds the house to it. Written here (not a library) because
// the rule is ours: a folder is a room, and rooms must not import each other in a loop.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";

const root = resolve(import.meta.dir, "..");

export interface ImportEdge {
  readonly from: string;
  readonly to: string;
}

export interface ImportGraph {
  readonly files: readonly string[];
  readonly edges: readonly ImportEdge[];
}

const importPattern =
  /(?:^|\n)\s*(?:import|export)\s[^;]*?\sfrom\s+["'](\.[^"']+)["']|import\(\s*["'](\.[^"']+)["']\s*\)/g;

function sourceFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) out.push(...sourceFiles(path));
    else if (name.endsWith(".ts") && !name.endsWith(".d.ts")) out.push(path);
  }
  return out;
}

function resolveImport(from: string, spec: string): string | undefined {
  const base = resolve(dirname(from), spec);
  for (const candidate of [base, `${base}.ts`, join(base, "index.ts")]) {
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      // not this one
    }
  }
  return undefined;
}

/** Every relative import between the project's own source files (src/ and db/). */
export function readImportGraph(): ImportGraph {
  const files = [...sourceFiles(join(root, "src")), ...sourceFiles(join(root, "db"))];
  const edges: ImportEdge[] = [];
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    for (const match of text.matchAll(importPattern)) {
      const spec = match[1] ?? match[2];
      if (spec === undefined) continue;
      const target = resolveImport(file, spec);
      if (target === undefined) continue;
      edges.push({ from: relative(root, file), to: relative(root, target) });
    }
  }
  return { files: files.map((f) => relative(root, f)), edges };
}

/** A file's room: its folder under src/ (src/decide/), or the file itself at src/'s top. */
export function roomOf(file: string): string {
  const parts = file.split("/");
  if (parts[0] === "db") return "db/";
  if (parts.length <= 2) return file;
  return `${parts[0]}/${parts[1]}/`;
}

/** Strongly connected components of a directed graph with more than one node (Tarjan). */
export function knots(nodes: readonly string[], edges: readonly ImportEdge[]): string[][] {
  const next = new Map<string, string[]>();
  for (const n of nodes) next.set(n, []);
  for (const e of edges) if (e.from !== e.to) next.get(e.from)?.push(e.to);
  let index = 0;
  const indexOf = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const onStack = new Set<string>();
  const out: string[][] = [];
  const visit = (v: string) => {
    indexOf.set(v, index);
    low.set(v, index);
    index++;
    stack.push(v);
    onStack.add(v);
    for (const w of next.get(v) ?? []) {
      if (!indexOf.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v) as number, low.get(w) as number));
      } else if (onStack.has(w)) low.set(v, Math.min(low.get(v) as number, indexOf.get(w) as number));
    }
    if (low.get(v) === indexOf.get(v)) {
      const component: string[] = [];
      let w: string;
      do {
        w = stack.pop() as string;
        onStack.delete(w);
        component.push(w);
      } while (w !== v);
      if (component.length > 1) out.push(component.sort());
    }
  };
  for (const n of nodes) if (!indexOf.has(n)) visit(n);
  return out;
}

export interface GraphReport {
  readonly files: number;
  readonly imports: number;
  /** Files that import each other in a loop. */
  readonly circles: string[][];
  /** Folders that import each other in a loop, with the file imports that tie them. */
  readonly folderKnots: { rooms: string[]; ties: string[] }[];
}

export function reportGraph(graph: ImportGraph = readImportGraph()): GraphReport {
  const rooms = [...new Set(graph.files.map(roomOf))];
  const roomEdges = graph.edges.map((e) => ({ from: roomOf(e.from), to: roomOf(e.to) })).filter((e) => e.from !== e.to);
  const folderKnots = knots(rooms, roomEdges).map((component) => {
    const inside = new Set(component);
    const ties = graph.edges
      .filter((e) => roomOf(e.from) !== roomOf(e.to) && inside.has(roomOf(e.from)) && inside.has(roomOf(e.to)))
      .map((e) => `${e.from} -> ${e.to}`)
      .sort();
    return { rooms: component, ties };
  });
  return {
    files: graph.files.length,
    imports: graph.edges.length,
    circles: knots(graph.files, graph.edges),
    folderKnots,
  };
}

if (import.meta.main) {
  const report = reportGraph();
  if (process.argv.includes("--json")) {
    console.log(JSON.stringify(report, null, 2));
  } else {
    console.log(`${report.files} files, ${report.imports} imports`);
    console.log(`circles of files: ${report.circles.length}`);
    for (const c of report.circles) console.log(`  ${c.join(" <-> ")}`);
    console.log(`knots of folders: ${report.folderKnots.length}`);
    for (const k of report.folderKnots) {
      console.log(`  ${k.rooms.length} rooms: ${k.rooms.join(" ")}`);
      if (process.argv.includes("--ties")) for (const t of k.ties) console.log(`    ${t}`);
    }
  }
}
