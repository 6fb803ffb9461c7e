/**
 * The `ctx` a handler gets: the job's fields, and its signal, heartbeat, transaction and once.
 *
 * A class, not an object literal made per job: the literal's getter and three methods were four new
 * closures (and their shared scope) for every attempt, most of the ~1.7 KB the worker allocated per
 * job starting it (heap profile of the drain bench), while a no-op handler uses none of them. Here
 * `heartbeat`, `transaction` and `once` are getters that make their function when read, so a handler
 * may still destructure them (`({ heartbeat }) => …`) and call them on their own.
 */
import { jobCompleteMany, jobHeartbeat, type AttemptRef, type JobClaimed } from '../store/jobs.ts';
import { isMovedRow, withTransaction, type Pool, type PoolClient } from '../store/pool.ts';
import { JobCancelledError, LeaseLostError } from './errors.ts';
import type { AttemptAbort } from './executor.ts';
import type { HandlerContext } from './handler.ts';
import { effectKey, effectOnce, type OnceResult } from './once.ts';

/** What every attempt of one worker shares. */
export interface AttemptHost {
  pool: Pool;
  owner: string;
  leaseMs: number;
}

export class AttemptContext implements HandlerContext {
  readonly jobId: number;
  readonly queue: string;
  readonly kind: string;
  readonly tenantId: string;
  readonly payload: unknown;
  readonly attempt: number;
  readonly maxAttempts: number;
  readonly idempotencyKey: string;
  readonly timeoutMs: number | null;
  readonly #ref: AttemptRef;
  readonly #abort: AttemptAbort;
  readonly #host: AttemptHost;
  #completed = false;

  constructor(job: JobClaimed, ref: AttemptRef, abort: AttemptAbort, host: AttemptHost) {
    this.jobId = job.id;
    this.queue = job.queue;
    this.kind = job.kind;
    this.tenantId = job.tenantId;
    this.payload = job.payload;
    this.attempt = job.attempt;
    this.maxAttempts = job.maxAttempts;
    this.idempotencyKey = job.idempotencyKey;
    this.timeoutMs = job.timeoutMs;
    this.#ref = ref;
    this.#abort = abort;
    this.#host = host;
  }

  /** ctx.transaction committed the job's completion: the worker writes nothing more for it. */
  get completed(): boolean {
    return this.#completed;
  }

  get signal(): AbortSignal {
    return this.#abort.signal;
  }

  get heartbeat(): (progress?: unknown) => Promise<void> {
    return (progress) => this.#heartbeat(progress);
  }

  get transaction(): <T>(fn: (tx: PoolClient) => Promise<T>) => Promise<T> {
    return (fn) => this.#transaction(fn);
  }

  get once(): <T>(name: string, fn: (tx: PoolClient) => Promise<T>) => Promise<OnceResult<T>> {
    return (name, fn) =>
      effectOnce(
        this.#host.pool,
        effectKey(this.queue, this.idempotencyKey, name),
        { jobId: this.jobId, attempt: this.attempt },
        fn,
      );
  }

  #lost(): LeaseLostError {
    return new LeaseLostError(
      `job ${this.jobId} attempt ${this.attempt} is no longer owned by ${this.#host.owner}`,
    );
  }

  async #heartbeat(progress: unknown): Promise<void> {
    const { pool, owner, leaseMs } = this.#host;
    const renewed = await jobHeartbeat(pool, owner, this.#ref, leaseMs, progress);
    if (renewed === undefined) {
      const lost = this.#lost();
      this.#abort.abort(lost);
      throw lost;
    }
    if (renewed.cancelRequested) this.#abort.abort(new JobCancelledError(`job ${this.jobId} was cancelled`));
  }

  async #transaction<T>(fn: (tx: PoolClient) => Promise<T>): Promise<T> {
    const { pool, owner } = this.#host;
    const value = await withTransaction(
      pool,
      async (tx) => {
        const result = await fn(tx);
        // Moved: the job left its running state (cancelled, reaped) while this completion waited.
        const done = await jobCompleteMany(tx, owner, [this.#ref]).catch((error: unknown) => {
          throw isMovedRow(error) ? this.#lost() : error;
        });
        if (done.length === 0) throw this.#lost();
        return result;
      },
      { runOnce: true },
    );
    this.#completed = true;
    return value;
  }
}
