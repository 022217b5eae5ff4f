import { signContentPayload } from "../../src/core/verifier";

/** A signed content descriptor, as a publisher's CMS would produce it. */
export function signedContent(facts: Record<string, unknown>, secret = "content-secret-one") {
  const payload = JSON.stringify(facts);
  return { payload, signature: signContentPayload(payload, secret) };
}
