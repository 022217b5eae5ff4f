import type { SiteDocument } from "../core/document";

export type TraitDefinitions = NonNullable<SiteDocument["traits"]>;

export interface TraitIssue {
  path: string;
  message: string;
}

const MAX_TRAITS_BYTES = 16 * 1024;

/** Per-key merge: a sent key replaces, an explicit null deletes, an omitted key keeps. */
export function mergeTraits(
  stored: Readonly<Record<string, unknown>>,
  patch: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...stored };
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete merged[key];
    else merged[key] = value;
  }
  return merged;
}

/**
 * Validates merged traits against the site's definitions. Values the organization has
 * retired are dropped (an old client never fails); undeclared traits or values outside a
 * closed set are issues. With no definitions, any JSON is accepted up to a size limit.
 */
export function validateTraits(
  merged: Record<string, unknown>,
  definitions: TraitDefinitions | undefined,
): { ok: true; traits: Record<string, unknown> } | { ok: false; issues: TraitIssue[] } {
  const issues: TraitIssue[] = [];
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(merged)) {
    const path = `/userTraits/${key}`;
    if (definitions === undefined) {
      out[key] = value;
      continue;
    }
    const def = Object.hasOwn(definitions, key) ? definitions[key] : undefined;
    if (!def) {
      // The caller chose this name, and it may carry data: the parent is named, never the key.
      issues.push({ path: "/userTraits", message: "has a member that is not a trait this site declares" });
      continue;
    }
    const retired = new Set(def.retired ?? []);
    const allowed = def.values ? new Set(def.values) : null;
    switch (def.type) {
      case "number":
        if (typeof value !== "number" || !Number.isFinite(value)) issues.push({ path, message: "must be a number" });
        else out[key] = value;
        break;
      case "boolean":
        if (typeof value !== "boolean") issues.push({ path, message: "must be a boolean" });
        else out[key] = value;
        break;
      case "string":
        if (typeof value !== "string") issues.push({ path, message: "must be a string" });
        else if (retired.has(value)) {
          // retired: accepted and dropped
        } else if (allowed && !allowed.has(value))
          issues.push({ path, message: `must be one of ${[...allowed].join(", ")}` });
        else out[key] = value;
        break;
      case "list": {
        if (!Array.isArray(value) || value.some((v) => typeof v !== "string")) {
          issues.push({ path, message: "must be a list of strings" });
          break;
        }
        const kept: string[] = [];
        value.forEach((v: string, i) => {
          if (retired.has(v)) return;
          if (allowed && !allowed.has(v))
            issues.push({ path: `${path}/${i}`, message: `must be one of ${[...allowed].join(", ")}` });
          else if (!kept.includes(v)) kept.push(v);
        });
        out[key] = kept;
        break;
      }
    }
  }
  if (issues.length === 0 && JSON.stringify(out).length > MAX_TRAITS_BYTES) {
    issues.push({ path: "/userTraits", message: `must serialise to at most ${MAX_TRAITS_BYTES} bytes` });
  }
  return issues.length > 0 ? { ok: false, issues } : { ok: true, traits: out };
}
