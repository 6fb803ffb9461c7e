/**
 * Schedule lag read from the ledger: how late each scheduled occurrence was materialised
 * (materialised_at − fire_at). /metrics feeds these into a histogram as they appear, so every API
 * replica reports what the scheduler really did, whichever process did it.
 */
import type { Queryable } from './pool.ts';

export interface OccurrenceLagRow {
  id: number;
  lagSeconds: number;
}

/** The newest occurrence id (0 for an empty ledger): where a new reader starts. */
export async function occurrenceLastId(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ id: number | null }>({
    name: 'occurrenceLastId',
    text: 'SELECT max(id) AS id FROM occurrences',
  });
  return rows[0]?.id ?? 0;
}

/**
 * Scheduled occurrences after `afterId`, oldest first, at most `limit`: a primary-key range read.
 * Trigger-now occurrences are left out (their fire time is the click, so they are never late), and
 * backfilled ones (their lateness is the age of the range asked for, not the scheduler's delay).
 */
export async function occurrenceLagSince(
  db: Queryable,
  afterId: number,
  limit: number,
): Promise<OccurrenceLagRow[]> {
  const { rows } = await db.query<OccurrenceLagRow>({
    name: 'occurrenceLagSince',
    text: `SELECT id, greatest(0, extract(epoch FROM materialised_at - fire_at))::float8 AS "lagSeconds"
             FROM occurrences
            WHERE id > $1 AND source = 'schedule' AND NOT backfill AND state = 'enqueued'
            ORDER BY id LIMIT $2`,
    values: [afterId, limit],
  });
  return rows;
}
