/**
 * The kept sizes of jobs_ended's two states per queue: job_ended_counts (migration 0035), read by
 * the jobs page's counts and the overview instead of counting a month of dead and cancelled history.
 * A count is exact at every commit because every statement that moves jobs into or out of `dead` or
 * `cancelled` changes it in the same statement (this CTE), the jobs table's triggers count the rows
 * deleted or inserted in either state, and a truncate empties it. Claims and successes never touch it.
 *
 * A module of its own, not jobs.ts: workflow-nodes.ts cancels jobs too, and jobs.ts imports the
 * workflow release, which imports workflow-nodes.ts.
 */

/**
 * A data-modifying CTE named `ended_count` (it runs whether or not anything reads it) that adds
 * `sign` × the rows of `rows` in `dead` or `cancelled` and matching `where` to their counts by
 * queue and state: `rows` must have the columns `queue` and `state`. Grouped by (queue, state) in
 * that order, so two statements lock the count rows they share in one order. The rows stay locked
 * until commit, so a transaction that locks a workflow after them (jobFailMany's) can still deadlock
 * with one that locked that workflow first (a cancel or a re-run of one of its nodes' jobs).
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
