import { describe, expect, it } from "bun:test";
import { withoutSecrets } from "../../src/sites/source-secrets";

describe("an author's document text loses its content keys' secrets, and nothing else", () => {
  it("removes each key's secret member, keeping the rest byte for byte", () => {
    const source = `{
  "features": {},
  "contentKeys": [
    { "id": "k1", "secret": "s3cr3t-one-0123456789abcdef" },
    {
      "secret": "s3cr3t-two-0123456789abcdef",
      "id": "k2"
    }
  ],
  "zeta": 1
}`;
    const out = withoutSecrets(source);
    expect(out).not.toContain("s3cr3t");
    expect(JSON.parse(out)).toEqual({ features: {}, contentKeys: [{ id: "k1" }, { id: "k2" }], zeta: 1 });
    // The author's order and layout outside the removed members stay.
    expect(out.startsWith('{\n  "features": {},\n  "contentKeys": [')).toBe(true);
    expect(out.endsWith('  "zeta": 1\n}')).toBe(true);
  });

  it("leaves a text without content keys, or keys without secrets, as it is", () => {
    for (const source of ['{"features":{}}', '{ "contentKeys": [ { "id": "k1" } ] }', '{"contentKeys": 7}']) {
      expect(withoutSecrets(source)).toBe(source);
    }
  });
});
