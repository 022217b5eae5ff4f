// biome-ignore-all lint/suspicious/noThenProperty: rules of the site-document format have a string `then` member.
import { expect, test } from "bun:test";
import { evaluateBatch } from "../../src/core/evaluate";
import { factsOf, unknownFacts } from "../../src/newsletters/facts-cache";
import { NOW, site, snapshot } from "./snapshot";

const DAILY = "0190a5f2-9c3e-7bbb-8123-0123456789ab";
const WEEKLY = "0190a5f2-9c3e-7bbb-8123-0123456789ac";

function document() {
  return {
    schemaVersion: 1,
    identity: { mode: "svc_only" },
    newsletters: [
      { id: DAILY, slug: "daily", label: "Daily" },
      { id: WEEKLY, slug: "weekly", label: "Weekly", doubleOptIn: false },
    ],
    features: {
      prompt: {
        purpose: "decision",
        outcomes: { show: {}, hide: {} },
        rules: [{ when: { fact: "newsletters.daily", in: ["subscribed", "pending"] }, then: "hide" }],
        default: "show",
        onError: "hide",
      },
      plain: { purpose: "decision", outcomes: { on: {} }, default: "on", onError: "on" },
    },
  };
}

test("a compiled site names the features that read newsletters.* (null when none does)", () => {
  expect([...(site(document()).newsletterFeatures ?? [])]).toEqual(["prompt"]);
  const none = document() as { features: Record<string, unknown> };
  delete none.features.prompt;
  expect(site(none).newsletterFeatures).toBeNull();
});

test.each([
  ["subscribed", "hide"],
  ["pending", "hide"],
  ["unsubscribed", "show"],
  ["unknown", "show"],
])("newsletters.daily = %s decides %s", (status, outcome) => {
  const result = evaluateBatch(
    site(document()),
    ["prompt"],
    snapshot({ newsletters: { daily: status, weekly: "unknown" } }),
  );
  expect(result.decisions.prompt?.outcome).toBe(outcome);
});

test("a snapshot built without standings reads every list as missing, never as an error", () => {
  expect(evaluateBatch(site(document()), ["prompt"], snapshot()).decisions.prompt?.outcome).toBe("show");
});

test("facts: every deployed list by slug; a pending standing past its link's life is unknown", () => {
  const compiled = site(document());
  expect(unknownFacts(compiled)).toEqual({ daily: "unknown", weekly: "unknown" });
  const held = new Map([
    [DAILY, { status: "pending", pendingUntil: NOW + 1 }],
    [WEEKLY, { status: "subscribed", pendingUntil: null }],
  ]);
  expect(factsOf(compiled, held, NOW)).toEqual({ daily: "pending", weekly: "subscribed" });
  expect(factsOf(compiled, held, NOW + 1)).toEqual({ daily: "unknown", weekly: "subscribed" });
});
