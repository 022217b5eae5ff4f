/**
 * Restores an embedded store's dump (`svc backup`, PGlite's `dumpDataDir`) into a new data
 * folder and exits: `bun db/restore-data-dir.ts <dump.tar.gz> <folder>`. Run as a child process
 * by `svc restore`, like db/init-data-dir.ts, so the memory PGlite takes is never the CLI's.
 */
import { readFileSync } from "node:fs";
import { PGlite } from "@electric-sql/pglite";
import { keepFilesPrivate } from "./private-files";

keepFilesPrivate();

const [file, folder] = process.argv.slice(2);
if (!file || !folder) {
  console.error("usage: bun db/restore-data-dir.ts <dump.tar.gz> <folder>");
  process.exit(2);
}
const client = new PGlite(folder, { loadDataDir: new Blob([readFileSync(file)]) });
await client.waitReady;
await client.close();
