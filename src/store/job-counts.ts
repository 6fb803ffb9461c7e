/**
 * How many jobs each state holds under a filter, for the jobs page's tabs. Each state is counted by
 * its own statement with its partial index's predicate (the open ones, dead and cancelled: 0003,
 * 0016, 0021), and every count stops at `cap`: succeeded jobs are most of the table, and "10,000+"
 * tells an operator as much as the exact figure would, without reading millions of rows.
 */
import type { JobState } from './jobs.ts';
import type { Queryable } from './pool.ts';

const PREDICATE: Record<JobState, string> = {
  scheduled: `state = 'scheduled'`,
  available: `state = 'available'`,
  running: `state = 'running' AND lease_expires_at IS NOT NULL`,
  succeeded: `state = 'succeeded'`,
  failed: `state = 'failed'`,
  dead: `state = 'dead'`,
  cancelled: `state = 'cancelled'`,
};

/**
 * Succeeded jobs have no index of their own (most rows are succeeded): their count reads the
 * primary key from the newest, as the job list does, rather than the whole table.
 */
const BY_NEWEST = 'ORDER BY id DESC';

export interface JobCountFilter {
  tenantId?: string;
  queue?: string;
  kind?: string;
  /** Counts stop here: a count equal to `cap` means at least that many. */
  cap: number;
}

export async function jobCountByState(db: Queryable, f: JobCountFilter): Promise<Record<JobState, number>> {
  const states = Object.keys(PREDICATE) as JobState[];
  const counts = await Promise.all(
    states.map(async (state) => {
      if (state === 'dead' && f.tenantId === undefined && f.kind === undefined) {
        // The dead letter per queue is kept as a count (job_dead_counts, 0025).
        const { rows } = await db.query<{ n: number }>({
          name: 'jobCountByState:dead:kept',
          text: `SELECT least(coalesce(sum(n), 0), $2)::int AS n FROM job_dead_counts
                  WHERE n > 0 AND ($1::text IS NULL OR queue = $1)`,
          values: [f.queue ?? null, f.cap],
        });
        return [state, rows[0]?.n ?? 0] as const;
      }
      const { rows } = await db.query<{ n: number }>({
        name: `jobCountByState:${state}`,
        text: `SELECT count(*)::int AS n FROM (
                 SELECT 1 FROM jobs WHERE ${PREDICATE[state]}
                    AND ($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR queue = $2)
                    AND ($3::text IS NULL OR kind = $3)
                  ${state === 'succeeded' ? BY_NEWEST : ''}
                  LIMIT $4) capped`,
        values: [f.tenantId ?? null, f.queue ?? null, f.kind ?? null, f.cap],
      });
      return [state, rows[0]?.n ?? 0] as const;
    }),
  );
  return Object.fromEntries(counts) as Record<JobState, number>;
}
