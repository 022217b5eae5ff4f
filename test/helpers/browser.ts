import { type Browser, chromium } from "playwright-core";

/** Debian's Chromium (scripts/ensure-chromium.ts checks for it before `npm test`), never a download. */
export const CHROMIUM = process.env.SVC_CHROMIUM || "/usr/bin/chromium";

/**
 * Headless Chromium for the console's browser tests. The flags keep it off the network (this
 * machine's is closed: background services would only fail) and work as root.
 */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: [
      "--no-sandbox",
      "--disable-gpu",
      "--disable-quic",
      "--no-first-run",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--disable-dev-shm-usage",
    ],
  });
}
