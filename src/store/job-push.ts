/** The push executor's one statement of its own: honouring a target's Retry-After. */
import type { Queryable } from './pool.ts';

/**
 * Pushes a failed job's next attempt out to at least `delayMs` from now by the database's clock
 * (the target's Retry-After), when the backoff chose sooner. Only for the attempt that just failed,
 * so a job already retried, cancelled or dead is left alone.
 */
export async function jobRunAtDefer(
  db: Queryable,
  id: number,
  attempt: number,
  delayMs: number,
): Promise<void> {
  await db.query(
    `UPDATE jobs SET run_at = greatest(run_at, now() + make_interval(secs => $3 / 1000.0))
      WHERE id = $1 AND attempt = $2 AND state = 'failed'`,
    [id, attempt, delayMs],
  );
}
