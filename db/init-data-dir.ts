/**
 * Creates an embedded Postgres data folder and exits: `bun db/init-data-dir.ts <folder>`.
 * `openDatabase` runs it as a child process on first start, so the memory initdb takes (about
 * 400 MB of WebAssembly memory in PGlite, never given back) is never part of the server.
 */
import { PGlite } from "@electric-sql/pglite";
import { keepFilesPrivate } from "./private-files";

// Its files are the store's: readable by this user only, whatever umask the parent had.
keepFilesPrivate();

const folder = process.argv[2];
if (!folder) {
  console.error("usage: bun db/init-data-dir.ts <folder>");
  process.exit(2);
}
const client = new PGlite(folder);
await client.waitReady;
await client.close();
