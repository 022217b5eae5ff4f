import { describe, expect, it } from "bun:test";
import { type ImportGraph, readImportGraph, reportGraph } from "../../scripts/import-graph";

/** Imports run one way (docs/architecture.md, "Layers"): these hold the house to it. */
const graph = readImportGraph();

/** The files of one folder (a prefix) and what they import outside it. */
function importsOutOf(g: ImportGraph, folder: string): string[] {
  return g.edges
    .filter((e) => e.from.startsWith(folder) && !e.to.startsWith(folder))
    .map((e) => `${e.from} -> ${e.to}`);
}

describe("the import graph of src/ and db/", () => {
  it("reads the whole tree (a parser that found nothing would pass everything)", () => {
    expect(graph.files.length).toBeGreaterThan(150);
    expect(graph.edges.length).toBeGreaterThan(500);
  });

  it("has no files that import each other in a loop", () => {
    expect(reportGraph(graph).circles).toEqual([]);
  });

  it("has no folders that import each other in a loop", () => {
    expect(reportGraph(graph).folderKnots).toEqual([]);
  });

  it("keeps the core pure: it imports nothing outside src/core", () => {
    expect(importsOutOf(graph, "src/core/")).toEqual([]);
  });

  it("keeps the infrastructure below every capability", () => {
    const allowed = ["src/infra/", "src/core/", "db/", "src/logger.ts", "src/config.ts"];
    const above = importsOutOf(graph, "src/infra/").filter((line) => {
      const to = line.split(" -> ")[1] as string;
      return !allowed.some((a) => to.startsWith(a));
    });
    expect(above).toEqual([]);
  });

  it("lets no capability import the composition root or the app", () => {
    const top = new Set(["src/deps.ts", "src/app.ts", "src/main.ts", "src/seed.ts"]);
    const offenders = graph.edges
      .filter((e) => top.has(e.to) && !top.has(e.from) && !e.from.startsWith("src/cli/"))
      .map((e) => `${e.from} -> ${e.to}`);
    expect(offenders).toEqual([]);
  });

  it("finds a circle and a knot when there is one (the check can fail)", () => {
    const made: ImportGraph = {
      files: ["src/a/x.ts", "src/a/y.ts", "src/b/z.ts"],
      edges: [
        { from: "src/a/x.ts", to: "src/a/y.ts" },
        { from: "src/a/y.ts", to: "src/a/x.ts" },
        { from: "src/a/x.ts", to: "src/b/z.ts" },
        { from: "src/b/z.ts", to: "src/a/y.ts" },
      ],
    };
    const report = reportGraph(made);
    expect(report.circles).toEqual([["src/a/x.ts", "src/a/y.ts", "src/b/z.ts"]]);
    expect(report.folderKnots.map((k) => k.rooms)).toEqual([["src/a/", "src/b/"]]);
  });
});
