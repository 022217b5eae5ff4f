import { closeSync, openSync, readFileSync, unlinkSync, writeSync } from "node:fs";
import { join } from "node:path";

/**
 * One process per embedded data folder: two PGlite instances writing one folder is how a store
 * gets corrupted. The holder writes `server.lock` (its pid and when it started) with O_EXCL and
 * removes it when it closes the store or exits. A lock whose pid is gone, or is now a different
 * process (same pid, other start: a container restarts its server as pid 1 every time), is stale
 * (the holder crashed) and is taken over.
 */
export class DataFolderInUseError extends Error {
  constructor(
    readonly folder: string,
    readonly holder: LockHolder,
  ) {
    super(
      `The data folder ${folder} is in use by another server (pid ${holder.pid}, started ${holder.startedAt}). ` +
        "One server per embedded data folder: stop that one first, or set SVC_DATA_DIR to another folder " +
        "(the CLI works with the running server: npx svc ...).",
    );
  }
}

export interface LockHolder {
  pid: number;
  /** ISO time the holding process started (for the message). */
  startedAt: string;
  /** The process' identity beyond its pid (boot id and start tick on Linux), when known. */
  start?: string;
}

export const LOCK_FILE = "server.lock";

export interface DataFolderLock {
  readonly file: string;
  release(): void;
}

/** Takes the folder's lock or throws DataFolderInUseError naming the process that holds it. */
export function lockDataFolder(folder: string): DataFolderLock {
  const file = join(folder, LOCK_FILE);
  const me: LockHolder = { pid: process.pid, startedAt: processStartedAt(), start: processStart(process.pid) };
  const text = JSON.stringify(me);
  for (let attempt = 0; attempt < 2; attempt++) {
    let fd: number;
    try {
      fd = openSync(file, "wx", 0o600);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
      const holder = readHolder(file);
      if (holder !== null && isAlive(holder)) throw new DataFolderInUseError(folder, holder);
      // Stale (or half written by a crash): remove it and try once more; a racing starter that
      // wins the second O_EXCL makes this one refuse.
      try {
        unlinkSync(file);
      } catch {}
      continue;
    }
    writeSync(fd, text);
    closeSync(fd);
    let held = true;
    const release = () => {
      if (!held) return;
      held = false;
      process.off("exit", release);
      // Only our own lock: never one a later process took over.
      if (readFileText(file) === text) {
        try {
          unlinkSync(file);
        } catch {}
      }
    };
    process.on("exit", release);
    return { file, release };
  }
  const holder = readHolder(file) ?? { pid: 0, startedAt: "unknown" };
  throw new DataFolderInUseError(folder, holder);
}

function readFileText(file: string): string | null {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return null;
  }
}

function readHolder(file: string): LockHolder | null {
  const text = readFileText(file);
  if (text === null) return null;
  try {
    const parsed = JSON.parse(text) as LockHolder;
    return Number.isInteger(parsed.pid) && parsed.pid > 0 ? parsed : null;
  } catch {
    return null;
  }
}

function isAlive(holder: LockHolder): boolean {
  try {
    process.kill(holder.pid, 0);
  } catch (error) {
    // EPERM: a process of another user has that pid, alive.
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
  if (holder.start === undefined) return true;
  const now = processStart(holder.pid);
  return now === undefined || now === holder.start;
}

/** Linux: the boot id and the process' start tick, which together never repeat; elsewhere undefined. */
function processStart(pid: number): string | undefined {
  try {
    const boot = readFileSync("/proc/sys/kernel/random/boot_id", "utf8").trim();
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // The command name (field 2) may hold spaces and parentheses: count fields after its last ')'.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return `${boot}:${fields[19]}`;
  } catch {
    return undefined;
  }
}

function processStartedAt(): string {
  return new Date(Date.now() - process.uptime() * 1000).toISOString();
}
