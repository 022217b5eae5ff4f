/**
 * The one error type of the service. Services throw it with a code the spec names; the HTTP
 * edge turns it into the envelope `{ error: { code, message, details? } }` and a status.
 */
export class AppError extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly details?: unknown,
    /** Only for codes whose status is not implied by the code (e.g. exchange errors). */
    readonly status?: number,
    readonly headers?: Readonly<Record<string, string>>,
  ) {
    super(message);
  }
}

const statusByCode: Record<string, number> = {
  bad_request: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  payload_too_large: 413,
  validation_failed: 422,
  rate_limited: 429,
  internal_error: 500,
  service_unavailable: 503,
};

export function statusOf(error: AppError): number {
  return error.status ?? statusByCode[error.code] ?? 500;
}

export interface ErrorBody {
  error: { code: string; message: string; details?: unknown };
}

export function errorBody(code: string, message: string, details?: unknown): ErrorBody {
  return details === undefined ? { error: { code, message } } : { error: { code, message, details } };
}

/** A JSON error Response, for the few places that answer before Elysia's handlers run. */
export function errorResponse(
  status: number,
  code: string,
  message: string,
  headers?: Record<string, string>,
): Response {
  return new Response(JSON.stringify(errorBody(code, message)), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

export const badRequest = (message: string, details?: unknown) => new AppError("bad_request", message, details);
export const notFound = (message: string) => new AppError("not_found", message);
export const validationFailed = (message: string, details?: unknown) =>
  new AppError("validation_failed", message, details);
