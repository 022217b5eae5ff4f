import { describe, expect, it } from "bun:test";
import postgres from "postgres";
import { createScratchDatabase } from "../../db/scratch-database";
import { storeKinds } from "../helpers/databases";

describe("scratch databases on a Postgres server", () => {
  it("refuses a name that is not a plain lower-case identifier, before connecting", async () => {
    // The address is never dialled: nothing listens on port 1.
    const unreachable = "postgres://postgres@127.0.0.1:1/postgres";
    for (const name of [
      'x"; drop database postgres; --',
      "Upper",
      "1starts_with_digit",
      "has-dash",
      "a".repeat(64),
      "",
    ]) {
      await expect(createScratchDatabase(unreachable, name)).rejects.toThrow(`not a plain database name: ${name}`);
    }
  });

  for (const kind of storeKinds.filter((k) => k === "server")) {
    it(`creates a database the returned url reaches, and drop() removes it (${kind} store)`, async () => {
      const url = process.env.DATABASE_URL as string;
      const name = `svc_test_scratch_${process.pid}`;
      const scratch = await createScratchDatabase(url, name);
      const inside = postgres(scratch.url, { max: 1, onnotice: () => {} });
      const admin = postgres(url, { max: 1, onnotice: () => {} });
      try {
        const [row] = await inside`select current_database() as name`;
        expect(row?.name).toBe(name);
        // drop() ends the connection still open on it.
        await scratch.drop();
        const left = await admin`select 1 from pg_database where datname = ${name}`;
        expect(left).toHaveLength(0);
      } finally {
        await inside.end({ timeout: 1 }).catch(() => {});
        await admin.end({ timeout: 5 });
      }
    }, 30_000);
  }
});
