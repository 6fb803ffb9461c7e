/**
 * The per-attempt history (worker, start, end, outcome, error), read through job_attempt_history: the
 * job_attempts rows and, for a job that succeeded, its row (migration 0019). A running job's current
 * attempt is part of it too, read from the job row, unfinished (no end, outcome or error).
 */
import type { AttemptOutcome } from './jobs.ts';
import type { Queryable } from './pool.ts';

export interface JobAttemptRow {
  jobId: number;
  attempt: number;
  worker: string;
  startedAt: Date;
  finishedAt: Date | null;
  /** finished − started, in ms; null while unfinished. */
  durationMs: number | null;
  /** null: the attempt is still running. */
  outcome: AttemptOutcome | null;
  error: string | null;
}

const COLUMNS = `job_id AS "jobId", attempt, worker, started_at AS "startedAt", finished_at AS "finishedAt",
  (extract(epoch FROM finished_at - started_at) * 1000)::float8 AS "durationMs", outcome, error`;

/** Every attempt of these jobs, finished or running, in (job, attempt) order. */
export async function jobAttemptListByJobs(
  db: Queryable,
  jobIds: readonly number[],
): Promise<JobAttemptRow[]> {
  if (jobIds.length === 0) return [];
  const result = await db.query<JobAttemptRow>(
    `SELECT ${COLUMNS} FROM (
       SELECT job_id, attempt, worker, started_at, finished_at, outcome, error
         FROM job_attempt_history WHERE job_id = ANY ($1::bigint[])
       UNION ALL
       SELECT id, attempt, lease_owner, started_at, NULL, NULL, NULL
         FROM jobs WHERE id = ANY ($1::bigint[]) AND state = 'running' AND lease_owner IS NOT NULL
     ) a ORDER BY job_id, attempt`,
    [jobIds],
  );
  return result.rows;
}
