import { chmodSync, existsSync, lstatSync, mkdirSync, readdirSync } from "node:fs";
import { join } from "node:path";

/**
 * Files this process creates are readable by its own user only (umask 077): the embedded
 * store's files, generated secrets. Set first thing in every process that writes the data folder
 * (the server, the CLI, the embedded store's initdb child); child processes inherit it.
 */
export function keepFilesPrivate(): void {
  process.umask(0o077);
}

/**
 * A folder only its owner may enter (0700): created so when missing. An existing folder is
 * narrowed to 0700 only when `narrowExisting` (folders the service owns outright, such as the
 * embedded store's `pg`), never a folder an operator pointed the service at.
 */
export function privateFolder(path: string, narrowExisting = false): void {
  if (!existsSync(path)) {
    mkdirSync(path, { recursive: true, mode: 0o700 });
    chmodSync(path, 0o700);
  } else if (narrowExisting) {
    chmodSync(path, 0o700);
  }
}

/**
 * Narrows a folder the service owns outright (the embedded store's `pg`) and everything in it to
 * its owner: folders 0700, files 0600. PGlite's file system sets the modes Postgres asks for
 * (0666 for most files) with chmod, which the umask does not narrow, so it is done once more on
 * every open; the folder's own 0700 already keeps everyone else out of what it creates later.
 */
export function privateTree(path: string): void {
  const stat = lstatSync(path);
  if (stat.isSymbolicLink()) return;
  if (stat.isDirectory()) {
    if ((stat.mode & 0o777) !== 0o700) chmodSync(path, 0o700);
    for (const name of readdirSync(path)) privateTree(join(path, name));
  } else if ((stat.mode & 0o077) !== 0) {
    chmodSync(path, stat.mode & 0o700);
  }
}
