import { describe, expect, it } from "bun:test";
import { createHmac } from "node:crypto";
import { contentHashOf, GiftTokens, MAX_GIFT_TOKEN_LENGTH } from "../../src/gifts/token";

const SECRET = "test-secret-test-secret-test-secret-0123";
const claims = {
  giftId: "0190a7a4-0000-4000-8000-000000000001",
  gifterId: "0190a7a4-0000-4000-8000-000000000002",
  contentHash: contentHashOf("article-1"),
  expiresAtMs: Date.parse("2026-12-01T00:00:00Z"),
};

describe("gift-link tokens", () => {
  const tokens = new GiftTokens(SECRET);

  it("reads back what it minted, compact whatever the content id", () => {
    const token = tokens.mint("default", "news", claims);
    expect(tokens.read("default", "news", token)).toEqual(claims);
    const long = tokens.mint("default", "news", { ...claims, contentHash: contentHashOf("é".repeat(512)) });
    expect(long.length).toBeLessThanOrEqual(MAX_GIFT_TOKEN_LENGTH);
    expect(long).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{43}$/);
  });

  it("refuses a token of another site, tenant or secret", () => {
    const token = tokens.mint("default", "news", claims);
    expect(tokens.read("default", "sport", token)).toBeNull();
    expect(tokens.read("other", "news", token)).toBeNull();
    expect(new GiftTokens("another-secret-another-secret-0123456").read("default", "news", token)).toBeNull();
  });

  it("refuses an altered payload or signature", () => {
    const token = tokens.mint("default", "news", claims);
    const [payload, signature] = token.split(".") as [string, string];
    const forged = Buffer.from(
      JSON.stringify([claims.giftId, claims.gifterId, claims.contentHash, claims.expiresAtMs + 86_400_000]),
    ).toString("base64url");
    expect(tokens.read("default", "news", `${forged}.${signature}`)).toBeNull();
    const flipped = (signature[0] === "A" ? "B" : "A") + signature.slice(1);
    expect(tokens.read("default", "news", `${payload}.${flipped}`)).toBeNull();
  });

  it.each([
    ["empty", ""],
    ["no dot", "abc"],
    ["dot first", ".abc"],
    ["short signature", "abc.def"],
    ["overlong", `${"a".repeat(MAX_GIFT_TOKEN_LENGTH)}.${"b".repeat(43)}`],
    ["NUL", "\u0000.\u0000"],
    ["lone surrogate", "\ud800.x"],
  ])("reads %s as no token", (_name, token) => {
    expect(tokens.read("default", "news", token)).toBeNull();
  });

  it("reads a validly signed payload of the wrong shape as no token", () => {
    // Signed with the site's key (derived as token.ts does), but not the four claims: never trusted.
    const key = createHmac("sha256", SECRET).update("gift-link\u0000default\u0000news").digest();
    const mintRaw = (value: unknown) => {
      const payload = Buffer.from(JSON.stringify(value)).toString("base64url");
      return `${payload}.${createHmac("sha256", key).update(payload).digest("base64url")}`;
    };
    expect(tokens.read("default", "news", mintRaw([claims.giftId, claims.gifterId, claims.contentHash, 1]))).toEqual({
      ...claims,
      expiresAtMs: 1,
    });
    expect(tokens.read("default", "news", mintRaw([1, 2, 3, 4]))).toBeNull();
    expect(tokens.read("default", "news", mintRaw({ giftId: "x" }))).toBeNull();
    expect(tokens.read("default", "news", mintRaw([claims.giftId, claims.gifterId, "h", "never"]))).toBeNull();
  });
});
