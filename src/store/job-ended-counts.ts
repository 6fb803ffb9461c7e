/**
 * The kept sizes of jobs_ended's two states per queue: job_ended_counts (migration 0036), read by
 * the jobs page's counts and the overview instead of counting a month of dead and cancelled history.
 * A count is exact at every commit because every transaction that moves jobs into or out of `dead`
 * or `cancelled` changes it too (in the same statement, jobEndedCountsAdd, or after its workflow
 * part, jobEndedCountsAddRows), the jobs table's triggers count the rows deleted or inserted in
 * either state, and a truncate empties it. Claims and successes never touch it.
 *
 * A module of its own, not jobs.ts: workflow-nodes.ts cancels jobs too, and jobs.ts imports the
 * workflow release, which imports workflow-nodes.ts.
 */
import type { Queryable } from './pool.ts';

/**
 * A data-modifying CTE named `ended_count` (it runs whether or not anything reads it) that adds
 * `sign` × the rows of `rows` in `dead` or `cancelled` and matching `where` to their counts by
 * queue and state: `rows` must have the columns `queue` and `state`. Grouped by (queue, state) in
 * that order, so two statements lock the count rows they share in one order. The rows stay locked
 * until commit, so a transaction that goes on to lock a workflow counts with jobEndedCountsAddRows
 * after it instead.
 */
export function jobEndedCountsAdd(rows: string, sign: 1 | -1, where = 'true'): string {
  return `ended_count AS (
        INSERT INTO job_ended_counts AS c (queue, state, n)
        SELECT queue, state, ${sign === 1 ? '' : '-'}count(*) FROM ${rows}
         WHERE state IN ('dead', 'cancelled') AND (${where})
         GROUP BY queue, state ORDER BY queue, state
        ON CONFLICT (queue, state) DO UPDATE SET n = c.n + EXCLUDED.n
      )`;
}

/**
 * jobEndedCountsAdd for rows an earlier statement moved, as a statement of its own: for the
 * transactions that lock workflows after moving jobs (a failure, the reaper), run after their
 * workflow part. Their count rows are then locked after the workflow rows, as in a cancel or a
 * re-run of a node's job, which lock the workflow first: in the other order the two deadlocked.
 */
export async function jobEndedCountsAddRows(
  db: Queryable,
  rows: readonly { queue: string; state: string }[],
): Promise<void> {
  const ended = rows.filter((r) => r.state === 'dead' || r.state === 'cancelled');
  if (ended.length === 0) return;
  await db.query(
    `INSERT INTO job_ended_counts AS c (queue, state, n)
     SELECT queue, state, count(*) FROM unnest($1::text[], $2::text[]) AS r(queue, state)
      GROUP BY queue, state ORDER BY queue, state
     ON CONFLICT (queue, state) DO UPDATE SET n = c.n + EXCLUDED.n`,
    [ended.map((r) => r.queue), ended.map((r) => r.state)],
  );
}
