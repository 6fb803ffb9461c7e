/**
 * One claim of one queue, as the Worker's claim loops and the HTTP pull API make it: under the
 * queue's claim lock, in a transaction, while the queue has a cluster-wide limit or any tenant has a
 * quota (so neither is ever exceeded); otherwise the lock-free fast path.
 */
import { jobClaimBatch, jobClaimLock, type JobClaimed, type JobClaimParams } from '../store/jobs.ts';
import { withTransaction, type Pool } from '../store/pool.ts';

export function queueClaim(
  pool: Pool,
  params: Omit<JobClaimParams, 'limited'>,
  limits: { limited: boolean; tenantQuotas: boolean },
): Promise<JobClaimed[]> {
  if (!limits.limited && !limits.tenantQuotas) return jobClaimBatch(pool, { ...params, limited: false });
  return withTransaction(pool, async (tx) => {
    await jobClaimLock(tx, params.queue, limits.tenantQuotas);
    return jobClaimBatch(tx, { ...params, limited: true });
  });
}
