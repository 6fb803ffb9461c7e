/** Named statements on `job_effects`: the keys of effects that already happened (dedupe-first). */
import type { Queryable } from './pool.ts';

/**
 * Records an effect's key; false when it was already recorded. Run it first in the transaction that
 * brackets the effect: a concurrent duplicate blocks on the unique key until this transaction ends,
 * then sees the key (committed) or inserts it (rolled back), so two attempts never both proceed.
 */
export async function jobEffectRecord(
  db: Queryable,
  key: string,
  jobId: number,
  attempt: number,
): Promise<boolean> {
  const result = await db.query(
    `INSERT INTO job_effects (key, job_id, attempt) VALUES ($1, $2, $3) ON CONFLICT (key) DO NOTHING`,
    [key, jobId, attempt],
  );
  return result.rowCount === 1;
}
