import type { SiteState } from "../sites/registry";

/** A list the site deploys, as the routes use it. */
export interface DeployedList {
  readonly id: string;
  readonly slug: string;
  readonly label: string;
  readonly description: string | null;
  readonly doubleOptIn: boolean;
}

/** The site's live lists, in document order (ids are filled at deploy). */
export function deployedLists(site: SiteState): DeployedList[] {
  return (site.live?.document.newsletters ?? []).flatMap((l) =>
    l.id === undefined
      ? []
      : [
          {
            id: l.id.toLowerCase(),
            slug: l.slug,
            label: l.label,
            description: l.description ?? null,
            doubleOptIn: l.doubleOptIn ?? true,
          },
        ],
  );
}
