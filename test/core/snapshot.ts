// biome-ignore-all lint/suspicious/noThenProperty: rules of the site-document format have a string `then` member.
/** Test helpers for the decision core: snapshots and small documents. */
import { type CompiledSite, compileSite } from "../../src/core/compile";
import { validateSiteDocument } from "../../src/core/document";
import type { FactSnapshot, MeterRead } from "../../src/core/types";

export const NOW = Date.parse("2026-11-21T12:00:00Z");

export interface SnapshotOptions extends Partial<Omit<FactSnapshot, "meter">> {
  meters?: Record<string, MeterRead>;
}

/** A snapshot with every namespace available and empty unless given. */
export function snapshot(options: SnapshotOptions = {}): FactSnapshot {
  const { meters, ...rest } = options;
  return Object.freeze({
    now: NOW,
    content: {},
    articleId: "article-1",
    grants: {},
    user: {},
    org: {},
    context: {},
    streaming: {},
    external: {},
    gift: {},
    subject: "subject-1",
    meter: (name: string) => meters?.[name],
    ...rest,
  });
}

/** Validates (failing loudly) and compiles a document. */
export function site(document: unknown): CompiledSite {
  const checked = validateSiteDocument(document);
  if (!checked.ok) throw new Error(`invalid test document: ${JSON.stringify(checked.errors)}`);
  return compileSite(checked.document);
}

/** A minimal valid document; `extra` members replace the defaults. */
export function doc(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    schemaVersion: 1,
    identity: { mode: "svc_only" },
    contentKeys: [{ id: "k1", secret: "test-secret-0123456789" }],
    ...extra,
  };
}

/** A document with one decision feature `f` whose first rule is `when` -> "yes", else "no". */
export function oneRule(when: unknown, extra: Record<string, unknown> = {}): Record<string, unknown> {
  return doc({
    meters: {
      seen_m: { kind: "seen", allowance: 3, period: "month", timeZone: "UTC" },
      count_m: { kind: "count", allowance: 10, period: "day", timeZone: "UTC" },
    },
    pipelines: { scores: { source: "organization", columns: { score: "number", tier: "string" } } },
    features: {
      f: {
        purpose: "decision",
        outcomes: { yes: { type: "allow" }, no: { type: "deny" }, err: { type: "error" } },
        rules: [{ when, then: "yes" }],
        default: "no",
        onError: "err",
      },
    },
    ...extra,
  });
}
