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

/**
 * An attempt's abort state: the reason it was aborted (deadline, cancel, lost lease, shutdown) and
 * the AbortSignal its handler sees. The AbortController behind that signal is made only when the
 * handler reads `ctx.signal`: made for every job it was ~6 µs of the ~25 µs of Node time a no-op
 * job cost in the drain bench (CPU profile), and most handlers of short jobs never look at it.
 */
export class AttemptAbort {
  #controller: AbortController | undefined;
  #aborted = false;
  #reason: unknown;
  #listener: (() => void) | undefined;

  get aborted(): boolean {
    return this.#aborted;
  }

  get reason(): unknown {
    return this.#reason;
  }

  get signal(): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** The first call wins; later ones change nothing (as AbortController.abort). */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
    const listener = this.#listener;
    this.#listener = undefined;
    listener?.();
  }

  /** The executor's own hook, called once at the first abort; undefined removes it. */
  onAbort(listener: (() => void) | undefined): void {
    this.#listener = listener;
  }
}

export interface AttemptSpec {
  handler: Handler | undefined;
  /** `completed`: ctx.transaction committed the completion. */
  context: HandlerContext & { readonly completed: boolean };
  abort: AttemptAbort;
  timeoutMs: number | null;
  graceMs: number;
}

type Settled = { ok: true } | { ok: false; error: Error } | 'abandoned';
const OK: Settled = { ok: true };

export async function runAttempt(spec: AttemptSpec): Promise<AttemptResult> {
  const { abort } = spec;
  const handler = spec.handler;
  if (handler === undefined) {
    return {
      kind: 'failed',
      outcome: 'failed',
      error: `NonRetryableError: no handler registered for kind '${spec.context.kind}' in this worker`,
      retryable: false,
    };
  }
  let deadline: NodeJS.Timeout | undefined;
  let grace: NodeJS.Timeout | undefined;
  let settled: Settled;
  try {
    settled = await new Promise<Settled>((resolve) => {
      if (spec.timeoutMs !== null) {
        const ms = spec.timeoutMs;
        deadline = setTimeout(() => abort.abort(new JobTimeoutError(`deadline of ${ms} ms passed`)), ms);
      }
      // Once the signal fires, the handler has the grace period to settle; then it is abandoned.
      // (Inline callbacks: a named arrow costs a __name() call per attempt under tsx.)
      if (abort.aborted) grace = setTimeout(() => resolve('abandoned'), spec.graceMs);
      else abort.onAbort(() => void (grace = setTimeout(() => resolve('abandoned'), spec.graceMs)));
      try {
        handler(spec.context).then(
          () => resolve(OK),
          (thrown: unknown) => resolve({ ok: false, error: toError(thrown) }),
        );
      } catch (thrown) {
        // The handler threw synchronously instead of returning a rejected promise.
        resolve({ ok: false, error: toError(thrown) });
      }
    });
  } finally {
    clearTimeout(deadline);
    clearTimeout(grace);
    abort.onAbort(undefined);
  }

  if (spec.context.completed) return { kind: 'completed' };
  const reason: unknown = abort.reason;
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
