/** What the overlap policy needs to know about a schedule's earlier jobs. */
import type { Queryable } from './pool.ts';

export interface ScheduledJobActivity {
  running: number;
  /** Enqueued but not started ('scheduled' or 'available'). */
  waiting: number;
}

/** Per schedule id, its jobs still queued or running; uses jobs_schedule_active_idx (0002). */
export async function scheduledJobActivity(
  db: Queryable,
  scheduleIds: string[],
): Promise<Map<string, ScheduledJobActivity>> {
  const { rows } = await db.query<{ schedule_id: string; running: number; waiting: number }>({
    name: 'scheduledJobActivity',
    text: `SELECT schedule_id,
                  (count(*) FILTER (WHERE state = 'running'))::int AS running,
                  (count(*) FILTER (WHERE state IN ('scheduled', 'available')))::int AS waiting
             FROM jobs
            WHERE schedule_id = ANY($1::uuid[]) AND state IN ('scheduled', 'available', 'running')
            GROUP BY schedule_id`,
    values: [scheduleIds],
  });
  return new Map(rows.map((r) => [r.schedule_id, { running: r.running, waiting: r.waiting }]));
}
