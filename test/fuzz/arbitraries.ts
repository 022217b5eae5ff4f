import fc from "fast-check";

/**
 * Generators of hostile HTTP input: strings Postgres cannot store (NUL, lone surrogates), SQL
 * metacharacters, boundary and huge lengths, values of the wrong JSON type, numbers out of range,
 * deep nesting, malformed JSON, odd content types, garbage credentials and odd query strings.
 * Everything here is data: the suite turns it into a `Request` (see `toRequest`).
 */

/** A piece of JSON text written as is, for what `JSON.stringify` cannot produce (1e400, deep nesting). */
export class RawJson {
  constructor(readonly text: string) {}
}

/** `arb` one time in `oneIn`, otherwise null. */
export function sometimes<T>(arb: fc.Arbitrary<T>, oneIn: number): fc.Arbitrary<T | null> {
  return fc.oneof(
    { withCrossShrink: true },
    { weight: oneIn - 1, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: arb },
  );
}

/** A member left out of a body. */
export const OMIT: unique symbol = Symbol("omit");

export type Hostile = unknown;

/** JSON text of a value that may hold `RawJson` pieces and `OMIT` members. */
export function toJsonText(value: Hostile): string {
  if (value instanceof RawJson) return value.text;
  if (Array.isArray(value)) return `[${value.map((v) => (v === OMIT ? "null" : toJsonText(v))).join(",")}]`;
  if (value !== null && typeof value === "object") {
    const members: string[] = [];
    for (const [k, v] of Object.entries(value)) if (v !== OMIT) members.push(`${JSON.stringify(k)}:${toJsonText(v)}`);
    return `{${members.join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}

export const deepArrays = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
export const deepObjects = (depth: number) => `${'{"a":'.repeat(depth)}1${"}".repeat(depth)}`;

const HUGE = "x".repeat(200_000);

/** SQL metacharacters, as an attacker types them. */
export const SQL_META = [
  "'; drop table users; --",
  "' or '1'='1",
  "%",
  "_",
  "\\",
  "\\'",
  '"',
  "$1",
  "%s%s%n",
  "'::jsonb",
  "E'\\x00'",
  "/*",
  "--",
  ";select pg_sleep(1)",
  "$$",
];

/** Strings that are each a known way to break something. */
const SPECIAL_STRINGS = [
  "",
  " ",
  "\u0000",
  "a\u0000b",
  "news\u0000",
  "\ud800",
  "\udc00x",
  "x\ud800",
  "\udbff\udbff",
  "\ufeff",
  "\uffff",
  "\u202eabc",
  "🙂",
  "é",
  "\r\n",
  "\t",
  "\u0001\u001f\u007f",
  "null",
  "undefined",
  "NaN",
  "__proto__",
  "constructor",
  "prototype",
  "../../etc/passwd",
  "%00",
  "%ED%A0%80",
  "<script>alert(1)</script>",
  "javascript:alert(1)",
  "//evil.example",
  "/\\evil.example",
  "https://evil.example/",
  "a@b.co",
  "x".repeat(129),
  "x".repeat(513),
];

const BOUNDARY_LENGTHS = [1, 63, 64, 65, 100, 101, 128, 129, 200, 201, 254, 255, 512, 513, 2048, 2049, 8192, 8193];

/** Any UTF-16 code unit, lone surrogates included. */
const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((n) => String.fromCharCode(n));

/** A hostile string: specials, SQL, control characters, lone surrogates, boundary and huge lengths. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom(...SPECIAL_STRINGS) },
  { weight: 2, arbitrary: fc.constantFrom(...SQL_META) },
  { weight: 2, arbitrary: fc.string({ unit: codeUnit, maxLength: 24 }) },
  { weight: 1, arbitrary: fc.string({ unit: "grapheme", maxLength: 24 }) },
  { weight: 1, arbitrary: fc.constantFrom(...BOUNDARY_LENGTHS).map((n) => "a".repeat(n)) },
  { weight: 1, arbitrary: fc.constantFrom(HUGE, `${HUGE}\u0000`, `\ud800${HUGE}`) },
  {
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom("reader", "dev-1", "news", "premium"), fc.constantFrom("\u0000", "\ud800", "'", "%", "\\"))
      .map(([a, b]) => a + b),
  },
);

/** JSON number texts outside what a schema expects: out of range, negative zero, huge integers. */
const oddNumberText = fc.constantFrom(
  "1e400",
  "-1e400",
  "123456789012345678901234567890",
  "-9223372036854775809",
  "9007199254740993",
  "-0",
  "1e-400",
  "0.1",
  "-1",
  "0",
  "4294967296",
);

/** Nesting deep enough to overflow a recursive walker, as raw text. */
export const deepText = fc
  .tuple(fc.constantFrom(64, 65, 1_000, 10_000, 50_000), fc.boolean())
  .map(([depth, arrays]) => (arrays ? deepArrays(depth) : deepObjects(depth)));

const hostileScalar: fc.Arbitrary<Hostile> = fc.oneof(
  { weight: 4, arbitrary: hostileString },
  { weight: 1, arbitrary: oddNumberText.map((t) => new RawJson(t)) },
  { weight: 1, arbitrary: fc.double() },
  { weight: 1, arbitrary: fc.integer() },
  { weight: 1, arbitrary: fc.boolean() },
  { weight: 1, arbitrary: fc.constant(null) },
);

const hostileKey = fc.oneof(
  {
    weight: 3,
    arbitrary: fc.constantFrom("__proto__", "constructor", "prototype", "", "\u0000", "\ud800", "a.b", "$where"),
  },
  { weight: 2, arbitrary: hostileString.filter((s) => s.length < 1_000) },
  { weight: 2, arbitrary: fc.constantFrom("interests", "edition", "birthYear", "section", "offer") },
);

/** Any JSON value built from hostile pieces, a little nested, sometimes very deep. */
export const hostileJson: fc.Arbitrary<Hostile> = fc.letrec<{ value: Hostile; array: Hostile[]; object: Hostile }>(
  (tie) => ({
    value: fc.oneof(
      { depthSize: "small", withCrossShrink: true },
      { weight: 5, arbitrary: hostileScalar },
      { weight: 1, arbitrary: tie("array") },
      { weight: 1, arbitrary: tie("object") },
      { weight: 1, arbitrary: deepText.map((t) => new RawJson(t)) },
    ),
    array: fc.array(tie("value"), { maxLength: 4 }),
    object: fc.dictionary(hostileKey, tie("value"), { maxKeys: 4, noNullPrototype: true }),
  }),
).value;

/** Something in place of a valid value: hostile, the wrong type, or the right type with a bad inside. */
function hostileFor(valid: unknown): fc.Arbitrary<Hostile> {
  if (typeof valid === "string") {
    return fc.oneof(
      { weight: 3, arbitrary: hostileString },
      { weight: 1, arbitrary: hostileJson },
      { weight: 3, arbitrary: fc.constantFrom("\u0000", "\ud800", "\udc00", "'--", "%").map((s) => valid + s) },
    );
  }
  if (Array.isArray(valid)) {
    return fc.oneof(
      { weight: 2, arbitrary: fc.array(hostileString, { maxLength: 4 }) },
      { weight: 1, arbitrary: fc.array(hostileJson, { maxLength: 3 }) },
      { weight: 1, arbitrary: fc.constantFrom(101, 1_000).map((n) => Array.from({ length: n }, (_, i) => `f${i}`)) },
      { weight: 1, arbitrary: hostileJson },
    );
  }
  if (valid !== null && typeof valid === "object") {
    return fc.oneof(
      { weight: 2, arbitrary: fc.dictionary(hostileKey, hostileJson, { maxKeys: 4, noNullPrototype: true }) },
      { weight: 1, arbitrary: mutatedObject(valid as Record<string, unknown>) },
      { weight: 1, arbitrary: hostileJson },
    );
  }
  return hostileJson;
}

/**
 * A valid object with members replaced by hostile values, left out, or joined by extra members.
 * Most often exactly one member is hostile and the rest valid, so the request passes the other
 * checks and the hostile value travels as far as it can (to the service and the store).
 */
export function mutatedObject(valid: Record<string, unknown>): fc.Arbitrary<Record<string, Hostile>> {
  const keys = Object.keys(valid);
  const extraMembers = fc.dictionary(hostileKey, hostileJson, { minKeys: 1, maxKeys: 2, noNullPrototype: true });
  const oneMember = keys.map((key) => ({
    weight: 1,
    arbitrary: hostileFor(valid[key]).map((v) => ({ ...valid, [key]: v })),
  }));
  const members: Record<string, fc.Arbitrary<Hostile>> = {};
  for (const key of keys) {
    members[key] = fc.oneof(
      { withCrossShrink: true },
      { weight: 4, arbitrary: fc.constant(valid[key]) },
      { weight: 2, arbitrary: hostileFor(valid[key]) },
      { weight: 1, arbitrary: fc.constant(OMIT) },
    );
  }
  const several = fc
    .tuple(fc.record(members), sometimes(extraMembers, 3))
    .map(([base, extra]) => (extra ? { ...extra, ...base } : base));
  return fc.oneof(
    ...(oneMember.length > 0 ? [{ weight: 3, arbitrary: fc.oneof(...oneMember) }] : []),
    { weight: 2, arbitrary: several },
    { weight: 1, arbitrary: extraMembers.map((extra) => ({ ...valid, ...extra })) },
  );
}

/** Whole bodies that are not JSON, not an object, past the limit, or shaped to break a parser. */
export function rawBodyText(maxBodyBytes: number): fc.Arbitrary<string> {
  return fc.oneof(
    fc.constantFrom(
      "",
      "{",
      "}",
      "[",
      '{"a":}',
      "{'a':1}",
      "NaN",
      "undefined",
      "1e999999",
      "-",
      "\u0000",
      '{"a":1}garbage',
      "\ufeff{}",
      '{"a":"\\ud800"}',
      '{"a":"\\u0000"}',
      '{"a":"\\x"}',
      '{"__proto__":{"polluted":true}}',
      '{"constructor":{"prototype":{"polluted":true}}}',
      "null",
      "0",
      "[]",
      '"s"',
      "true",
    ),
    deepText,
    fc.constant(`{"x":"${"a".repeat(maxBodyBytes + 16)}"}`),
  );
}

/** Bytes that are not UTF-8 inside an otherwise plausible JSON body. */
export const invalidUtf8Body = fc.constantFrom(
  new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
  new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xed, 0xa0, 0x80, 0x22, 0x7d]),
  new Uint8Array([0xc0, 0x80]),
  new Uint8Array([0xfe, 0xff, 0x00, 0x7b, 0x00, 0x7d]),
);

export const CONTENT_TYPES = [
  "application/json",
  "application/json; charset=utf-8",
  "APPLICATION/JSON",
  "application/json; charset=utf-16",
  "application/jsonx",
  "application/vnd.api+json",
  "text/plain",
  "application/x-www-form-urlencoded",
  "multipart/form-data; boundary=x",
  "multipart/form-data",
  "application/octet-stream",
  "",
];

/**
 * A header value Fetch accepts (no NUL, CR, LF or code unit above 0xFF): those become visible
 * stand-ins, so the byte-level oddities that can travel in a header still do (0x01, 0x7f, 0xff).
 */
export function headerSafe(value: string): string {
  let out = "";
  for (const ch of value) {
    const code = ch.charCodeAt(0);
    if (code === 0) out += "%00";
    else if (code === 10 || code === 13) out += " ";
    else if (ch.length > 1 || code > 0xff) out += "?";
    else out += ch;
  }
  return out;
}

/** A hostile header value. */
export const hostileHeader: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: hostileString.map(headerSafe) },
  { weight: 1, arbitrary: fc.constantFrom("\u0001", "\u007f", "\u00ff", "x".repeat(129), "x".repeat(16_384), "%00") },
);

/** Credentials of the wrong shape. */
export const garbageAuthorization = fc.oneof(
  fc.constantFrom(
    "",
    "Bearer",
    "Bearer ",
    "bearer  ",
    "Basic dXNlcjpwYXNz",
    "Bearer svc_",
    "Bearer svc_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    "Bearer ' or 1=1 --",
    "Token abc",
  ),
  hostileHeader.map((h) => `Bearer ${h}`),
  hostileHeader,
);

export const garbageCookie = fc.oneof(
  fc.constantFrom(
    "",
    "=",
    ";;;",
    "svc.session_token=",
    "svc.session_token=garbage",
    "svc.session_token=%00",
    "svc.session_token=%ED%A0%80",
    "svc.session_token=%",
    "svc.access=garbage.garbage.garbage",
    "svc.access=eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
    "svc.session_token=s:abc.def",
    "idp_token=garbage",
    "idp_token=eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.",
    `svc.session_token=${"a".repeat(8_000)}`,
  ),
  hostileHeader.map((h) => `svc.session_token=${h}`),
  hostileHeader.map((h) => `idp_token=${h}`),
);

export const HOSTS = [
  "localhost",
  "evil.example",
  "",
  "localhost:99999",
  "[::1]",
  "127.0.0.1",
  "LOCALHOST",
  "news.example",
  "x".repeat(300),
  "a b",
  "localhost\u0001",
  "%00",
];

/** A query value encoded the way a browser would, except that lone surrogates are sent as their (invalid) UTF-8. */
export function percentEncode(value: string): string {
  let out = "";
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    const isHigh = unit >= 0xd800 && unit <= 0xdbff;
    const next = value.charCodeAt(i + 1);
    if (isHigh && next >= 0xdc00 && next <= 0xdfff) {
      out += encodeURIComponent(value.slice(i, i + 2));
      i++;
    } else if (unit >= 0xd800 && unit <= 0xdfff) {
      out += `%ED%${(0xa0 | ((unit >> 6) & 0x0f)).toString(16).toUpperCase()}%${(0x80 | (unit & 0x3f)).toString(16).toUpperCase()}`;
    } else {
      out += encodeURIComponent(value[i]!);
    }
  }
  return out;
}

/** Query pieces sent as written: broken escapes, repeats, brackets. */
const RAW_QUERY = [
  "",
  "&&",
  "a",
  "a=%",
  "a=%zz",
  "a=%00",
  "a=%ED%A0%80",
  "site=news&site=dual",
  "feature=subscribe&feature=paywall",
  "__proto__[polluted]=1",
  "a[]=1&a[]=2",
  "a[b][c]=1",
  "=x",
  "token=%25",
];

/** A query string built from a valid one: values replaced, members dropped, raw pieces added. */
export function queryArb(valid: Record<string, string>): fc.Arbitrary<string> {
  const members: Record<string, fc.Arbitrary<string | typeof OMIT>> = {};
  for (const [key, value] of Object.entries(valid)) {
    members[key] = fc.oneof(
      { withCrossShrink: true },
      { weight: 4, arbitrary: fc.constant(value) },
      { weight: 2, arbitrary: hostileString },
      { weight: 1, arbitrary: fc.constant(OMIT) },
    );
  }
  return fc
    .tuple(
      fc.record(members),
      sometimes(fc.constantFrom(...RAW_QUERY), 3),
      sometimes(fc.tuple(hostileString, hostileString), 4),
    )
    .map(([picked, raw, extra]) => {
      const parts: string[] = [];
      for (const [key, value] of Object.entries(picked)) {
        if (value !== OMIT) parts.push(`${key}=${percentEncode(value)}`);
      }
      if (extra) parts.push(`${percentEncode(extra[0])}=${percentEncode(extra[1])}`);
      if (raw !== null) parts.push(raw);
      return parts.length === 0 ? "" : `?${parts.join("&")}`;
    });
}

/** A path segment in place of a valid one: hostile text encoded, or broken escapes sent as written. */
export const hostileSegment: fc.Arbitrary<string> = fc.oneof(
  { weight: 3, arbitrary: hostileString.filter((s) => s.length > 0 && s.length < 10_000).map(percentEncode) },
  {
    weight: 2,
    arbitrary: fc.constantFrom("%", "%zz", "%00", "%ED%A0%80", "..", "%2e%2e", "%2F", ".", "a".repeat(65), "%20"),
  },
);
