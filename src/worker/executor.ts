/**
 * Runs one attempt of one job: calls the handler with its context, fires the AbortSignal at the
 * deadline, and decides the attempt's outcome. A handler that ignores its aborted signal gets a grace
 * period; after it the attempt is over (timed out, cancelled, lost or released) and its slot is free,
 * though the abandoned promise may still run: JavaScript can not stop it.
 */
import type { Handler, HandlerContext } from './handler.ts';
import {
  JobCancelledError,
  JobTimeoutError,
  LeaseLostError,
  NonRetryableError,
  WorkerShutdownError,
  describeError,
  toError,
} from './errors.ts';

export type AttemptResult =
  | { kind: 'succeeded' }
  /** ctx.transaction already completed the job. */
  | { kind: 'completed' }
  | { kind: 'failed'; outcome: 'failed' | 'timed_out' | 'cancelled'; error: string; retryable: boolean }
  /** Not ours any more: write nothing. */
  | { kind: 'lost' }
  | { kind: 'released' };

export interface AttemptSpec {
  handler: Handler | undefined;
  context: HandlerContext;
  controller: AbortController;
  timeoutMs: number | null;
  graceMs: number;
  /** Whether ctx.transaction committed the completion. */
  completed(): boolean;
}

export async function runAttempt(spec: AttemptSpec): Promise<AttemptResult> {
  const { controller } = spec;
  if (spec.handler === undefined) {
    return {
      kind: 'failed',
      outcome: 'failed',
      error: `NonRetryableError: no handler registered for kind '${spec.context.kind}' in this worker`,
      retryable: false,
    };
  }
  const timers: NodeJS.Timeout[] = [];
  if (spec.timeoutMs !== null) {
    const ms = spec.timeoutMs;
    timers.push(setTimeout(() => controller.abort(new JobTimeoutError(`deadline of ${ms} ms passed`)), ms));
  }
  let abandon: () => void = () => undefined;
  const abandoned = new Promise<'abandoned'>((resolve) => (abandon = () => resolve('abandoned')));
  const onAbort = (): void => void timers.push(setTimeout(abandon, spec.graceMs));
  if (controller.signal.aborted) onAbort();
  else controller.signal.addEventListener('abort', onAbort, { once: true });

  let settled: { ok: true } | { ok: false; error: Error } | 'abandoned';
  try {
    const run = spec.handler(spec.context).then(
      () => ({ ok: true }) as const,
      (thrown: unknown) => ({ ok: false, error: toError(thrown) }) as const,
    );
    settled = await Promise.race([run, abandoned]);
  } catch (thrown) {
    // The handler threw synchronously instead of returning a rejected promise.
    settled = { ok: false, error: toError(thrown) };
  } finally {
    for (const t of timers) clearTimeout(t);
    controller.signal.removeEventListener('abort', onAbort);
  }

  if (spec.completed()) return { kind: 'completed' };
  const reason: unknown = controller.signal.aborted ? controller.signal.reason : undefined;
  // Whatever the handler did, the attempt is no longer ours: any write would be refused.
  if (reason instanceof LeaseLostError) return { kind: 'lost' };
  // A handler that finished its work wins over an abort that came too late to stop it.
  if (settled !== 'abandoned' && settled.ok) return { kind: 'succeeded' };
  if (reason instanceof WorkerShutdownError) return { kind: 'released' };
  const error =
    settled === 'abandoned'
      ? new Error(`handler did not settle within ${spec.graceMs} ms after its signal fired`, {
          cause: reason,
        })
      : settled.error;
  if (reason instanceof JobTimeoutError) {
    return {
      kind: 'failed',
      outcome: 'timed_out',
      error: `${reason.message}: ${describeError(error)}`,
      retryable: true,
    };
  }
  if (reason instanceof JobCancelledError) {
    return { kind: 'failed', outcome: 'cancelled', error: describeError(error), retryable: false };
  }
  return {
    kind: 'failed',
    outcome: 'failed',
    error: describeError(error),
    retryable: !(error instanceof NonRetryableError),
  };
}
