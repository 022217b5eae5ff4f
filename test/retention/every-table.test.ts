import { describe, expect, it } from "bun:test";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { getTableName, is } from "drizzle-orm";
import { PgTable } from "drizzle-orm/pg-core";
import * as schema from "../../db/schema";
import { RETENTION_RULES } from "../../src/retention/rules";

const operations = readFileSync(join(import.meta.dir, "../../docs/operations.md"), "utf8");
const retention = operations.slice(operations.indexOf("## Retention"), operations.indexOf("## Document history"));
/** The table names in the first column of each row of the Retention table. */
const documented = new Set(
  retention
    .split("\n")
    .filter((line) => line.startsWith("| `"))
    .flatMap((line) => [...(line.split("|")[1] ?? "").matchAll(/`([a-z_]+)`/g)].map((m) => m[1] as string)),
);

describe("retention is written down for every table", () => {
  it("names every table of the schema in docs/operations.md's Retention table", () => {
    const tables = Object.values(schema)
      .filter((value) => is(value, PgTable))
      .map((table) => getTableName(table as PgTable));
    expect(tables.length).toBeGreaterThan(30);
    expect(tables.filter((table) => !documented.has(table))).toEqual([]);
  });

  it("has a row for every table the sweep deletes from", () => {
    expect(RETENTION_RULES.map((rule) => rule.table).filter((table) => !documented.has(table))).toEqual([]);
  });
});
