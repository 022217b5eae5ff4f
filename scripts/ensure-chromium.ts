// Runs before `npm test`: the console's browser tests drive Debian's Chromium (no browser
// download). Installs it with apt-get when it is missing and this is root on Debian; otherwise
// says how, and fails (a browser test never silently skips).
import { existsSync } from "node:fs";

const path = process.env.SVC_CHROMIUM || "/usr/bin/chromium";
if (existsSync(path)) process.exit(0);
const root = typeof process.getuid === "function" && process.getuid() === 0;
if (process.env.SVC_CHROMIUM === undefined && root && existsSync("/usr/bin/apt-get")) {
  console.log("Chromium is missing: installing Debian's chromium package for the console's browser tests");
  const run = (args: string[]) =>
    Bun.spawnSync(args, {
      stdout: "inherit",
      stderr: "inherit",
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
    }).exitCode;
  if (run(["apt-get", "install", "-y", "-qq", "chromium"]) !== 0) {
    run(["apt-get", "update", "-qq"]);
    run(["apt-get", "install", "-y", "-qq", "chromium"]);
  }
  if (existsSync(path)) process.exit(0);
}
console.error(`No Chromium at ${path}: install Debian's chromium package, or set SVC_CHROMIUM to a Chromium binary.`);
process.exit(1);
