/**
 * What an embedded test database costs (docs/architecture.md, "Test tiers"):
 * `npx bun bench/embedded-tests.ts`. Opens in-memory stores empty (initdb and migrations) and
 * from a migrated template's dump, then times 500 trivial statements on a store that collects
 * its garbage every 64 units of work (the server's) and every 1,024 (tests').
 */
import { sql } from "drizzle-orm";
import { openDatabase } from "../db/client";

const ms = (start: number) => `${(performance.now() - start).toFixed(0)} ms`;

let start = performance.now();
const first = await openDatabase({ dataDir: ":memory:" });
console.log(`empty, then migrated: ${ms(start)}`);
const dump = (await first.dump()) as Uint8Array;
await first.close();
for (let i = 0; i < 3; i++) {
  start = performance.now();
  const again = await openDatabase({ dataDir: ":memory:", from: dump });
  console.log(`from the template: ${ms(start)}`);
  await again.close();
}
for (const collectAfter of [64, 1_024]) {
  const db = await openDatabase({ dataDir: ":memory:", from: dump, collectAfter });
  start = performance.now();
  for (let i = 0; i < 500; i++) await db.db.execute(sql.raw("select 1"));
  console.log(`collecting every ${collectAfter}: ${((performance.now() - start) / 500).toFixed(2)} ms a statement`);
  await db.close();
}
