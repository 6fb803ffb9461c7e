/** What a handler is given and what it returns. */
import type { PoolClient } from '../store/pool.ts';

/**
 * heartbeat, transaction and once are properties holding functions, not methods: a handler may take
 * them out of ctx (`async ({ payload, heartbeat }) => …`) and call them on their own.
 */
export interface HandlerContext<P = unknown> {
  jobId: number;
  queue: string;
  kind: string;
  tenantId: string;
  payload: P;
  /** 1 for the first try; a retry of the same job counts on. */
  attempt: number;
  maxAttempts: number;
  /** Stable across retries: the occurrence key for scheduled jobs, the caller's key otherwise. */
  idempotencyKey: string;
  /** The attempt's deadline, counted from when the handler was called (signal fires then); null: none. */
  timeoutMs: number | null;
  /**
   * Fires on deadline (reason JobTimeoutError), cancel (JobCancelledError), lost lease
   * (LeaseLostError) or shutdown (WorkerShutdownError). Pass it on to fetch, child processes, queries.
   */
  signal: AbortSignal;
  /**
   * Stores progress (any JSON) with the time, and extends the lease. Leases are also renewed
   * automatically while the handler runs; call this to make progress visible. Throws LeaseLostError
   * when the attempt is no longer this worker's.
   */
  heartbeat: (progress?: unknown) => Promise<void>;
  /**
   * Runs `fn` in the transaction that completes this job: the effect and the completion commit
   * together or not at all (effectively once, for effects in this PostgreSQL only; docs/delivery.md).
   * Throws LeaseLostError, rolling the effect back, when the attempt is no longer this worker's.
   * The handler should return soon after; the job is already succeeded.
   */
  transaction: <T>(fn: (tx: PoolClient) => Promise<T>) => Promise<T>;
  /**
   * Dedupe-first: runs `fn` only if no attempt of this job has recorded the effect `name` yet, inside
   * a transaction that records it. Returns `{ ran: false }` when it already happened.
   */
  once: <T>(
    name: string,
    fn: (tx: PoolClient) => Promise<T>,
  ) => Promise<{ ran: true; value: T } | { ran: false }>;
}

export type Handler<P = unknown> = (ctx: HandlerContext<P>) => Promise<unknown>;

/** A handlers module's default export: job kind → handler. */
export type Handlers = Record<string, Handler>;
