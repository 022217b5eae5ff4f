import { describe, expect, it } from "bun:test";
import { parseTree } from "jsonc-parser";
import { checkDocumentText, pointerTokens, rangeOfPointer } from "../../src/console/client/document-check";
import { validateSiteDocument } from "../../src/core/document";
import { basicDocument } from "../fixtures/documents";

/** The text a problem marks. */
const marked = (text: string, p: { from: number; to: number }) => text.slice(p.from, p.to);

describe("the editor's checks as the author types", () => {
  it("finds nothing in a document a deploy takes", () => {
    expect(checkDocumentText(JSON.stringify(basicDocument(), null, 2))).toEqual([]);
  });

  it("marks a semantic error on the value at its JSON pointer, with the deploy's own message", () => {
    const doc = basicDocument() as { features: { paywall: { rules: { then: string }[] } } };
    (doc.features.paywall.rules[0] as { then: string }).then = "nope";
    const text = JSON.stringify(doc, null, 2);
    const problems = checkDocumentText(text);
    const server = validateSiteDocument(doc);
    expect(server.ok).toBe(false);
    if (server.ok) return;
    expect(problems.map((p) => [p.path, p.message])).toEqual(server.errors.map((e) => [e.path, e.message]));
    const [first] = problems;
    expect(first?.path).toBe("/features/paywall/rules/0/then");
    expect(marked(text, first as { from: number; to: number })).toBe('"nope"');
  });

  it("marks a whole object by its member name, and a missing member at the object that lacks it", () => {
    const text = '{\n  "a": { "b": [ 1, { "c": 2 } ] }\n}';
    const root = parseTree(text);
    if (!root) throw new Error("no tree");
    expect(marked(text, rangeOfPointer(root, "/a"))).toBe('"a"');
    expect(marked(text, rangeOfPointer(root, "/a/b/1/c"))).toBe("2");
    expect(marked(text, rangeOfPointer(root, "/a/b/1"))).toBe("{");
    expect(marked(text, rangeOfPointer(root, "/a/missing"))).toBe('"a"');
    expect(marked(text, rangeOfPointer(root, ""))).toBe("{");
  });

  it("reads ~0 and ~1 in a pointer as ~ and /", () => {
    expect(pointerTokens("/features/a~1b/c~0d")).toEqual(["features", "a/b", "c~d"]);
    const text = '{ "a/b": 1, "c~d": 2 }';
    const root = parseTree(text);
    if (!root) throw new Error("no tree");
    expect(marked(text, rangeOfPointer(root, "/a~1b"))).toBe("1");
    expect(marked(text, rangeOfPointer(root, "/c~0d"))).toBe("2");
  });

  it("says where the JSON breaks, by line and column, and checks nothing else then", () => {
    const text = '{\n  "schemaVersion": 1,\n  "features": {,\n}';
    const problems = checkDocumentText(text);
    expect(problems.length).toBeGreaterThan(0);
    expect(problems.every((p) => p.path === "/")).toBe(true);
    expect(problems[0]?.message).toMatch(/^not JSON: .* at line 3, column 16$/);
    expect(checkDocumentText("   ")).toEqual([
      { from: 0, to: 0, path: "/", message: "not JSON: the document is empty" },
    ]);
    expect(checkDocumentText('{ "a": 1 } // note')[0]?.message).toMatch(/comments are not JSON/);
  });
});
