/**
 * Error details name where a body failed, never what a caller wrote: a member name may carry data
 * (a stray `"4242424242424242": …` in a checkout body is a card number). A JSON pointer is kept
 * only as far as its segments are the schema's own member names or array indices; from the
 * first member the caller named (an undeclared member, a record's key, anything under
 * `t.Unknown()`), the pointer stops at that member's parent.
 */

interface SchemaNode {
  readonly type?: unknown;
  readonly properties?: Readonly<Record<string, SchemaNode>>;
  readonly items?: SchemaNode | readonly SchemaNode[];
  readonly prefixItems?: readonly SchemaNode[];
  readonly anyOf?: readonly SchemaNode[];
  readonly oneOf?: readonly SchemaNode[];
  readonly allOf?: readonly SchemaNode[];
}

const INDEX = /^(?:0|[1-9][0-9]{0,8})$/;

const decode = (segment: string) => segment.replaceAll("~1", "/").replaceAll("~0", "~");

/** The schema and every branch of its unions and intersections, flattened. */
function branches(node: unknown, out: SchemaNode[], depth = 0): void {
  if (typeof node !== "object" || node === null || depth > 16) return;
  const n = node as SchemaNode;
  out.push(n);
  for (const list of [n.anyOf, n.oneOf, n.allOf]) {
    if (Array.isArray(list)) for (const b of list) branches(b, out, depth + 1);
  }
}

function isArraySchema(n: SchemaNode): boolean {
  return n.type === "array" || (Array.isArray(n.type) && n.type.includes("array"));
}

/** What a segment leads to under `nodes`: declared members and array items only. */
function step(nodes: readonly unknown[], segment: string): unknown[] {
  const next: unknown[] = [];
  const flat: SchemaNode[] = [];
  for (const node of nodes) branches(node, flat);
  const name = decode(segment);
  for (const n of flat) {
    if (n.properties !== undefined && Object.hasOwn(n.properties, name)) next.push(n.properties[name]);
    else if (isArraySchema(n) && INDEX.test(segment)) {
      const i = Number(segment);
      if (Array.isArray(n.prefixItems) && i < n.prefixItems.length) next.push(n.prefixItems[i]);
      else if (Array.isArray(n.items)) next.push(n.items[i]);
      else if (n.items !== undefined) next.push(n.items);
      else next.push({});
    }
  }
  return next;
}

/**
 * The part of `pointer` that names only the schema's own members and array indices ("/" when
 * none does), and whether anything was cut.
 */
export function safePointer(schema: unknown, pointer: string): { path: string; cut: boolean } {
  if (pointer === "" || pointer === "/") return { path: "/", cut: false };
  const segments = (pointer.startsWith("/") ? pointer.slice(1) : pointer).split("/");
  let nodes: unknown[] = [schema];
  let kept = "";
  for (const segment of segments) {
    nodes = step(nodes, segment);
    if (nodes.length === 0) return { path: kept === "" ? "/" : kept, cut: true };
    kept += `/${segment}`;
  }
  return { path: kept, cut: false };
}
