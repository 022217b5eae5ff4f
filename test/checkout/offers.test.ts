import { describe, expect, it } from "bun:test";
import { validateSiteDocument } from "../../src/core/document";
import { siteDocumentJsonSchema } from "../../src/core/document-schema";
import { checkoutDocument } from "../fixtures/documents";

type Offer = Record<string, unknown>;

function withOffer(checkout: Offer) {
  const doc = checkoutDocument() as ReturnType<typeof checkoutDocument> & { catalog: Record<string, Offer> };
  doc.catalog.offer_test = { title: "Test", checkout };
  return doc;
}

const errorsOf = (doc: unknown) => {
  const result = validateSiteDocument(doc);
  return result.ok ? [] : result.errors;
};

describe("offers in the catalog, checked at deploy", () => {
  it("accepts a subscription and a payment with a duration, and items without checkout stay free-form", () => {
    expect(errorsOf(checkoutDocument())).toEqual([]);
    expect(errorsOf(withOffer({ price: "price_1Qx", grant: "premium:plus", mode: "subscription" }))).toEqual([]);
  });

  it.each([
    [
      "a payment without a duration",
      { price: "price_a", grant: "premium", mode: "payment" },
      "/catalog/offer_test/checkout/duration",
      "a payment offer needs a duration",
    ],
    [
      "a subscription with a duration",
      { price: "price_a", grant: "premium", mode: "subscription", duration: "30d" },
      "/catalog/offer_test/checkout/duration",
      "until it is cancelled",
    ],
    [
      "an unknown member (a typo of duration)",
      { price: "price_a", grant: "premium", mode: "payment", durration: "30d" },
      "/catalog/offer_test/checkout/durration",
      "unknown member",
    ],
    ["a missing grant", { price: "price_a", mode: "subscription" }, "/catalog/offer_test/checkout/grant", ""],
    [
      "a grant name that is no grants.<name> fact",
      { price: "price_a", grant: "pre.mium", mode: "subscription" },
      "/catalog/offer_test/checkout/grant",
      "does not match",
    ],
    [
      "a price id with a space",
      { price: "price a", grant: "premium", mode: "subscription" },
      "/catalog/offer_test/checkout/price",
      "does not match",
    ],
    [
      "an unknown mode",
      { price: "price_a", grant: "premium", mode: "setup" },
      "/catalog/offer_test/checkout/mode",
      "must be one of",
    ],
    [
      "a malformed duration",
      { price: "price_a", grant: "premium", mode: "payment", duration: "a month" },
      "/catalog/offer_test/checkout/duration",
      "does not match",
    ],
  ])("refuses %s, naming the path", (_name, checkout, path, message) => {
    const errors = errorsOf(withOffer(checkout));
    expect(errors.length).toBeGreaterThan(0);
    const hit = errors.find((e) => e.path === path);
    expect(hit).toBeDefined();
    expect(hit?.message).toContain(message);
  });

  it("the exported JSON Schema describes the checkout member", () => {
    const text = JSON.stringify(siteDocumentJsonSchema());
    expect(text).toContain("Checkout offer");
    expect(text).toContain("the provider's price id");
  });
});
