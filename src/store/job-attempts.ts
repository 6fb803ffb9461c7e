/**
 * The per-attempt history (worker, start, end, outcome, error), read through job_attempt_history: the
 * job_attempts rows and, for a job that succeeded, its row (migration 0019).
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
  outcome: AttemptOutcome | null;
  error: string | null;
}

const COLUMNS = `job_id AS "jobId", attempt, worker, started_at AS "startedAt", finished_at AS "finishedAt",
  (extract(epoch FROM finished_at - started_at) * 1000)::float8 AS "durationMs", outcome, error`;

/** Every recorded attempt of these jobs, in (job, attempt) order. */
export async function jobAttemptListByJobs(
  db: Queryable,
  jobIds: readonly number[],
): Promise<JobAttemptRow[]> {
  if (jobIds.length === 0) return [];
  const result = await db.query<JobAttemptRow>(
    `SELECT ${COLUMNS} FROM job_attempt_history WHERE job_id = ANY ($1::bigint[]) ORDER BY job_id, attempt`,
    [jobIds],
  );
  return result.rows;
}
