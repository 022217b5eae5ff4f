import { AppError } from "../infra/errors";

/** 503 without Retry-After: the tenant has no CMS configured, so retrying will not help. */
export function contentNotConfigured(): AppError {
  return new AppError("service_unavailable", "Content re-reads are not configured for this tenant.");
}
