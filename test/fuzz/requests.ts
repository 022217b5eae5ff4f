import fc from "fast-check";
import { OPERATOR_TOKEN } from "../helpers/harness";
import {
  CONTENT_TYPES,
  garbageAuthorization,
  garbageCookie,
  HOSTS,
  hostileHeader,
  hostileJson,
  hostileSegment,
  invalidUtf8Body,
  mutatedObject,
  queryArb,
  rawBodyText,
  sometimes,
  toJsonText,
} from "./arbitraries";
import { BROWSER_ORIGIN, type Credential, type RouteSpec, type World } from "./route-table";

/** One generated request, as plain data (shown as is when a property fails). */
export interface FuzzCase {
  method: string;
  /** Path and query, as sent. */
  url: string;
  headers: Record<string, string>;
  body: string | Uint8Array | null;
  /** Sent as a stream without a declared length (chunked on the wire). */
  chunked: boolean;
}

const SITES = ["news", "dual", "fuzz", "target", "NEWS", "news "];

const mark = (name: string) => `__W_${name}__`;

/**
 * The world as generators see it: every value made at setup is a marker (`__W_key__`), put in
 * its place by `inWorld` just before sending. Cases stay valid across a rebuilt world, and a
 * failure shows `Bearer __W_key__` rather than a random key.
 */
export const PLACEHOLDERS: World = {
  key: mark("key"),
  cookie: mark("cookie"),
  sessionToken: mark("sessionToken"),
  spareCookie: mark("spareCookie"),
  magicToken: mark("magicToken"),
  upstreamToken: mark("upstreamToken"),
  subject: "sub-fuzz",
  admin: { tenant: "fuzz", site: "target", keyId: mark("keyId"), userId: mark("userId"), grant: "premium" },
  gifter: mark("gifter"),
  giftId: mark("giftId"),
};

/** Text with the markers replaced by the values of a real world. */
export function fillWorld(text: string, w: World): string {
  const values: Record<string, string> = {
    key: w.key,
    cookie: w.cookie,
    sessionToken: w.sessionToken,
    spareCookie: w.spareCookie,
    magicToken: w.magicToken,
    upstreamToken: w.upstreamToken,
    keyId: w.admin.keyId,
    userId: w.admin.userId,
    gifter: w.gifter,
    giftId: w.giftId,
  };
  return text.replace(/__W_([A-Za-z]+)__/g, (m, name: string) => values[name] ?? m);
}

/** A case with the markers replaced by the values of a real world. */
export function inWorld(c: FuzzCase, w: World): FuzzCase {
  const put = (text: string) => fillWorld(text, w);
  const headers: Record<string, string> = {};
  for (const [k, v] of Object.entries(c.headers)) headers[k] = put(v);
  const body = typeof c.body === "string" ? put(c.body) : c.body;
  return { ...c, url: put(c.url), headers, body };
}

/** The credential headers of a route: mostly valid (so requests reach validation and storage), sometimes garbage. */
function credentialArb(credential: Credential, w: World): fc.Arbitrary<Record<string, string>> {
  const valid: Record<Credential, Record<string, string>[]> = {
    none: [{}],
    key: [{ authorization: `Bearer ${w.key}` }, { "x-api-key": w.key }],
    session: [{ cookie: w.cookie }, { authorization: `Bearer ${w.sessionToken}` }],
    "spare-session": [{ cookie: w.spareCookie }],
    browser: [{ origin: BROWSER_ORIGIN }, { origin: BROWSER_ORIGIN, cookie: w.cookie }],
    upstream: [{ cookie: `idp_token=${w.upstreamToken}` }, {}],
    operator: [{ authorization: `Bearer ${OPERATOR_TOKEN}` }],
  };
  const garbage = fc.oneof(
    garbageAuthorization.map((authorization) => ({ authorization })),
    hostileHeader.map((key) => ({ "x-api-key": key })),
    garbageCookie.map((cookie) => ({ cookie })),
    fc.constantFrom("https://evil.example", "null", "", "https://news.example.evil.example").map((origin) => ({
      origin,
    })),
    // A valid credential of another kind, where this route takes none or another.
    fc.constantFrom<Record<string, string>>(
      { authorization: `Bearer ${w.key}` },
      { cookie: w.cookie },
      { authorization: `Bearer ${OPERATOR_TOKEN}` },
      {},
    ),
  );
  return fc.oneof(
    { withCrossShrink: true },
    { weight: 4, arbitrary: fc.constantFrom(...valid[credential]) },
    { weight: 1, arbitrary: garbage },
  );
}

function headersArb(spec: RouteSpec, w: World, hasBody: boolean): fc.Arbitrary<Record<string, string>> {
  const site = spec.site ?? "news";
  return fc
    .record({
      site: fc.oneof(
        { withCrossShrink: true },
        { weight: 8, arbitrary: fc.constant<string | null>(site) },
        { weight: 1, arbitrary: fc.constant(null) },
        { weight: 1, arbitrary: fc.constantFrom(...SITES) },
        { weight: 1, arbitrary: hostileHeader },
      ),
      credential: credentialArb(spec.credential, w),
      host: sometimes(fc.constantFrom(...HOSTS), 6),
      contentType: hasBody
        ? fc.oneof(
            { withCrossShrink: true },
            { weight: 8, arbitrary: fc.constant("application/json") },
            fc.constantFrom(...CONTENT_TYPES),
          )
        : sometimes(fc.constantFrom(...CONTENT_TYPES), 6),
      contentLength: sometimes(fc.constantFrom("0", "1", "-1", "abc", "99999999999", "1e3", " 5", "0x10"), 12),
      extra: sometimes(
        fc.dictionary(
          fc.constantFrom("x-svc-preview", "accept", "x-forwarded-for", "x-forwarded-host", "transfer-encoding"),
          hostileHeader,
          { minKeys: 1, maxKeys: 2, noNullPrototype: true },
        ),
        4,
      ),
    })
    .map(({ site, credential, host, contentType, contentLength, extra }) => {
      const headers: Record<string, string> = { ...extra, ...credential };
      if (site !== null) headers["x-svc-site-id"] = site;
      if (host !== null) headers.host = host;
      if (contentType !== null) headers["content-type"] = contentType;
      if (contentLength !== null) headers["content-length"] = contentLength;
      return headers;
    });
}

function bodyArb(spec: RouteSpec, w: World, maxBodyBytes: number): fc.Arbitrary<string | Uint8Array | null> {
  const shaped: fc.Arbitrary<string | Uint8Array | null> = spec.body
    ? mutatedObject(spec.body(w)).map(toJsonText)
    : fc.constant(null);
  return fc.oneof(
    { withCrossShrink: true },
    { weight: spec.body ? 8 : 4, arbitrary: shaped },
    { weight: 2, arbitrary: hostileJson.map(toJsonText) },
    { weight: 2, arbitrary: rawBodyText(maxBodyBytes) },
    { weight: 1, arbitrary: invalidUtf8Body },
  );
}

function pathArb(spec: RouteSpec, w: World): fc.Arbitrary<string> {
  const names = [...spec.path.matchAll(/:([A-Za-z]+)/g)].map((m) => m[1]!);
  if (names.length === 0) return fc.constant(spec.path);
  const valid = spec.params?.(w) ?? {};
  const members: Record<string, fc.Arbitrary<string>> = {};
  for (const name of names) {
    const value = valid[name] ?? "x";
    members[name] = fc.oneof(
      { withCrossShrink: true },
      { weight: 4, arbitrary: fc.constant(encodeURIComponent(value)) },
      { weight: 2, arbitrary: hostileSegment },
    );
  }
  return fc.record(members).map((picked) => spec.path.replace(/:([A-Za-z]+)/g, (_, name: string) => picked[name]!));
}

/** Requests to one route: valid credentials with hostile bodies, headers, paths and queries, and the reverse. */
export function requestArb(spec: RouteSpec, w: World, maxBodyBytes: number): fc.Arbitrary<FuzzCase> {
  const query = spec.query ? queryArb(spec.query(w)) : sometimes(queryArb({}), 4).map((q) => q ?? "");
  return fc
    .record({
      path: pathArb(spec, w),
      query,
      body: spec.method === "GET" ? fc.constant(null) : bodyArb(spec, w, maxBodyBytes),
      headers: headersArb(spec, w, spec.method !== "GET"),
      chunked: fc.oneof(
        { withCrossShrink: true },
        { weight: 6, arbitrary: fc.constant(false) },
        { weight: 1, arbitrary: fc.constant(true) },
      ),
    })
    .map(({ path, query, body, headers, chunked }) => ({
      method: spec.method,
      url: path + query,
      headers,
      body,
      chunked: body !== null && chunked,
    }));
}

/** A `Request` for `app.handle`, exactly as the case says (no length added when the case says chunked). */
export function toRequest(c: FuzzCase): Request {
  const headers = new Headers(c.headers);
  let body: Uint8Array | ReadableStream<Uint8Array> | null = null;
  if (c.body !== null && c.method !== "GET" && c.method !== "HEAD") {
    const bytes = typeof c.body === "string" ? new TextEncoder().encode(c.body) : c.body;
    if (c.chunked) {
      headers.delete("content-length");
      body = new ReadableStream({
        start(controller) {
          for (let i = 0; i < bytes.length; i += 65_536) controller.enqueue(bytes.subarray(i, i + 65_536));
          controller.close();
        },
      });
    } else {
      if (!headers.has("content-length")) headers.set("content-length", String(bytes.byteLength));
      body = bytes;
    }
  }
  return new Request(`http://localhost${c.url}`, { method: c.method, headers, body, duplex: "half" } as RequestInit);
}

/** A string short enough to read, with NUL and lone surrogates visible as escapes. */
export function shown(value: string, max = 240): string {
  if (value.length <= max) return JSON.stringify(value);
  return `${JSON.stringify(value.slice(0, max - 60))}…(${value.length} chars in all)…${JSON.stringify(value.slice(-40))}`;
}

/** A case as a reader wants it in a failure message. */
export function describeCase(c: FuzzCase): string {
  const lines = [`${c.method} ${shown(c.url)}`];
  for (const [k, v] of Object.entries(c.headers)) lines.push(`  ${k}: ${shown(v, 160)}`);
  if (c.body !== null) {
    const text = typeof c.body === "string" ? c.body : `bytes[${Array.from(c.body, (b) => b.toString(16)).join(" ")}]`;
    lines.push(`  body${c.chunked ? " (chunked)" : ""}: ${shown(text, 600)}`);
  }
  return lines.join("\n");
}
