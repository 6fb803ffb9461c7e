/**
 * Read-only counts for /metrics, computed at scrape time from the database so every API replica
 * reports the same truth and a restarted process loses nothing.
 */
import { jobSliceOldestCreated } from './job-slices.ts';
import { OCCURRENCE_DEFAULT_SLICE, occurrenceSliceOldestFired } from './occurrence-slices.ts';
import type { Queryable } from './pool.ts';

export interface JobCountRow {
  queue: string;
  state: string;
  n: number;
}

/** Jobs not yet finished (and the dead, which wait for a person) per queue and state. */
export async function jobCountOpenByQueueState(db: Queryable): Promise<JobCountRow[]> {
  const { rows } = await db.query<JobCountRow>({
    name: 'jobCountOpenByQueueState',
    // One branch per open state, each the predicate of that state's partial index (0003, 0016), so a
    // scrape reads only the open jobs, never the finished history beside them. The dead letter is
    // history too (kept 30 days): its size per queue is kept as a count (job_ended_counts, 0036).
    text: `SELECT queue, 'available' AS state, count(*)::int AS n FROM jobs WHERE state = 'available' GROUP BY queue
           UNION ALL
           SELECT queue, 'scheduled', count(*)::int FROM jobs WHERE state = 'scheduled' GROUP BY queue
           UNION ALL
           SELECT queue, 'running', count(*)::int FROM jobs
            WHERE state = 'running' AND lease_expires_at IS NOT NULL GROUP BY queue
           UNION ALL
           SELECT queue, 'dead', n::int FROM job_ended_counts WHERE state = 'dead' AND n > 0`,
  });
  return rows;
}

/**
 * How far behind the scheduler is now: the age of the oldest due, unpaused schedule (0 when none is
 * due). One row from the front of schedules_due_idx, never a scan. This, not failure counts, is what
 * should page someone.
 */
export async function scheduleLagSeconds(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ lag: number | null }>({
    name: 'scheduleLagSeconds',
    text: `SELECT extract(epoch FROM now() - next_fire_at)::float8 AS lag FROM schedules
            WHERE NOT paused AND next_fire_at IS NOT NULL
            ORDER BY next_fire_at, id LIMIT 1`,
  });
  return Math.max(0, rows[0]?.lag ?? 0);
}

export interface LeaseStatRow {
  name: string;
  holder: string | null;
  epoch: number;
  held: boolean;
}

export async function leaseList(db: Queryable): Promise<LeaseStatRow[]> {
  const { rows } = await db.query<LeaseStatRow>({
    name: 'leaseList',
    text: `SELECT name, holder, epoch, (holder IS NOT NULL AND expires_at > now()) AS held FROM leases ORDER BY name`,
  });
  return rows;
}

/** The newest applied migration (0 on an empty database), for readiness. */
export async function migrationVersionApplied(db: Queryable): Promise<number> {
  const { rows } = await db.query<{ v: number | null }>('SELECT max(version) AS v FROM tidemark_migrations');
  return rows[0]?.v ?? 0;
}

export interface OldestRow {
  table: string;
  /** How long ago the oldest row left was made, by the database's clock; null when the table is empty. */
  ageSeconds: number | null;
}

/**
 * The age of the oldest row left in each history table, each one row from the front of an index:
 * retention working shows as ages that level off at the retention period.
 */
export async function historyOldestRows(db: Queryable): Promise<OldestRow[]> {
  const { rows } = await db.query<OldestRow>({
    name: 'historyOldestRows',
    // The jobs' and the ledger's oldest from each partition alone: their slices in turn, by
    // jobSliceOldestCreated and occurrenceSliceOldestFired.
    text: `SELECT t.table, extract(epoch FROM now() - t.at)::float8 AS "ageSeconds" FROM (
             SELECT 'jobs' AS table,
                    least((SELECT created_at FROM jobs_open ORDER BY id LIMIT 1),
                          (SELECT created_at FROM jobs_ended ORDER BY id LIMIT 1),
                          (SELECT created_at FROM jobs_done_default ORDER BY id LIMIT 1),
                          $1::timestamptz) AS at
             UNION ALL
             SELECT 'job_attempts', (SELECT started_at FROM job_attempts ORDER BY job_id, attempt LIMIT 1)
             UNION ALL
             SELECT 'occurrences', least((SELECT fire_at FROM ${OCCURRENCE_DEFAULT_SLICE} ORDER BY id LIMIT 1), $2::timestamptz)
             UNION ALL
             SELECT 'workflows', (SELECT created_at FROM workflows ORDER BY created_at, id LIMIT 1)
             UNION ALL
             SELECT 'workflow_nodes', (SELECT w.created_at FROM workflow_nodes n JOIN workflows w ON w.id = n.workflow_id
                                        ORDER BY n.id LIMIT 1)
           ) t`,
    values: [await jobSliceOldestCreated(db), await occurrenceSliceOldestFired(db)],
  });
  return rows;
}
