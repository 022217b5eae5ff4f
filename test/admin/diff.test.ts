import { describe, expect, it } from "bun:test";
import { diffDocuments } from "../../src/admin/documents";

describe("diffDocuments", () => {
  it.each([
    ["equal objects", { a: 1, b: [1, 2] }, { b: [1, 2], a: 1 }, []],
    ["nothing before", null, { a: 1 }, [{ op: "add", path: "", to: { a: 1 } }]],
    ["nothing either side", null, null, []],
    ["a scalar replaced", 1, 2, [{ op: "replace", path: "", from: 1, to: 2 }]],
    ["an object for an array", [1], { a: 1 }, [{ op: "replace", path: "", from: [1], to: { a: 1 } }]],
    ["a member added", { a: 1 }, { a: 1, b: 2 }, [{ op: "add", path: "/b", to: 2 }]],
    ["a member removed", { a: 1, b: { c: 2 } }, { a: 1 }, [{ op: "remove", path: "/b", from: { c: 2 } }]],
    [
      "a nested value replaced",
      { a: { b: "x" } },
      { a: { b: "y" } },
      [{ op: "replace", path: "/a/b", from: "x", to: "y" }],
    ],
    [
      "an array shortened and changed",
      { l: [1, 2, 3] },
      { l: [1, 5] },
      [
        { op: "remove", path: "/l/2", from: 3 },
        { op: "replace", path: "/l/1", from: 2, to: 5 },
      ],
    ],
    ["an array grown", { l: [1] }, { l: [1, 2] }, [{ op: "add", path: "/l/1", to: 2 }]],
    ["a name with / and ~", { "a/b~c": 1 }, { "a/b~c": 2 }, [{ op: "replace", path: "/a~1b~0c", from: 1, to: 2 }]],
    ["a type changed", { a: [1] }, { a: { 0: 1 } }, [{ op: "replace", path: "/a", from: [1], to: { 0: 1 } }]],
  ])("%s", (_name, a, b, expected) => {
    expect(diffDocuments(a, b)).toEqual(expected as ReturnType<typeof diffDocuments>);
  });

  it("reads a member named __proto__ as any other (JSON allows it)", () => {
    const a = JSON.parse('{"__proto__":{"x":1}}');
    const b = JSON.parse('{"__proto__":{"x":2}}');
    expect(diffDocuments(a, b)).toEqual([{ op: "replace", path: "/__proto__/x", from: 1, to: 2 }]);
  });
});
