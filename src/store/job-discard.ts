/**
 * Discarding dead jobs: a person's decision that a dead job needs neither a re-run nor its record.
 * The job row goes with its attempts (jobs_delete trigger); only jobs still dead are touched, so a
 * job someone re-ran in the meantime stays.
 */
import type { Queryable } from './pool.ts';

/** Deletes those of these jobs that are dead; returns their ids. */
export async function jobDiscardDead(db: Queryable, ids: readonly number[]): Promise<number[]> {
  if (ids.length === 0) return [];
  const { rows } = await db.query<{ id: number }>({
    name: 'jobDiscardDead',
    text: `DELETE FROM jobs WHERE id = ANY ($1::bigint[]) AND state = 'dead' RETURNING id`,
    values: [ids],
  });
  return rows.map((r) => r.id).sort((a, b) => a - b);
}
