/**
 * The few errors that tell the runner what to do. A handler throws NonRetryableError to send its
 * job to the dead letter at once; the others are the reasons a handler's AbortSignal fires.
 */

/** Thrown by a handler: do not retry, whatever attempts remain. */
export class NonRetryableError extends Error {
  override name = 'NonRetryableError';
}

/** The job's deadline passed. */
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
