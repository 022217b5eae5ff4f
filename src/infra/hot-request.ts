/**
 * What the keyed routes read of a request. A fetch `Request` has all of it; so has the h1
 * transport's own light request (`src/http/h1/request.ts`), which keyed decide is handed over
 * the default transport instead of a `Request` (building one copies every header into native
 * code, a few microseconds a request). Code that serves a keyed route reads only this.
 */
export interface HotRequest {
  readonly method: string;
  readonly url: string;
  readonly headers: FieldReader;
  /** The body as a stream; null without one. */
  readonly body: ReadableStream<Uint8Array> | null;
  json(): Promise<unknown>;
  /**
   * The body parsed as JSON now, throwing where `json()` rejects: offered by a request that
   * already holds its body's bytes (the h1 transport's), so the hot path needs no promise.
   */
  jsonNow?(): unknown;
}

/** A request's header fields by lower-case name (repeated fields joined with ", ", as `Headers` does). */
export interface FieldReader {
  get(name: string): string | null;
}

/**
 * A route that answers a `Request` with a `Response` (`Bun.serve`'s routes, `app.handle`) and
 * may also offer a hot path: the same route taking a `HotRequest` and answering its success as
 * JSON text, which the h1 transport writes without a `Response` (errors stay `Response`s).
 */
export interface NativeRoute {
  (request: Request): Response | Promise<Response>;
  hot?: HotRoute;
}

/** A hot path: the answer at once where nothing had to wait, else a promise of it. */
export type HotRoute = (request: HotRequest) => string | Response | Promise<string | Response>;

/** `route` offering `hot` to the transports that can take it (src/http/h1). */
export function withHotPath(route: (request: Request) => Response | Promise<Response>, hot: HotRoute): NativeRoute {
  return Object.assign(route, { hot });
}
