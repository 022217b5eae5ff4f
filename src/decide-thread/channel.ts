import { StoreUnavailable } from "../infra/deadline";
import { AppError, type ErrorCode } from "../infra/errors";

/**
 * Calls and events between the request thread and the main thread (src/decide-thread), over a
 * Worker, the worker's `self` or a MessagePort. Why our own: the messages are few and plain
 * (store rows, change events, forwarded requests), and a library for it (comlink and the like)
 * proxies objects and callbacks, which these calls must never carry.
 *
 * A call names a target and a method; its reply settles the caller's promise. An `AppError`
 * (`StoreUnavailable` too) thrown by the callee is rejected as the same class on the caller's
 * side, so the envelope a request gets is the one it would get in one thread; any other error
 * as an `Error` with its message (never its stack: it may name readers).
 */
export interface Endpoint {
  postMessage(message: unknown, transfer: ArrayBuffer[]): void;
  addEventListener(type: "message", listener: (event: MessageEvent) => void): void;
}

type Call = { readonly c: number; readonly t: string; readonly m: string; readonly a: readonly unknown[] };
type Reply =
  | { readonly r: number; readonly ok: true; readonly v: unknown }
  | { readonly r: number; readonly ok: false; readonly e: SentError };
type Event = { readonly e: string; readonly p: unknown };
type SentError = {
  readonly kind: "app" | "unavailable" | "other";
  readonly message: string;
  readonly code?: ErrorCode;
  readonly details?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
  readonly reason?: string;
  /** An other error's class name (`InvalidContext`), for a caller that tells them apart. */
  readonly name?: string;
};

/** A target's methods, each called with the arguments a call carries. */
type Served = Readonly<Record<string, unknown>>;

export class Channel {
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  private readonly served = new Map<string, Served>();
  private readonly events = new Map<string, (payload: unknown) => void>();
  private closed: Error | null = null;

  constructor(private readonly endpoint: Endpoint) {
    endpoint.addEventListener("message", (event) => this.receive(event.data));
  }

  /** Calls `method` of `target` on the other side with `args` (each structured-cloned). */
  call<T>(target: string, method: string, args: readonly unknown[]): Promise<T> {
    if (this.closed !== null) return Promise.reject(this.closed);
    const id = this.nextId++;
    return new Promise<T>((resolve, reject) => {
      this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject });
      this.endpoint.postMessage({ c: id, t: target, m: method, a: args } satisfies Call, []);
    });
  }

  /** Answers calls naming `target` with `impl`'s methods (its own, bound to it). */
  serve(target: string, impl: object): void {
    this.served.set(target, impl as Served);
  }

  /** Sends an event of `kind` (no reply); `transfer` hands buffers over instead of copying them. */
  emit(kind: string, payload: unknown, transfer?: ArrayBuffer[]): void {
    if (this.closed !== null) return;
    this.endpoint.postMessage({ e: kind, p: payload } satisfies Event, transfer ?? []);
  }

  /** Handles events of `kind` (one handler a kind). */
  on(kind: string, handler: (payload: unknown) => void): void {
    this.events.set(kind, handler);
  }

  /** The other side is gone: every call waiting and every later one rejects with `error`. */
  close(error: Error): void {
    this.closed = error;
    for (const waiting of this.waiting.values()) waiting.reject(error);
    this.waiting.clear();
  }

  private receive(message: Call | Reply | Event): void {
    if ("c" in message) this.answer(message);
    else if ("r" in message) {
      const waiting = this.waiting.get(message.r);
      if (waiting === undefined) return;
      this.waiting.delete(message.r);
      if (message.ok) waiting.resolve(message.v);
      else waiting.reject(errorOf(message.e));
    } else this.events.get(message.e)?.(message.p);
  }

  private answer(call: Call): void {
    const reply = (settled: Reply) => this.endpoint.postMessage(settled, []);
    const impl = this.served.get(call.t);
    const method = impl?.[call.m];
    if (typeof method !== "function") {
      reply({ r: call.c, ok: false, e: { kind: "other", message: `no method ${call.t}.${call.m} is served` } });
      return;
    }
    let result: unknown;
    try {
      result = method.apply(impl, call.a);
    } catch (error) {
      reply({ r: call.c, ok: false, e: sentError(error) });
      return;
    }
    Promise.resolve(result).then(
      (v) => reply({ r: call.c, ok: true, v }),
      (error: unknown) => reply({ r: call.c, ok: false, e: sentError(error) }),
    );
  }
}

function sentError(error: unknown): SentError {
  if (error instanceof StoreUnavailable) return { kind: "unavailable", message: error.message, reason: error.reason };
  if (error instanceof AppError) {
    return { kind: "app", message: error.message, code: error.code, details: error.details, headers: error.headers };
  }
  if (error instanceof Error) return { kind: "other", message: error.message, name: error.name };
  return { kind: "other", message: String(error) };
}

function errorOf(sent: SentError): Error {
  if (sent.kind === "unavailable") return new StoreUnavailable(sent.reason ?? "unavailable", sent.message);
  if (sent.kind === "app") return new AppError(sent.code as ErrorCode, sent.message, sent.details, sent.headers);
  const error = new Error(sent.message);
  if (sent.name !== undefined) error.name = sent.name;
  return error;
}

/**
 * An object whose every method is `channel.call(target, method, args)`: the other side's store
 * (or service) as this side's interface `T`. Only methods that take and return plain data
 * (rows, Maps, Dates, typed arrays) can be called this way.
 */
export function remoteOf<T extends object>(channel: Channel, target: string): T {
  const methods = new Map<string, (...args: unknown[]) => Promise<unknown>>();
  return new Proxy({} as T, {
    has: (_, name) => typeof name === "string",
    get(_, name) {
      if (typeof name !== "string" || name === "then") return undefined;
      let method = methods.get(name);
      if (method === undefined) {
        method = (...args: unknown[]) => channel.call(target, name, args);
        methods.set(name, method);
      }
      return method;
    },
  });
}
