/** What the overlap policy needs to know about a schedule's earlier jobs. */
import type { Queryable } from './pool.ts';

export interface ScheduledJobActivity {
  running: number;
  /**
   * Failed an attempt and waiting out the retry backoff ('failed'): a run that has begun and not
   * finished, so as busy as a running one.
   */
  retrying: number;
  /** Enqueued but not started ('scheduled' or 'available'). */
  waiting: number;
}

/** Per schedule id, its jobs still queued, running or awaiting a retry; uses jobs_schedule_active_idx (0010). */
export async function scheduledJobActivity(
  db: Queryable,
  scheduleIds: string[],
): Promise<Map<string, ScheduledJobActivity>> {
  const { rows } = await db.query<{
    schedule_id: string;
    running: number;
    retrying: number;
    waiting: number;
  }>({
    name: 'scheduledJobActivity',
    text: `SELECT schedule_id,
                  (count(*) FILTER (WHERE state = 'running'))::int AS running,
                  (count(*) FILTER (WHERE state = 'failed'))::int AS retrying,
                  (count(*) FILTER (WHERE state IN ('scheduled', 'available')))::int AS waiting
             FROM jobs
            WHERE schedule_id = ANY($1::uuid[]) AND state IN ('scheduled', 'available', 'running', 'failed')
            GROUP BY schedule_id`,
    values: [scheduleIds],
  });
  return new Map(
    rows.map((r) => [r.schedule_id, { running: r.running, retrying: r.retrying, waiting: r.waiting }]),
  );
}
