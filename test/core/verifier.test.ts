import { describe, expect, test } from "bun:test";
import { createHmac } from "node:crypto";
import { createContentVerifier, signContentPayload } from "../../src/core/verifier";

const NOW = Date.parse("2026-11-21T12:00:00Z");
const K1 = { id: "k1", secret: "first-secret-0123456789" };
const K2 = { id: "k2", secret: "second-secret-0123456789" };
const verify = createContentVerifier([K1, K2]);

/** Independent signer: node:crypto, standard base64 turned into base64url by hand. */
function sign(payload: string, secret: string, padded = false): string {
  const b64 = createHmac("sha256", secret).update(Buffer.from(payload, "utf8")).digest("base64");
  const url = b64.replaceAll("+", "-").replaceAll("/", "_");
  return padded ? url : url.replace(/=+$/, "");
}

const payload = JSON.stringify({ id: "story-1", section: "politics", premium: true, exp: NOW / 1000 + 60 });

describe("content descriptors", () => {
  test("a valid descriptor yields its facts and article id", () => {
    const r = verify({ payload, signature: sign(payload, K1.secret) }, NOW);
    expect(r).toEqual({ facts: JSON.parse(payload), articleId: "story-1", idTooLong: false });
  });

  test("signContentPayload signs as the docs say (unpadded base64url)", () => {
    expect(signContentPayload(payload, K1.secret)).toBe(sign(payload, K1.secret));
    expect(signContentPayload(payload, K1.secret)).toMatch(/^[A-Za-z0-9_-]{43}$/);
  });

  test("a padded signature is accepted", () => {
    const padded = sign(payload, K1.secret, true);
    expect(padded.endsWith("=")).toBe(true);
    expect(verify({ payload, signature: padded }, NOW)?.articleId).toBe("story-1");
  });

  test("the signature covers the exact bytes, including non-ASCII and whitespace", () => {
    const p = '{ "id": "ünï-€-😀",  "title": "Café" }';
    expect(verify({ payload: p, signature: sign(p, K1.secret) }, NOW)?.articleId).toBe("ünï-€-😀");
    const reformatted = JSON.stringify(JSON.parse(p));
    expect(verify({ payload: reformatted, signature: sign(p, K1.secret) }, NOW)).toBeNull();
  });

  test("kid selects the rotated key", () => {
    const p = JSON.stringify({ id: 7, kid: "k2" });
    expect(verify({ payload: p, signature: sign(p, K2.secret) }, NOW)).toEqual({
      facts: { id: 7, kid: "k2" },
      articleId: "7",
      idTooLong: false,
    });
    expect(verify({ payload: p, signature: sign(p, K1.secret) }, NOW)).toBeNull();
  });

  test("an id over 512 characters is marked too long and names no article; 512 is an article id", () => {
    const long = JSON.stringify({ id: "x".repeat(513) });
    expect(verify({ payload: long, signature: sign(long, K1.secret) }, NOW)).toMatchObject({
      articleId: null,
      idTooLong: true,
    });
    const edge = JSON.stringify({ id: "y".repeat(512) });
    expect(verify({ payload: edge, signature: sign(edge, K1.secret) }, NOW)).toMatchObject({
      articleId: "y".repeat(512),
      idTooLong: false,
    });
  });

  test("no kid means the first key", () => {
    const p = JSON.stringify({ id: "x" });
    expect(verify({ payload: p, signature: sign(p, K2.secret) }, NOW)).toBeNull();
    expect(verify({ payload: p, signature: sign(p, K1.secret) }, NOW)).not.toBeNull();
  });

  const flip = (s: string, i: number) => s.slice(0, i) + (s[i] === "A" ? "B" : "A") + s.slice(i + 1);
  const good = sign(payload, K1.secret);
  test.each([
    ["tampered payload byte", { payload: payload.replace("politics", "politicz"), signature: good }],
    ["tampered signature (first char)", { payload, signature: flip(good, 0) }],
    ["tampered signature (last char)", { payload, signature: flip(good, 42) }],
    ["wrong key", { payload, signature: sign(payload, "some-other-secret-value") }],
    ["truncated signature", { payload, signature: good.slice(0, 40) }],
    ["standard base64 alphabet", { payload, signature: `${good.slice(0, 42)}+` }],
    ["bad base64 characters", { payload, signature: `${good.slice(0, 42)}!` }],
    ["non-ASCII signature", { payload, signature: `${good.slice(0, 42)}Ł` }],
    ["hex signature", { payload, signature: createHmac("sha256", K1.secret).update(payload).digest("hex") }],
    [
      "unknown kid",
      { payload: JSON.stringify({ kid: "k9" }), signature: sign(JSON.stringify({ kid: "k9" }), K1.secret) },
    ],
    ["non-string kid", { payload: JSON.stringify({ kid: 1 }), signature: sign(JSON.stringify({ kid: 1 }), K1.secret) }],
    [
      "expired",
      {
        payload: JSON.stringify({ exp: NOW / 1000 - 1 }),
        signature: sign(JSON.stringify({ exp: NOW / 1000 - 1 }), K1.secret),
      },
    ],
    [
      "expiring this very second",
      { payload: JSON.stringify({ exp: NOW / 1000 }), signature: sign(JSON.stringify({ exp: NOW / 1000 }), K1.secret) },
    ],
    [
      "exp not a number",
      { payload: JSON.stringify({ exp: "2030" }), signature: sign(JSON.stringify({ exp: "2030" }), K1.secret) },
    ],
    ["non-JSON payload", { payload: "id=1", signature: sign("id=1", K1.secret) }],
    ["JSON array payload", { payload: "[1,2]", signature: sign("[1,2]", K1.secret) }],
    ["JSON string payload", { payload: '"x"', signature: sign('"x"', K1.secret) }],
    ["null payload", { payload: "null", signature: sign("null", K1.secret) }],
  ])("%s is unavailable", (_name, descriptor) => {
    expect(verify(descriptor, NOW)).toBeNull();
  });

  test.each([
    ["absent", undefined],
    ["null", null],
    ["non-string members", { payload: { id: 1 }, signature: 5 }],
  ])("%s descriptor is unavailable", (_name, descriptor) => {
    expect(verify(descriptor as never, NOW)).toBeNull();
  });

  test("exp in the future is fine; the id can be absent", () => {
    const p = JSON.stringify({ exp: NOW / 1000 + 1, section: "x" });
    expect(verify({ payload: p, signature: sign(p, K1.secret) }, NOW)).toEqual({
      facts: JSON.parse(p),
      articleId: null,
      idTooLong: false,
    });
  });

  test("a site with no content keys verifies nothing", () => {
    expect(createContentVerifier([])({ payload, signature: sign(payload, K1.secret) }, NOW)).toBeNull();
  });
});

describe("remembered descriptors", () => {
  const descriptor = (p: string) => ({ payload: p, signature: sign(p, K1.secret) });

  test("the same descriptor again gives the same frozen answer, without parsing it again", () => {
    const v = createContentVerifier([K1]);
    const d = descriptor(JSON.stringify({ id: "a", tags: ["x"], exp: NOW / 1000 + 60 }));
    const first = v(d, NOW);
    if (first === null) throw new Error("the descriptor should verify");
    expect(first.articleId).toBe("a");
    // A copy of the strings (not the same objects) still hits the remembered entry.
    expect(v({ payload: `${d.payload} `.trimEnd(), signature: `${d.signature}` }, NOW)).toBe(first);
    expect(Object.isFrozen(first.facts)).toBe(true);
    expect(Object.isFrozen((first.facts as { tags: string[] }).tags)).toBe(true);
  });

  test("a remembered descriptor still expires at its exp", () => {
    const v = createContentVerifier([K1]);
    const d = descriptor(JSON.stringify({ id: "a", exp: NOW / 1000 + 60 }));
    expect(v(d, NOW)).not.toBeNull();
    expect(v(d, NOW + 59_999)).not.toBeNull();
    expect(v(d, NOW + 60_000)).toBeNull();
  });

  test("a remembered signature over another payload is verified in full (and refused)", () => {
    const v = createContentVerifier([K1]);
    const d = descriptor(JSON.stringify({ id: "a", premium: false }));
    expect(v(d, NOW)?.facts.premium).toBe(false);
    expect(v({ payload: JSON.stringify({ id: "a", premium: true }), signature: d.signature }, NOW)).toBeNull();
    // The genuine descriptor is still answered.
    expect(v(d, NOW)?.facts.premium).toBe(false);
  });

  test("the oldest remembered descriptor leaves when the cache is full", () => {
    const v = createContentVerifier([K1], 2);
    const [a, b, c] = ["a", "b", "c"].map((id) => descriptor(JSON.stringify({ id })));
    const firstA = v(a as never, NOW);
    const firstB = v(b as never, NOW);
    v(c as never, NOW);
    // b is still remembered (same object); a was evicted, so it is parsed and verified afresh.
    expect(v(b as never, NOW)).toBe(firstB as never);
    const againA = v(a as never, NOW);
    expect(againA).not.toBe(firstA as never);
    expect(againA).toEqual(firstA as never);
  });

  test("descriptors that fail are never remembered", () => {
    const v = createContentVerifier([K1]);
    const p = JSON.stringify({ id: "a" });
    const forged = { payload: p, signature: sign(p, "not-the-key-0123456789") };
    expect(v(forged, NOW)).toBeNull();
    expect(v(forged, NOW)).toBeNull();
    expect(v(descriptor(p), NOW)?.articleId).toBe("a");
  });
});
