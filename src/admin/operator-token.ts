import { timingSafeEqual } from "node:crypto";
import { hashSecret } from "../keys/key-value";

/** Constant-time check of an operator token against the configured one (compared as hashes). */
export function operatorTokenMatches(presented: string | null, expected: string): boolean {
  if (!presented) return false;
  return timingSafeEqual(Buffer.from(hashSecret(presented), "hex"), Buffer.from(hashSecret(expected), "hex"));
}
