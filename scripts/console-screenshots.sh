#!/usr/bin/env bash
# The screenshots in docs/console.md and docs/insight.md: the console's browser tests, run with a folder to save them in.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p docs/console
npx bun scripts/ensure-chromium.ts
SVC_CONSOLE_SCREENSHOTS="$PWD/docs/console" npx bun test --timeout 60000 test/console/console.browser.test.ts test/insight/insight.browser.test.ts
ls -l docs/console
