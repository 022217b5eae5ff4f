import { applyEdits, findNodeAtLocation, modify, parseTree } from "jsonc-parser";

/**
 * The author's text of a document without any content key's secret: each `contentKeys[i].secret`
 * member removed, every other byte as written. The secrets themselves are kept sealed in
 * `content_keys` (src/sites/content-key-store.ts); a text read back and deployed again names each key
 * by its id only, which keeps the stored secret.
 */
export function withoutSecrets(source: string): string {
  const tree = parseTree(source);
  const keys = tree === undefined ? undefined : findNodeAtLocation(tree, ["contentKeys"]);
  if (keys?.type !== "array" || keys.children === undefined) return source;
  let text = source;
  // From the last key back, so each edit leaves the earlier keys' offsets as they were.
  for (let i = keys.children.length - 1; i >= 0; i--) {
    const key = keys.children[i];
    if (key?.type !== "object" || findNodeAtLocation(key, ["secret"]) === undefined) continue;
    text = applyEdits(text, modify(text, ["contentKeys", i, "secret"], undefined, {}));
  }
  return text;
}
