import { afterAll, beforeAll, describe } from "bun:test";
import type { Db } from "../../db/client";
import { freshDatabase, storeKinds } from "./databases";

/** Where a store contract runs: its in-memory twin, embedded Postgres, and a server when DATABASE_URL is set. */
export type ContractKind = "memory" | (typeof storeKinds)[number];

/**
 * One contract suite over every implementation of a store interface (the in-memory twin and the
 * drizzle store on each Postgres), so the twin stays honest: `make` builds a fresh store per
 * kind (`db` is null for memory), and `suite` receives a getter for it.
 */
export function storeContract<S>(
  name: string,
  make: (kind: ContractKind, db: Db | null) => S,
  suite: (store: () => S, kind: ContractKind) => void,
): void {
  // The fast tier (`npm run test:fast`) holds the twins to the contract without Postgres.
  const kinds: ContractKind[] = process.env.SVC_TEST_FAST === "1" ? ["memory"] : ["memory", ...storeKinds];
  describe.each(kinds)(`${name} (%s)`, (kind) => {
    let store: S | undefined;
    let drop = async () => {};
    beforeAll(async () => {
      if (kind === "memory") {
        store = make(kind, null);
        return;
      }
      const database = await freshDatabase(kind);
      drop = database.drop;
      store = make(kind, database.db);
    }, 60_000);
    afterAll(() => drop(), 60_000);
    suite(() => store as S, kind);
  });
}

/**
 * Whether `promise` rejects. Used instead of `expect(promise).rejects`, which never settles in
 * Bun 1.4.5 on the error the embedded store's thread hands back for a refused row.
 */
export async function rejects(promise: Promise<unknown>): Promise<boolean> {
  try {
    await promise;
    return false;
  } catch {
    return true;
  }
}
