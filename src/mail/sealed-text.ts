import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from "node:crypto";

/** What every sealed text starts with; a value without it was stored before sealing. */
export const SEALED_PREFIX = "sealed:v1:";
const PREFIX = SEALED_PREFIX;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/**
 * Seals text at rest with AES-256-GCM under a key derived (HKDF-SHA256) from SVC_SECRET for this
 * one purpose. The mail outbox keeps its bodies sealed: a sign-in mail carries a live token, and
 * neither the table, nor a backup, nor the embedded store's WAL may hold it in clear. Every
 * process sharing a store shares SVC_SECRET, so any of them can open what another sealed.
 */
export class SealedText {
  private readonly key: Buffer;

  constructor(secret: string, purpose: string) {
    this.key = Buffer.from(hkdfSync("sha256", secret, Buffer.alloc(0), `svc:${purpose}`, 32));
  }

  seal(text: string): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv("aes-256-gcm", this.key, iv);
    const body = Buffer.concat([cipher.update(text, "utf8"), cipher.final()]);
    return PREFIX + Buffer.concat([iv, body, cipher.getAuthTag()]).toString("base64");
  }

  /** The text a `seal` made; a value stored before sealing (no prefix) is returned as it is. */
  open(stored: string): string {
    if (!stored.startsWith(PREFIX)) return stored;
    const raw = Buffer.from(stored.slice(PREFIX.length), "base64");
    if (raw.length < IV_BYTES + TAG_BYTES) throw new Error("sealed text is truncated");
    const decipher = createDecipheriv("aes-256-gcm", this.key, raw.subarray(0, IV_BYTES));
    decipher.setAuthTag(raw.subarray(raw.length - TAG_BYTES));
    return Buffer.concat([decipher.update(raw.subarray(IV_BYTES, raw.length - TAG_BYTES)), decipher.final()]).toString(
      "utf8",
    );
  }
}
