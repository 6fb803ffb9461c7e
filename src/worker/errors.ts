/**
 * The few errors that tell the runner what to do. A handler throws NonRetryableError to send its
 * job to the dead letter at once, RetryAfterError to hold its retry back at least so long, and
 * JobTimeoutError to record a timeout of its own; the others are the reasons a handler's AbortSignal
 * fires. Each is a TidemarkError with a stable `code`.
 */
import { TidemarkError, ValidationError } from '../errors.ts';

/** Thrown by a handler: do not retry, whatever attempts remain. */
export class NonRetryableError extends TidemarkError {
  override name = 'NonRetryableError';
  readonly code = 'non_retryable';
}

/**
 * Thrown by a handler: a retryable failure whose next attempt comes no sooner than `retryAfterMs`
 * from now (by the database's clock), or later when the job's backoff says so. For a service that
 * asked to be left alone (HTTP 429 or 503 with Retry-After). An exhausted job is dead all the same.
 */
export class RetryAfterError extends TidemarkError {
  override name = 'RetryAfterError';
  readonly code = 'retry_after';
  readonly retryAfterMs: number;

  constructor(message: string, retryAfterMs: number, options?: ErrorOptions) {
    super(message, options);
    if (!Number.isFinite(retryAfterMs) || retryAfterMs < 0)
      throw new ValidationError([
        { field: 'retryAfterMs', reason: `must be a finite number ≥ 0, got ${retryAfterMs}` },
      ]);
    this.retryAfterMs = retryAfterMs;
  }
}

/** The job's deadline passed; a handler may throw it for a timeout of its own (recorded timed_out). */
export class JobTimeoutError extends TidemarkError {
  override name = 'JobTimeoutError';
  readonly code = 'job_timeout';
}

/** Someone cancelled the job. */
export class JobCancelledError extends TidemarkError {
  override name = 'JobCancelledError';
  readonly code = 'job_cancelled';
}

/** This worker no longer owns the attempt (its lease expired and the job was reaped or re-run). */
export class LeaseLostError extends TidemarkError {
  override name = 'LeaseLostError';
  readonly code = 'lease_lost';
}

/** The worker is shutting down and its grace period ran out; the job is handed back to the queue. */
export class WorkerShutdownError extends TidemarkError {
  override name = 'WorkerShutdownError';
  readonly code = 'worker_shutdown';
}

/** Bad input to the job client: names each field and the reason. Nothing was written. */
export class JobValidationError extends ValidationError {
  override name = 'JobValidationError';
}

/** Turns whatever was thrown into an Error, once, keeping the original as its cause. */
export function toError(thrown: unknown): Error {
  if (thrown instanceof Error) return thrown;
  return new Error(typeof thrown === 'string' ? thrown : JSON.stringify(thrown), { cause: thrown });
}

/** What job_attempts.error keeps: name, message and the first lines of the stack. */
export function describeError(error: Error): string {
  const stack = error.stack?.split('\n').slice(0, 6).join('\n');
  return (stack ?? `${error.name}: ${error.message}`).slice(0, 4000);
}
