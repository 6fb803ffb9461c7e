/**
 * Claim, heartbeat, complete and fail for workers that are not the TypeScript `Worker` class: the
 * HTTP pull API (workers in any language) and the push executor. They use the same store statements
 * as that class, with the same ownership rule: every write names (owner, attempt) and changes
 * nothing once the attempt is no longer that owner's (lease expired and reaped, cancelled, finished).
 * Completion and failure run in a transaction of their own, which the store's statements extend with
 * the workflow step (children released, or the node failed), so the two commit together.
 */
import {
  jobClaimBatch,
  jobClaimLimitsGet,
  jobClaimLock,
  jobCompleteMany,
  jobFailMany,
  jobGet,
  jobHeartbeat,
  type AttemptRef,
  type JobClaimed,
  type JobFailed,
  type LeaseRenewed,
} from '../store/jobs.ts';
import { jobRunAtDefer } from '../store/job-push.ts';
import { withTransaction, type Pool, type Queryable } from '../store/pool.ts';
import { nextTenantCursor } from '../worker/worker.ts';

export interface ClaimRequest {
  owner: string;
  queues: readonly string[];
  /** Most jobs to return across all queues. */
  limit: number;
  leaseMs: number;
  /** Where each queue's tenant rotation resumes (from the previous claim's answer). */
  cursors?: Record<string, string>;
  /** A timed poll after a claim that found nothing (JobClaimParams.poll). Default false. */
  poll?: boolean;
}

export interface ClaimResult {
  jobs: JobClaimed[];
  cursors: Record<string, string>;
}

/** Claims up to `limit` jobs from the queues in order, each exactly as the TypeScript worker does. */
export async function remoteClaim(pool: Pool, request: ClaimRequest): Promise<ClaimResult> {
  const limits = await jobClaimLimitsGet(pool, request.queues);
  const jobs: JobClaimed[] = [];
  const cursors: Record<string, string> = {};
  for (const queue of request.queues) {
    const limit = request.limit - jobs.length;
    const cursor = request.cursors?.[queue] ?? '';
    // A paused queue: its claim would find nothing (jobClaimBatch), so it is not asked.
    if (limit <= 0 || limits.pausedQueues.has(queue)) {
      cursors[queue] = cursor;
      continue;
    }
    const params = {
      queue,
      limit,
      owner: request.owner,
      leaseMs: request.leaseMs,
      tenantCursor: cursor,
      poll: request.poll,
    };
    const quotas = limits.tenantQuotas;
    const claimed =
      limits.limitedQueues.has(queue) || quotas
        ? await withTransaction(pool, async (tx) => {
            await jobClaimLock(tx, queue, quotas);
            return jobClaimBatch(tx, { ...params, limited: true });
          })
        : await jobClaimBatch(pool, { ...params, limited: false });
    cursors[queue] = nextTenantCursor(cursor, claimed);
    jobs.push(...claimed);
  }
  return { jobs, cursors };
}

/** true when the attempt was still this owner's and is now recorded as succeeded. */
export async function remoteComplete(pool: Pool, owner: string, ref: AttemptRef): Promise<boolean> {
  return withTransaction(pool, async (tx) => {
    const done = await jobCompleteMany(tx, owner, [ref]);
    return done.length > 0;
  });
}

export interface RemoteFailure {
  error: string;
  retryable: boolean;
  outcome?: 'failed' | 'timed_out';
  /** A retry no sooner than this (the target's Retry-After), when the backoff chose sooner. */
  retryAfterMs?: number | null;
}

/** The job's new state (failed awaiting retry, dead, cancelled), or undefined if no longer owned. */
export async function remoteFail(
  pool: Pool,
  owner: string,
  ref: AttemptRef,
  f: RemoteFailure,
): Promise<JobFailed | undefined> {
  return withTransaction(pool, async (tx) => {
    const [failed] = await jobFailMany(tx, owner, [
      { ...ref, outcome: f.outcome ?? 'failed', error: f.error, retryable: f.retryable },
    ]);
    if (failed?.state === 'failed' && f.retryAfterMs != null) {
      await jobRunAtDefer(tx, ref.id, ref.attempt, f.retryAfterMs);
      return (await jobFailedGet(tx, ref.id)) ?? failed;
    }
    return failed;
  });
}

/** Extends the lease and stores progress; undefined when the attempt is no longer owned. */
export function remoteHeartbeat(
  pool: Pool,
  owner: string,
  ref: AttemptRef,
  leaseMs: number,
  progress: unknown,
): Promise<LeaseRenewed | undefined> {
  return jobHeartbeat(pool, owner, ref, leaseMs, progress);
}

async function jobFailedGet(db: Queryable, id: number): Promise<JobFailed | undefined> {
  const row = await jobGet(db, id);
  return row === undefined ? undefined : { id: row.id, state: row.state, runAt: row.runAt };
}
