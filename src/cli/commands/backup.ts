import { existsSync, renameSync, writeFileSync } from "node:fs";
import { join, resolve } from "node:path";
import { DataFolderInUseError, lockDataFolder } from "../../../db/data-folder-lock";
import { privateFolder } from "../../../db/private-files";
import { CliError, type Commands } from "../context";

const RESTORE_SCRIPT = join(import.meta.dir, "..", "..", "..", "db", "restore-data-dir.ts");

/**
 * `svc backup <file>`: the running server's embedded store, dumped by the server itself between
 * two statements (consistent while it serves). `svc restore <file>`: into a data folder that holds
 * no store, while no server runs on it (docs/deploying.md, "Backups").
 */
export const backupCommands: Commands = {
  backup: async ({ action, download }) => {
    if (action === undefined) throw new CliError("usage: svc backup <file>");
    const bytes = await download("/admin/db/backup");
    // Written whole under another name first: a failed write never leaves a truncated backup.
    const partial = `${action}.partial`;
    writeFileSync(partial, bytes, { mode: 0o600 });
    renameSync(partial, action);
    return { json: { file: action, bytes: bytes.length }, text: `backup written to ${action} (${bytes.length} bytes)` };
  },
  restore: async ({ action, env }) => {
    if (action === undefined) throw new CliError("usage: svc restore <file>");
    if (!existsSync(action)) throw new CliError(`no backup at ${action}`);
    const dataDir = resolve(env.SVC_DATA_DIR || "./data");
    const folder = join(dataDir, "pg");
    if (existsSync(folder)) {
      throw new CliError(
        `${folder} already holds a store: restore into a fresh data folder (set SVC_DATA_DIR) or move it away first`,
      );
    }
    privateFolder(dataDir);
    let lock: ReturnType<typeof lockDataFolder>;
    try {
      lock = lockDataFolder(dataDir);
    } catch (error) {
      if (error instanceof DataFolderInUseError) throw new CliError(error.message);
      throw error;
    }
    try {
      const child = Bun.spawn([process.execPath, RESTORE_SCRIPT, resolve(action), folder], {
        stdout: "ignore",
        stderr: "pipe",
      });
      const code = await child.exited;
      if (code !== 0) {
        const err = (await new Response(child.stderr).text()).trim();
        throw new CliError(`restore failed: ${err.split("\n").pop() || `exit ${code}`}`);
      }
    } finally {
      lock.release();
    }
    return {
      json: { file: action, dataDir },
      text: `restored ${action} into ${dataDir}; start the server on it (with the SVC_SECRET the backup was taken with)`,
    };
  },
};
