/**
 * A slice of succeeded jobs dropped whole once every job in it is past its retention. Deleted row by
 * row, a batch of 1,000 jobs writes ~168 KB of WAL with 18 full-page images, and the claim path's
 * commits wait behind its flush; the slice's jobs go instead with one DROP. A slice is dropped only
 * when no job in it may stay: no retention keeps a succeeded job longer than the one given (the
 * caller checks its policy), the newest job in it finished before the cutoff, the ids drawn have
 * passed it and no open job's id falls in it, so none can finish into it. The jobs' attempts,
 * effects and keys go first, in batches by the slice's ids; then the slice, in one short transaction.
 */
import type { Fence } from './occurrences.ts';
import type { Pool, Queryable } from './pool.ts';
import { FENCE } from './retention.ts';
import {
  partitionChangeFenced,
  partitionsDetachedDrop,
  partitionsLockForDetach,
} from './partition-change.ts';
import {
  JOBS_DONE_LOCK_TRY_MS,
  jobSliceDetach,
  jobSliceListForget,
  type BoundedSlice,
  type JobSlice,
} from './job-slices.ts';

export interface SliceDue {
  /** The ids drawn have passed the slice and no open job's id falls in it: no job can finish into it. */
  closed: boolean;
  /**
   * Seconds until its newest job is past `retentionS` at `now` (null: the database's clock); 0 or
   * less: every job in it is due (an empty slice too).
   */
  dueInS: number;
}

/** How far `slice` is from being dropped whole. */
export async function jobSliceDue(
  db: Queryable,
  slice: BoundedSlice,
  now: Date | null,
  retentionS: number,
): Promise<SliceDue> {
  const { rows } = await db.query<{ closed: boolean; due_in_s: number | null }>(
    `SELECT (SELECT last_value FROM jobs_id_seq) >= $2
            AND NOT EXISTS (SELECT FROM jobs_open WHERE id >= $1 AND id < $2) AS closed,
            -- The state, which every row of the slice has, lets its partial finished_at index answer:
            -- without it the plan reads every row, under the drop's lock of jobs_done (33 ms for
            -- 290,000 rows on a quiet machine; a slice holds up to 10 million).
            extract(epoch FROM (SELECT max(finished_at) FROM "${slice.name}" WHERE state = 'succeeded')
                               + make_interval(secs => $4)
                               - coalesce($3::timestamptz, clock_timestamp()))::float8 AS due_in_s`,
    [slice.from ?? 0, slice.to, now, retentionS],
  );
  const row = rows[0];
  return { closed: row?.closed ?? false, dueInS: row?.due_in_s ?? 0 };
}

export interface SliceChildrenResult {
  fenced: boolean;
  /** Jobs read from the slice: at most `limit`; fewer means the slice's end. */
  jobs: number;
  /** Jobs read from the slice by every batch so far, this one's included (job_slice_walks). */
  walked: number;
  attempts: number;
  effects: number;
  /** The id the batch started after: `afterId`, or further where an earlier batch got to. */
  startId: number;
  /** The last id read: the next batch starts after it. */
  lastId: number;
}

/**
 * Deletes the attempts, effects and keys of the next `limit` jobs of `slice` after `afterId`, or
 * after the last id an earlier batch did (job_slice_walks) when that is further, as the jobs_delete
 * trigger would for their rows; fenced by the maintenance lease. A role that takes over from one
 * stopped mid-slice goes on where it stopped, and no job is counted twice.
 */
export async function jobSliceChildrenPrune(
  db: Queryable,
  fence: Fence,
  slice: JobSlice,
  afterId: number,
  limit: number,
): Promise<SliceChildrenResult> {
  const { rows } = await db.query<{
    fenced: boolean;
    jobs: number;
    walked: number;
    attempts: number;
    effects: number;
    start_id: number;
    last_id: number;
  }>(
    // The ids come from the slice's primary key alone. Each child table is read over the ids' range
    // on its job_id index, kept to the batch's jobs by a hash of their ids (IS TRUE keeps the IN a
    // filter): probed by id, each job cost three index descents where about one in ten has a child.
    `WITH ${FENCE}, done AS (
       SELECT after_id, jobs FROM job_slice_walks WHERE name = $6
     ), start AS (
       SELECT greatest($4::bigint, (SELECT after_id FROM done)) AS id
     ), ids AS MATERIALIZED (
       SELECT id FROM "${slice.name}"
        WHERE id > (SELECT id FROM start) AND EXISTS (SELECT 1 FROM fence) ORDER BY id LIMIT $5
     ), bound AS (
       SELECT max(id) AS id, count(*) AS jobs FROM ids
     ), att AS (
       DELETE FROM job_attempts a
        WHERE a.job_id > (SELECT id FROM start) AND a.job_id <= (SELECT id FROM bound)
          AND (a.job_id IN (SELECT id FROM ids)) IS TRUE
       RETURNING 1
     ), eff AS (
       DELETE FROM job_effects e
        WHERE e.job_id > (SELECT id FROM start) AND e.job_id <= (SELECT id FROM bound)
          AND (e.job_id IN (SELECT id FROM ids)) IS TRUE
       RETURNING 1
     ), keys AS (
       DELETE FROM job_keys k
        WHERE k.job_id > (SELECT id FROM start) AND k.job_id <= (SELECT id FROM bound)
          AND (k.job_id IN (SELECT id FROM ids)) IS TRUE
     ), walk AS (
       INSERT INTO job_slice_walks (name, after_id, jobs)
       SELECT $6, id, jobs FROM bound WHERE id IS NOT NULL
       ON CONFLICT (name) DO UPDATE SET after_id = excluded.after_id, jobs = job_slice_walks.jobs + excluded.jobs
       RETURNING jobs
     )
     -- Each delete runs whether or not the result reads it; the keys are not counted.
     SELECT EXISTS (SELECT 1 FROM fence) AS fenced,
            (SELECT jobs FROM bound)::int AS jobs,
            coalesce((SELECT jobs FROM walk), (SELECT jobs FROM done), 0)::int AS walked,
            (SELECT count(*) FROM att)::int AS attempts,
            (SELECT count(*) FROM eff)::int AS effects,
            (SELECT id FROM start) AS start_id,
            coalesce((SELECT id FROM bound), (SELECT id FROM start)) AS last_id`,
    [fence.lease, fence.holder, fence.epoch, afterId, limit, slice.name],
  );
  const row = rows[0];
  if (row === undefined) throw new Error('jobSliceChildrenPrune returned no row');
  return {
    fenced: row.fenced,
    jobs: row.jobs,
    walked: row.walked,
    attempts: row.attempts,
    effects: row.effects,
    startId: row.start_id,
    lastId: row.last_id,
  };
}

export type SliceDropDue = 'dropped' | 'kept' | 'fenced' | 'busy';

/**
 * Detaches `slice` if it is still due under a lock of jobs_done, which no job can finish into while
 * it is held, and drops it once that lock is let go; `kept` when it is no longer due. Each try at
 * the lock waits at most `lockTimeoutMs` (completions queue behind the wait), and once the tries
 * are spent (partitionsLockForDetach) it reports `busy`.
 */
export async function jobSliceDropDue(
  pool: Pool,
  fence: Fence,
  slice: BoundedSlice,
  now: Date | null,
  retentionS: number,
  lockTimeoutMs = JOBS_DONE_LOCK_TRY_MS,
): Promise<SliceDropDue> {
  const r = await partitionChangeFenced(pool, fence, lockTimeoutMs, async (client) => {
    await partitionsLockForDetach(client, 'jobs_done', [slice.name], lockTimeoutMs);
    const due = await jobSliceDue(client, slice, now, retentionS);
    if (!due.closed || due.dueInS > 0) return 'kept' as const;
    await jobSliceDetach(client, slice);
    return 'dropped' as const;
  });
  if (r === 'dropped') {
    jobSliceListForget(pool);
    await partitionsDetachedDrop(pool);
  }
  return r;
}
