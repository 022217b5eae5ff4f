import { AsyncLocalStorage } from "node:async_hooks";
import {
  type Attributes,
  type Context,
  defaultTextMapSetter,
  ROOT_CONTEXT,
  type Span,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from "@opentelemetry/api";
import type { W3CTraceContextPropagator } from "@opentelemetry/core";
import type { BasicTracerProvider, SpanExporter } from "@opentelemetry/sdk-trace-base";
import type { StatementHook } from "../../db/client";
import type { TracingSettings } from "../config";
import type { Logger } from "../logger";

/** A request's server span context, kept on the request itself (batched handlers run later). */
const SPAN_CONTEXT = Symbol("trace context");

/** The fetch an outside-service client is given. */
export type Fetch = (input: string | URL | Request, init?: RequestInit) => Promise<Response>;

/** How outside-service clients are observed. With tracing off: the plain fetch, and no span. */
export interface OutsideCalls {
  /** A fetch that records a client span per call and sends the trace context (`traceparent`). */
  fetch(service: string): Fetch;
  /** A span around a call whose HTTP the client library does itself (no header can be added). */
  call<T>(service: string, operation: string, run: () => Promise<T>): Promise<T>;
}

/** Outside calls with tracing off: no span, no header, the global fetch as it is. */
export const UNTRACED: OutsideCalls = {
  fetch: () => (input, init) => fetch(input, init),
  call: (_service, _operation, run) => run(),
};

/**
 * OpenTelemetry traces, built only when an OTLP endpoint is configured (config `traces`): with
 * none there is no Tracing at all, and every caller holds `null` and takes its untraced path,
 * chosen once where it is built (keyed decide's handler is not even wrapped).
 *
 * One provider per process, not registered globally: the active span lives in this object's
 * own AsyncLocalStorage, so apps built side by side (tests) never see each other's spans.
 * Spans leave in batches (BatchSpanProcessor) over OTLP/HTTP with JSON bodies.
 */
export class Tracing implements OutsideCalls {
  readonly tracer: Tracer;
  private readonly provider: BasicTracerProvider;
  private readonly active = new AsyncLocalStorage<Context>();
  private readonly propagator: W3CTraceContextPropagator;

  constructor(settings: TracingSettings, exporter?: SpanExporter) {
    // The SDK is loaded here, not at the top: a server without an OTLP endpoint never builds a
    // Tracing, and so never holds the SDK and exporter modules (about 12 MB of RSS measured).
    const { W3CTraceContextPropagator } = require("@opentelemetry/core") as typeof import("@opentelemetry/core");
    const { OTLPTraceExporter } =
      require("@opentelemetry/exporter-trace-otlp-http") as typeof import("@opentelemetry/exporter-trace-otlp-http");
    const { resourceFromAttributes } = require("@opentelemetry/resources") as typeof import("@opentelemetry/resources");
    const { BasicTracerProvider, BatchSpanProcessor } =
      require("@opentelemetry/sdk-trace-base") as typeof import("@opentelemetry/sdk-trace-base");
    this.propagator = new W3CTraceContextPropagator();
    this.provider = new BasicTracerProvider({
      resource: resourceFromAttributes({ "service.name": settings.serviceName }),
      spanProcessors: [
        new BatchSpanProcessor(
          exporter ?? new OTLPTraceExporter({ url: settings.endpoint, headers: { ...settings.headers } }),
          { scheduledDelayMillis: settings.exportDelayMs },
        ),
      ],
    });
    this.tracer = this.provider.getTracer("svc");
  }

  /** The context of the request or job running now (the root outside any). */
  current(): Context {
    return this.active.getStore() ?? ROOT_CONTEXT;
  }

  /**
   * `logger` with the ids of the span running now on each line logged inside one (`trace_id`
   * and `span_id`, as OpenTelemetry's log data model names them), so a request's or a job's lines
   * are found from its trace; outside a span its lines are as they were.
   */
  logsOf(logger: Logger): Logger {
    const withIds = (fields?: Record<string, unknown>): Record<string, unknown> | undefined => {
      const span = trace.getSpan(this.current());
      if (span === undefined) return fields;
      const { traceId, spanId } = span.spanContext();
      return { ...fields, trace_id: traceId, span_id: spanId };
    };
    return {
      debug: (message, fields) => logger.debug(message, withIds(fields)),
      info: (message, fields) => logger.info(message, withIds(fields)),
      warn: (message, fields) => logger.warn(message, withIds(fields)),
      error: (message, fields) => logger.error(message, withIds(fields)),
      warnAtMostEvery: (intervalMs, message, fields) => logger.warnAtMostEvery(intervalMs, message, withIds(fields)),
    };
  }

  /**
   * The server span of one request: a child of the caller's `traceparent` when it is valid, a
   * new trace otherwise. The answer carries the span's own `traceparent`. `route` names it
   * (`POST /v1/decide`), read once the answer is known.
   */
  serve(
    request: Request,
    route: () => string,
    handle: (request: Request) => Response | Promise<Response>,
  ): Response | Promise<Response> {
    const parent = this.propagator.extract(ROOT_CONTEXT, request.headers, headerGetter);
    const span = this.tracer.startSpan(
      request.method,
      { kind: SpanKind.SERVER, attributes: { "http.request.method": request.method } },
      parent,
    );
    const context = trace.setSpan(parent, span);
    (request as unknown as Record<symbol, Context>)[SPAN_CONTEXT] = context;
    const finish = (response: Response): Response => {
      const name = route();
      span.updateName(`${request.method} ${name}`);
      span.setAttributes({ "http.route": name, "http.response.status_code": response.status });
      if (response.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      return this.withTraceparent(response, context);
    };
    let result: Response | Promise<Response>;
    try {
      result = this.active.run(context, handle, request);
    } catch (error) {
      failed(span, error);
      throw error;
    }
    if (!(result instanceof Promise)) return finish(result);
    return result.then(finish, (error: unknown) => {
      failed(span, error);
      throw error;
    });
  }

  /**
   * An internal span (`decide`) around a request's handler, a child of the request's server
   * span found on the request itself: a handler run later with other requests (turn-batch.ts)
   * still gets its own parent.
   */
  handler(
    name: string,
    attributes: (request: Request) => Attributes,
    handle: (request: Request) => Promise<Response>,
  ): (request: Request) => Promise<Response> {
    return (request) => {
      const parent = (request as unknown as Record<symbol, Context | undefined>)[SPAN_CONTEXT] ?? this.current();
      const span = this.tracer.startSpan(name, { attributes: attributes(request) }, parent);
      return this.active.run(trace.setSpan(parent, span), () =>
        endedAfter(span, async () => {
          const response = await handle(request);
          span.setAttribute("http.response.status_code", response.status);
          return response;
        }),
      );
    };
  }

  /** An internal span around `run` (a job, a flush, one decision); its spans are children. */
  inSpan<T>(name: string, attributes: Attributes, run: () => T | Promise<T>): T | Promise<T> {
    const parent = this.current();
    const span = this.tracer.startSpan(name, { attributes }, parent);
    let result: T | Promise<T>;
    try {
      result = this.active.run(trace.setSpan(parent, span), run);
    } catch (error) {
      failed(span, error);
      span.end();
      throw error;
    }
    if (!(result instanceof Promise)) {
      span.end();
      return result;
    }
    return result.then(
      (value) => {
        span.end();
        return value;
      },
      (error: unknown) => {
        failed(span, error);
        span.end();
        throw error;
      },
    );
  }

  fetch(service: string): Fetch {
    const traced = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const request = new Request(input as Request, init);
      const url = new URL(request.url);
      const span = this.tracer.startSpan(
        request.method,
        {
          kind: SpanKind.CLIENT,
          // Host and port only: paths and queries carry subjects and signed credentials.
          attributes: {
            "peer.service": service,
            "http.request.method": request.method,
            "server.address": url.hostname,
            "server.port": Number(url.port) || (url.protocol === "https:" ? 443 : 80),
          },
        },
        this.current(),
      );
      this.propagator.inject(trace.setSpan(this.current(), span), request.headers, headerSetter);
      return endedAfter(span, async () => {
        const response = await fetch(request);
        span.setAttribute("http.response.status_code", response.status);
        if (response.status >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
        return response;
      });
    };
    return traced;
  }

  call<T>(service: string, operation: string, run: () => Promise<T>): Promise<T> {
    const parent = this.current();
    const span = this.tracer.startSpan(
      `${service} ${operation}`,
      { kind: SpanKind.CLIENT, attributes: { "peer.service": service } },
      parent,
    );
    return this.active.run(trace.setSpan(parent, span), () => endedAfter(span, run));
  }

  /**
   * Store statements as client spans, only inside a request's or a job's span (a statement
   * outside any is not worth a trace of its own). The text is drizzle's, with `$1` parameters:
   * values never reach a span.
   */
  readonly statements: StatementHook = {
    start: (text) => {
      const parent = this.active.getStore();
      if (parent === undefined) return null;
      const span = this.tracer.startSpan(
        operationOf(text),
        {
          kind: SpanKind.CLIENT,
          attributes: { "db.system.name": "postgresql", "db.query.text": text.slice(0, 2000) },
        },
        parent,
      );
      return (error) => {
        if (error !== undefined) failed(span, error);
        span.end();
      };
    },
  };

  /** Sends what is buffered now (tests; a stop). */
  flush(): Promise<void> {
    return this.provider.forceFlush();
  }

  shutdown(): Promise<void> {
    return this.provider.shutdown();
  }

  private withTraceparent(response: Response, context: Context): Response {
    const fields: Record<string, string> = {};
    this.propagator.inject(context, fields, defaultTextMapSetter);
    const value = fields.traceparent;
    if (value === undefined) return response;
    try {
      response.headers.set("traceparent", value);
      return response;
    } catch {
      // Immutable headers (a fetched answer passed on): copied with the field.
      const copy = new Response(response.body, response);
      copy.headers.set("traceparent", value);
      return copy;
    }
  }
}

/** The first word of a statement (`SELECT`, `INSERT`, `BEGIN`): the span's name. */
function operationOf(text: string): string {
  const match = /^\s*(\w+)/.exec(text);
  return match === null ? "statement" : (match[1] as string).toUpperCase();
}

function failed(span: Span, error: unknown): void {
  span.setStatus({ code: SpanStatusCode.ERROR, message: error instanceof Error ? error.name : "error" });
}

/** Awaits `run`, marking `span` failed when it throws; ends the span either way. */
async function endedAfter<T>(span: Span, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    failed(span, error);
    throw error;
  } finally {
    span.end();
  }
}

/** Headers as the propagator's carrier (read by lower-case name, as it asks). */
const headerGetter = {
  get: (carrier: Headers, key: string) => carrier.get(key) ?? undefined,
  keys: (carrier: Headers) => [...carrier.keys()],
};

const headerSetter = {
  set: (carrier: Headers, key: string, value: string) => carrier.set(key, value),
};
