/**
 * Read-only counts for /metrics, computed at scrape time from the database so every API replica
 * reports the same truth and a restarted process loses nothing.
 */
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
    text: `SELECT queue, state, count(*)::int AS n FROM jobs
            WHERE state IN ('scheduled', 'available', 'running', 'dead')
            GROUP BY queue, state`,
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
