import { randomBytes } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/** A fresh key value: `svc_` + 40 base62 characters (~238 bits), uniformly drawn. */
export function generateKeyValue(): string {
  let out = "svc_";
  while (out.length < 44) {
    for (const byte of randomBytes(64)) {
      // 248 = 4 * 62: reject the tail so every character is equally likely.
      if (byte < 248 && out.length < 44) out += BASE62[byte % 62];
    }
  }
  return out;
}

// Bound once, not read from the global object in the hot path: a compiled function's read of a
// global left its compiled form whenever that object changed (docs/performance.md, "Compiles in
// the measured windows").
const SHA256 = Bun.SHA256;

/** SHA-256 hex of a secret: what the store keeps instead of the value. */
export function hashSecret(value: string): string {
  return SHA256.hash(value, "hex");
}

/** What listings show of a key: `svc_` plus six characters. */
export function keyPrefix(value: string): string {
  return value.slice(0, 10);
}
