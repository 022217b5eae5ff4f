// Tests read many JSON answers and assert on their shape with expect(); typing each one adds
// nothing, so test code sees Response.json() as `any` (production code keeps `unknown`).
declare global {
  interface Response {
    // biome-ignore lint/suspicious/noExplicitAny: test-only convenience, see above
    json(): Promise<any>;
  }
}

export {};
