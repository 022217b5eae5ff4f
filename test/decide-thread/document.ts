/** The site document the decide thread's process tests deploy: a count meter, a paywall, a journey reading the meter. */
export const ORIGIN = "https://news.example";

export const DOCUMENT = {
  schemaVersion: 1,
  identity: { mode: "svc_only" },
  allowedOrigins: [ORIGIN],
  contentKeys: [{ id: "k1", secret: "content-secret-one" }],
  meters: { free: { kind: "count", allowance: 3, period: "forever", timeZone: "UTC" } },
  features: {
    paywall: {
      purpose: "decision",
      outcomes: { open: { type: "allow" }, wall: { type: "deny" } },
      rules: [{ when: { meter: "free", remaining: { gt: 0 } }, then: "open", tick: ["free"] }],
      default: "wall",
      onError: "wall",
    },
    // A journey whose destination reads the meter keyed decide counts (and charges none itself).
    subscribe: {
      purpose: "journey",
      outcomes: { offer: { url: "https://shop.example/offer" }, last: { url: "https://shop.example/last-free" } },
      rules: [{ when: { meter: "free", remaining: { gt: 0 } }, then: "offer" }],
      default: "last",
      onError: "last",
    },
  },
};
