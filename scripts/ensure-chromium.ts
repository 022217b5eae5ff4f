// Runs before `npm test`: the browser tests (console, OFREP web SDK) drive Debian's Chromium (no browser
// download). It only checks: installing system packages is the machine's set-up (.ci/run does it
// in CI), never a side effect of running the tests. A browser test never silently skips.
import { existsSync } from "node:fs";

const path = process.env.SVC_CHROMIUM || "/usr/bin/chromium";
if (existsSync(path)) process.exit(0);
console.error(
  `No Chromium at ${path}: the browser tests need it. Install Debian's chromium package ` +
    "(as root: apt-get -y install chromium), or set SVC_CHROMIUM to a Chromium binary.",
);
process.exit(1);
