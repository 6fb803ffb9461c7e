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
  RetryAfterError,
  WorkerShutdownError,
  describeError,
  toError,
} from './errors.ts';

export type AttemptResult =
  | { kind: 'succeeded' }
  /** ctx.transaction already completed the job. */
  | { kind: 'completed' }
  | {
      kind: 'failed';
      outcome: 'failed' | 'timed_out' | 'cancelled';
      error: string;
      retryable: boolean;
      /** The least wait before the retry (RetryAfterError). */
      retryAfterMs?: number;
    }
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
  #listener: { aborted(): void } | undefined;

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
    listener?.aborted();
  }

  /** The executor's own hook, told once at the first abort; undefined removes it. */
  onAbort(listener: { aborted(): void } | undefined): void {
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
const SUCCEEDED: AttemptResult = { kind: 'succeeded' };

/** Gets an attempt's outcome, once: the worker's hook that records it and frees the slot. */
export type AttemptDone = (result: AttemptResult) => void;

/**
 * Runs one attempt and hands its outcome to `done`. A callback and a class instead of an async
 * function around a `new Promise`: those were ~1.2 KB of promises, resolvers and closures per job
 * (heap profile of the drain bench), more than anything else the worker allocated.
 */
export function runAttempt(spec: AttemptSpec, done: AttemptDone): void {
  const handler = spec.handler;
  if (handler === undefined) {
    done({
      kind: 'failed',
      outcome: 'failed',
      error: `NonRetryableError: no handler registered for kind '${spec.context.kind}' in this worker`,
      retryable: false,
    });
    return;
  }
  new AttemptRun(spec, done).start(handler);
}

class AttemptRun {
  readonly #spec: AttemptSpec;
  readonly #done: AttemptDone;
  #deadline: NodeJS.Timeout | undefined;
  #grace: NodeJS.Timeout | undefined;
  #over = false;

  constructor(spec: AttemptSpec, done: AttemptDone) {
    this.#spec = spec;
    this.#done = done;
  }

  start(handler: Handler): void {
    const { abort, timeoutMs } = this.#spec;
    if (timeoutMs !== null) {
      this.#deadline = setTimeout(
        () => abort.abort(new JobTimeoutError(`deadline of ${timeoutMs} ms passed`)),
        timeoutMs,
      );
    }
    if (abort.aborted) this.aborted();
    else abort.onAbort(this);
    try {
      handler(this.#spec.context).then(
        () => this.#settle(OK),
        (thrown: unknown) => this.#settle({ ok: false, error: toError(thrown) }),
      );
    } catch (thrown) {
      // The handler threw synchronously (or returned no promise) instead of rejecting.
      this.#settle({ ok: false, error: toError(thrown) });
    }
  }

  /** At the first abort: the handler has the grace period to settle, then it is abandoned. */
  aborted(): void {
    this.#grace = setTimeout(() => this.#settle('abandoned'), this.#spec.graceMs);
  }

  #settle(settled: Settled): void {
    if (this.#over) return;
    this.#over = true;
    clearTimeout(this.#deadline);
    clearTimeout(this.#grace);
    this.#spec.abort.onAbort(undefined);
    this.#done(outcome(this.#spec, settled));
  }
}

function outcome(spec: AttemptSpec, settled: Settled): AttemptResult {
  const { abort } = spec;
  if (spec.context.completed) return { kind: 'completed' };
  const reason: unknown = abort.reason;
  // Whatever the handler did, the attempt is no longer ours: any write would be refused.
  if (reason instanceof LeaseLostError) return { kind: 'lost' };
  // A handler that finished its work wins over an abort that came too late to stop it.
  if (settled !== 'abandoned' && settled.ok) return SUCCEEDED;
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
  if (error instanceof JobTimeoutError) {
    return { kind: 'failed', outcome: 'timed_out', error: describeError(error), retryable: true };
  }
  if (error instanceof RetryAfterError) {
    return {
      kind: 'failed',
      outcome: 'failed',
      error: describeError(error),
      retryable: true,
      retryAfterMs: error.retryAfterMs,
    };
  }
  return {
    kind: 'failed',
    outcome: 'failed',
    error: describeError(error),
    retryable: !(error instanceof NonRetryableError),
  };
}
