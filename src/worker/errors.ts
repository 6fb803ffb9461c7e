/**
 * The few errors that tell the runner what to do. A handler throws NonRetryableError to send its
 * job to the dead letter at once, RetryAfterError to hold its retry back at least so long, and
 * JobTimeoutError to record a timeout of its own; the others are the reasons a handler's AbortSignal
 * fires.
 */

/** Thrown by a handler: do not retry, whatever attempts remain. */
export class NonRetryableError extends Error {
  override name = 'NonRetryableError';
}

/**
 * Thrown by a handler: a retryable failure whose next attempt comes no sooner than `retryAfterMs`
 * from now (by the database's clock), or later when the job's backoff says so. For a service that
 * asked to be left alone (HTTP 429 or 503 with Retry-After). An exhausted job is dead all the same.
 */
export class RetryAfterError extends Error {
  override name = 'RetryAfterError';
  readonly retryAfterMs: number;

  constructor(message: string, retryAfterMs: number, options?: ErrorOptions) {
    super(message, options);
    if (!Number.isFinite(retryAfterMs) || retryAfterMs < 0)
      throw new TypeError(`retryAfterMs: must be a finite number ≥ 0, got ${retryAfterMs}`);
    this.retryAfterMs = retryAfterMs;
  }
}

/** The job's deadline passed; a handler may throw it for a timeout of its own (recorded timed_out). */
export class JobTimeoutError extends Error {
  override name = 'JobTimeoutError';
}

/** Someone cancelled the job. */
export class JobCancelledError extends Error {
  override name = 'JobCancelledError';
}

/** This worker no longer owns the attempt (its lease expired and the job was reaped or re-run). */
export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
}

/** The worker is shutting down and its grace period ran out; the job is handed back to the queue. */
export class WorkerShutdownError extends Error {
  override name = 'WorkerShutdownError';
}

/** Bad input to the job client: names the field and the reason. Nothing was written. */
export class JobValidationError extends TypeError {
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
