import { sql } from "drizzle-orm";
import { type Db, rowsOf } from "../../db/client";

/** One table's size: Postgres' row estimate and the bytes of the table with its indexes and TOAST. */
export interface TableSize {
  readonly table: string;
  /** `pg_class.reltuples`: null until the table was first vacuumed or analysed. */
  readonly rows: number | null;
  readonly bytes: number;
}

export interface StoreSizesSnapshot {
  /** `pg_database_size` of the current database. */
  readonly databaseBytes: number;
  readonly tables: readonly TableSize[];
  /** When it was read (the injected clock, ms). */
  readonly readAt: number;
}

/** How long one reading serves /metrics scrapes and `svc db stats` before the catalog is read again. */
export const STORE_SIZES_TTL_MS = 30_000;

/**
 * The store's size, read from the catalog (estimates, no table is scanned) and kept for
 * `STORE_SIZES_TTL_MS`, so scrapes from several Prometheus servers cost one read between them.
 */
export class StoreSizes {
  private last: StoreSizesSnapshot | null = null;
  private reading: Promise<StoreSizesSnapshot> | null = null;

  constructor(
    private readonly db: Db,
    private readonly now: () => number,
  ) {}

  read(): Promise<StoreSizesSnapshot> {
    const last = this.last;
    if (last !== null && this.now() - last.readAt < STORE_SIZES_TTL_MS) return Promise.resolve(last);
    this.reading ??= this.readNow().finally(() => {
      this.reading = null;
    });
    return this.reading;
  }

  private async readNow(): Promise<StoreSizesSnapshot> {
    const readAt = this.now();
    const tables = rowsOf<{ table: string; rows: number | string; bytes: number | string }>(
      await this.db.execute(sql`select c.relname as "table", c.reltuples::float8 as rows,
          pg_total_relation_size(c.oid)::float8 as bytes
        from pg_class c join pg_namespace n on n.oid = c.relnamespace
        where c.relkind in ('r', 'p') and n.nspname = 'public' order by c.relname`),
    ).map((r) => {
      const rows = Number(r.rows);
      return { table: r.table, rows: rows < 0 ? null : rows, bytes: Number(r.bytes) };
    });
    const [size] = rowsOf<{ bytes: number | string }>(
      await this.db.execute(sql`select pg_database_size(current_database())::float8 as bytes`),
    );
    this.last = { databaseBytes: Number(size?.bytes ?? 0), tables, readAt };
    return this.last;
  }
}
