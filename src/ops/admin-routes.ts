import { Elysia } from "elysia";
import { AppError } from "../infra/errors";
import type { StoreSizes } from "./store-sizes";

/** What the operator's store routes read. */
export interface AdminStoreDeps {
  readonly storeSizes: StoreSizes;
  readonly database: { dump(): Promise<Uint8Array | null> };
  readonly flusher: { flushAll(): Promise<unknown> };
  /** The counters' figures with the decide thread's in them: its flush writes the thread's counts too. */
  readonly figures?: { readonly flusher: { flushAll(): Promise<unknown> } };
}

/**
 * The operator's store routes (mounted inside the operator plane; both are reads, not audited):
 * GET /admin/db/stats, the database's size and each table's row estimate and bytes;
 * GET /admin/db/backup, the embedded store's consistent dump (`svc backup`).
 */
export function adminStoreRoutes(deps: AdminStoreDeps) {
  return new Elysia()
    .get("/db/stats", async () => {
      const sizes = await deps.storeSizes.read();
      return { databaseBytes: sizes.databaseBytes, tables: sizes.tables, readAt: new Date(sizes.readAt).toISOString() };
    })
    .get("/db/backup", async () => {
      // The counters held in memory go into the backup too.
      await (deps.figures?.flusher ?? deps.flusher).flushAll();
      const bytes = await deps.database.dump();
      if (bytes === null) {
        throw new AppError(
          "conflict",
          "The server store is backed up with pg_dump, not through the service (docs/deploying.md).",
        );
      }
      return new Response(bytes, {
        headers: {
          "content-type": "application/gzip",
          "content-disposition": 'attachment; filename="svc-backup.tar.gz"',
        },
      });
    });
}
