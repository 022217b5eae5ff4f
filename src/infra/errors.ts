/**
 * Every error code the service answers with, and its status: a closed table, so a new code
 * without a status fails the type check. The spec's common codes first, then those of one
 * capability (checkout, gifts, identity's exchange).
 */
const STATUS_BY_CODE = {
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
  // checkout (docs/checkout.md)
  invalid_signature: 400,
  payment_provider_unavailable: 503,
  // gift links (docs/gift-links.md)
  gift_allowance_spent: 409,
  unknown_article: 422,
  unknown_gifter: 422,
  // identity's upstream exchange (the spec's external_only mode)
  external_credential_missing: 401,
  external_credential_expired: 401,
  external_credential_invalid: 401,
  identity_provider_rate_limited: 503,
  identity_provider_unreachable: 503,
} as const satisfies Record<string, number>;

export type ErrorCode = keyof typeof STATUS_BY_CODE;

/**
 * The one error type of the service. Services throw it with a code of the closed table above;
 * the HTTP edge turns it into the envelope `{ error: { code, message, details? } }`, the code's
 * status and the error's headers (Retry-After).
 */
export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly details?: unknown,
    readonly headers?: Readonly<Record<string, string>>,
  ) {
    super(message);
  }
}

export function statusOf(error: AppError): number {
  return STATUS_BY_CODE[error.code];
}

export interface ErrorBody {
  error: { code: ErrorCode; message: string; details?: unknown; requestId: string };
}

/**
 * The envelope. `requestId` is the answer's `x-request-id`, so a publisher quoting an error body
 * gives the operator the line to find in the log (the spec's envelope allows members beyond
 * code, message and details; clients branch on `code` and the status only).
 */
export function errorBody(code: ErrorCode, message: string, requestId: string, details?: unknown): ErrorBody {
  return details === undefined
    ? { error: { code, message, requestId } }
    : { error: { code, message, details, requestId } };
}

/** A JSON error Response, for the few places that answer before Elysia's handlers run. */
export function errorResponse(
  status: number,
  code: ErrorCode,
  message: string,
  requestId: string,
  headers?: Record<string, string>,
): Response {
  return new Response(JSON.stringify(errorBody(code, message, requestId)), {
    status,
    headers: { "content-type": "application/json", ...headers },
  });
}

export const badRequest = (message: string, details?: unknown) => new AppError("bad_request", message, details);
export const notFound = (message: string) => new AppError("not_found", message);
