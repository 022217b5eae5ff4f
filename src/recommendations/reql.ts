/**
 * The feed filters of a recommendation request, composed into one ReQL filter over the
 * engine's item properties. Every value a caller sent becomes a ReQL string literal through
 * `literal`, never code: a caller cannot close the literal or add an expression.
 */
export interface FeedFilters {
  readonly sections?: readonly string[];
  readonly tags?: readonly string[];
  readonly authors?: readonly string[];
  readonly types?: readonly string[];
  readonly excludeSections?: readonly string[];
  readonly excludeTags?: readonly string[];
  readonly excludeTypes?: readonly string[];
  readonly languages?: readonly string[];
  /** Epoch ms, inclusive. */
  readonly publishedAfter?: number;
  /** Epoch ms, inclusive. */
  readonly publishedBefore?: number;
  readonly excludeViewed?: boolean;
}

/** The engine's item properties the filters read (documented in docs/recommendations.md). */
const ITEM_PROPERTIES = {
  sections: "sections",
  tags: "tags",
  authors: "authors",
  type: "type",
  language: "language",
  publishedAt: "published_at",
} as const;

/** A ReQL string literal: double-quoted, with `\` and `"` escaped (control characters never reach here). */
export function literal(value: string): string {
  return `"${value.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`;
}

const property = (name: string) => `'${name}'`;
const setOf = (values: readonly string[]) => `{${values.map(literal).join(",")}}`;

/** Any of `values` is in the set property: OR within one parameter. */
function anyIn(name: string, values: readonly string[]): string {
  return `(${values.map((v) => `${literal(v)} in ${property(name)}`).join(" or ")})`;
}

/** None of `values` is in the set property. */
function noneIn(name: string, values: readonly string[]): string {
  return `not ${anyIn(name, values)}`;
}

/** The filter for these feed filters (AND across parameters), or undefined when none is set. */
export function composeFilter(filters: FeedFilters): string | undefined {
  const parts: string[] = [];
  const has = (list: readonly string[] | undefined): list is readonly string[] => list !== undefined && list.length > 0;
  if (has(filters.sections)) parts.push(anyIn(ITEM_PROPERTIES.sections, filters.sections));
  if (has(filters.tags)) parts.push(anyIn(ITEM_PROPERTIES.tags, filters.tags));
  if (has(filters.authors)) parts.push(anyIn(ITEM_PROPERTIES.authors, filters.authors));
  if (has(filters.types)) parts.push(`(${property(ITEM_PROPERTIES.type)} in ${setOf(filters.types)})`);
  if (has(filters.excludeSections)) parts.push(noneIn(ITEM_PROPERTIES.sections, filters.excludeSections));
  if (has(filters.excludeTags)) parts.push(noneIn(ITEM_PROPERTIES.tags, filters.excludeTags));
  if (has(filters.excludeTypes))
    parts.push(`(${property(ITEM_PROPERTIES.type)} not in ${setOf(filters.excludeTypes)})`);
  if (has(filters.languages)) parts.push(`(${property(ITEM_PROPERTIES.language)} in ${setOf(filters.languages)})`);
  // Timestamps compare as UTC epoch seconds.
  if (filters.publishedAfter !== undefined)
    parts.push(`(${property(ITEM_PROPERTIES.publishedAt)} >= ${Math.floor(filters.publishedAfter / 1000)})`);
  if (filters.publishedBefore !== undefined)
    parts.push(`(${property(ITEM_PROPERTIES.publishedAt)} <= ${Math.floor(filters.publishedBefore / 1000)})`);
  if (filters.excludeViewed)
    parts.push(
      `('itemId' not in map(lambda 'i': i["itemId"], user_interactions(context_user["userId"], {"detail_views"})))`,
    );
  return parts.length === 0 ? undefined : parts.join(" and ");
}
