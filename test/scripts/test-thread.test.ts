/** `npm run test:thread`'s files (scripts/test-thread.ts): the server-process tests, but those that choose the thread themselves. */
import { describe, expect, it } from "bun:test";
import { threadTestFiles } from "../../scripts/test-thread";

describe("the tests run again with the decide thread on", () => {
  it("are the ones that start the server as a process and do not set SVC_DECIDE_THREAD themselves", () => {
    const files = threadTestFiles();
    expect(files).toContain("./test/cli/cli.test.ts");
    expect(files).toContain("./test/http/outage.test.ts");
    // A suite of two server processes (test/helpers/server-processes.ts).
    expect(files).toContain("./test/counters/quota-leases.processes.test.ts");
    // They run with and without the thread already.
    expect(files).not.toContain("./test/decide-thread/thread.processes.test.ts");
    expect(files).not.toContain("./test/runtime/cluster.test.ts");
    // No in-process test: the thread starts only in src/main.ts.
    expect(files).not.toContain("./test/decide/browser.test.ts");
  });
});
