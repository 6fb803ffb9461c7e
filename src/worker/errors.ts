/**
 * The few errors that tell the runner what to do. A handler throws NonRetryableError to send its
 * job to the dead letter at once; the others are the reasons a handler's AbortSignal fires. Each is
 * a TidemarkError with a stable `code`.
 */
import { TidemarkError, ValidationError } from '../errors.ts';

/** Thrown by a handler: do not retry, whatever attempts remain. */
export class NonRetryableError extends TidemarkError {
  override name = 'NonRetryableError';
  readonly code = 'non_retryable';
}

/** The job's deadline passed. */
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
