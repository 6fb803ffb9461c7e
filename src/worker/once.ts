/**
 * Dedupe-first idempotency for handlers: record the effect's key, then do the effect, in one
 * transaction. The guarantee depends on where the effect lives (docs/delivery.md):
 *  - in this PostgreSQL, done through `tx`: key and effect commit together: effectively once;
 *  - elsewhere: the key commits only after `fn` returns, so a crash before that re-runs the effect
 *    (at least once, never zero times); a crash after it does not (the key is there).
 */
import { jobEffectRecord } from '../store/job-effects.ts';
import { withTransaction, type Pool, type PoolClient } from '../store/pool.ts';

export type OnceResult<T> = { ran: true; value: T } | { ran: false };

export async function effectOnce<T>(
  pool: Pool,
  key: string,
  owner: { jobId: number; attempt: number },
  fn: (tx: PoolClient) => Promise<T>,
): Promise<OnceResult<T>> {
  return withTransaction(
    pool,
    async (tx) => {
      const first = await jobEffectRecord(tx, key, owner.jobId, owner.attempt);
      if (!first) return { ran: false };
      return { ran: true, value: await fn(tx) };
    },
    { runOnce: true },
  );
}

/** The key `ctx.once(name)` records: unique per queue, job key and effect name. */
export function effectKey(queue: string, idempotencyKey: string, name: string): string {
  // JSON, not a separator character: unambiguous whatever the parts contain (and text can not hold NUL).
  return JSON.stringify([queue, idempotencyKey, name]);
}
