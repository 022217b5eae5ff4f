// biome-ignore-all lint/suspicious/noThenProperty: rules of the site-document format have a string `then` member.
// biome-ignore-all lint/suspicious/noExplicitAny: test documents are plain JSON mutated one member at a time.
import { expect, test } from "bun:test";
import { compileSite } from "../../src/core/compile";
import { validateSiteDocument } from "../../src/core/document";
import { streamingDocument } from "../streaming/fixture";

function compiled(document: unknown) {
  const checked = validateSiteDocument(document);
  if (!checked.ok) throw new Error(JSON.stringify(checked.errors));
  return compileSite(checked.document);
}

test("a compiled site names the features that read streaming.* (rules, nested conditions, url templates)", () => {
  const doc = streamingDocument() as Record<string, any>;
  doc.features.nested = {
    purpose: "decision",
    outcomes: { a: {}, b: {} },
    rules: [
      {
        when: {
          not: {
            any: [
              { fact: "context.x", eq: 1 },
              { fact: "streaming.engagement.score", gt: 1 },
            ],
          },
        },
        then: "a",
      },
    ],
    default: "b",
    onError: "b",
  };
  doc.features.go = {
    purpose: "journey",
    outcomes: {
      go: { url: "https://shop.example/?s={streaming.engagement.segment}", fallbackUrl: "https://shop.example/" },
    },
    default: "go",
    onError: "go",
  };
  const site = compiled(doc);
  expect([...(site.streamingFeatures ?? [])].sort()).toEqual(["go", "loyal", "nested", "retain"]);
});

test("a site whose features read no streaming fact has none, pipelines or not", () => {
  const doc = streamingDocument() as Record<string, any>;
  for (const name of ["retain", "loyal"]) delete doc.features[name];
  expect(compiled(doc).streamingFeatures).toBeNull();
});
