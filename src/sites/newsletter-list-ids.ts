import { and, eq, inArray } from "drizzle-orm";
import type { Db } from "../../db/client";
import { newsletterLists } from "../../db/schema";
import { AppError } from "../infra/errors";

type Tx = Parameters<Parameters<Db["transaction"]>[0]>[0];

export interface ListEntry {
  id?: string;
  slug: string;
}

/** A uuid v7 (time-ordered): the id a list gets at the first deploy that names its slug. */
function newListId(): string {
  return Bun.randomUUIDv7();
}

/**
 * Fills in each newsletter list's stable id before a document is stored (inside the deploy's
 * transaction, with the site row locked): a slug seen before keeps its id; a new slug takes the
 * id the document gives (unused in the tenant) or a fresh uuid v7. A document that gives a known
 * slug another id, or a new slug an id already in use, is refused (422) and nothing is stored.
 * A deploy that drops a list keeps its row, so the standings come back with the list.
 */
export async function withNewsletterIds(tx: Tx, tenantId: string, siteId: string, document: unknown): Promise<unknown> {
  const lists = listsOf(document);
  if (lists === null) return document;
  const known = new Map(
    (
      await tx
        .select({ slug: newsletterLists.slug, id: newsletterLists.id })
        .from(newsletterLists)
        .where(and(eq(newsletterLists.tenantId, tenantId), eq(newsletterLists.siteId, siteId)))
    ).map((r) => [r.slug, r.id]),
  );
  const given = givenListIds(lists, known);
  const taken =
    given.length === 0
      ? new Set<string>()
      : new Set(
          (
            await tx.select({ id: newsletterLists.id }).from(newsletterLists).where(inArray(newsletterLists.id, given))
          ).map((r) => r.id),
        );
  const assigned = assignListIds(document, lists, known, taken);
  if (assigned.fresh.length > 0) {
    await tx.insert(newsletterLists).values(assigned.fresh.map((f) => ({ tenantId, siteId, slug: f.slug, id: f.id })));
  }
  return assigned.document;
}

/** The document's newsletter lists, or null when it names none. */
export function listsOf(document: unknown): ListEntry[] | null {
  const lists = (document as { newsletters?: ListEntry[] } | null)?.newsletters;
  return Array.isArray(lists) && lists.length > 0 ? lists : null;
}

/** The ids the document gives new slugs (lower case): those must not be in use anywhere. */
export function givenListIds(lists: readonly ListEntry[], known: ReadonlyMap<string, string>): string[] {
  return lists.filter((l) => l.id !== undefined && !known.has(l.slug)).map((l) => (l.id as string).toLowerCase());
}

/**
 * What `withNewsletterIds` decides, apart from the store: given the site's lists by slug and which
 * of the given ids are taken, the document with every list's id and the new lists to store, or the 422.
 */
export function assignListIds(
  document: unknown,
  lists: readonly ListEntry[],
  known: ReadonlyMap<string, string>,
  taken: ReadonlySet<string>,
): { document: unknown; fresh: { slug: string; id: string }[] } {
  const issues: { path: string; message: string }[] = [];
  const filled: ListEntry[] = [];
  const fresh: { slug: string; id: string }[] = [];
  lists.forEach((list, i) => {
    const stable = known.get(list.slug);
    const asked = list.id?.toLowerCase();
    if (stable !== undefined) {
      if (asked !== undefined && asked !== stable) {
        issues.push({ path: `/newsletters/${i}/id`, message: `list "${list.slug}" has the id ${stable}` });
      }
      filled.push({ ...list, id: stable });
      return;
    }
    if (asked !== undefined && taken.has(asked)) {
      issues.push({ path: `/newsletters/${i}/id`, message: `the id ${asked} belongs to another list` });
    }
    const id = asked ?? newListId();
    fresh.push({ slug: list.slug, id });
    filled.push({ ...list, id });
  });
  if (issues.length > 0) throw new AppError("validation_failed", "The site document is invalid.", issues);
  return { document: { ...(document as object), newsletters: filled }, fresh };
}
