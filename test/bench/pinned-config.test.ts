/** The pinned bench's arguments (bench/pinned.ts): what it runs, and what it refuses before starting anything. */
import { describe, expect, it } from "bun:test";
import { parsePinned } from "../../bench/pinned";

describe("the pinned bench's arguments", () => {
  it("runs the transports named, the decide thread and the allocator setting among them", () => {
    expect(parsePinned(["--pin", "--quick"]).transports).toEqual(["h1", "bun", "node"]);
    expect(parsePinned(["--pin", "--quick", "--transports", "h1,h1-thread"]).transports).toEqual(["h1", "h1-thread"]);
    expect(parsePinned(["--pin", "--transports", "h1,h1-noholes"]).transports).toEqual(["h1", "h1-noholes"]);
  });

  it("refuses a transport svc does not have, and a round count that is not a whole number", () => {
    expect(() => parsePinned(["--pin", "--transports", "h1,uws"])).toThrow("--transports names uws");
    // A name of the object's prototype is no mode either.
    expect(() => parsePinned(["--pin", "--transports", "toString"])).toThrow("--transports names toString");
    expect(() => parsePinned(["--pin", "--transports", ""])).toThrow("--transports names");
    expect(() => parsePinned(["--pin", "--rounds", "1.5"])).toThrow("--rounds needs a positive integer");
  });
});
