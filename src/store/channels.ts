/**
 * The NOTIFY channels the schema's triggers and statements send on, and the statements that listen
 * to them. Payloads: a queue with new work (jobs), a job id to cancel, a lease name released, a
 * schedule id edited, a queue paused, resumed or changed.
 */
import type { Queryable } from './pool.ts';

export const Channel = {
  jobs: 'tidemark_jobs',
  cancel: 'tidemark_cancel',
  lease: 'tidemark_lease',
  schedules: 'tidemark_schedules',
  queues: 'tidemark_queues',
} as const;
export type Channel = (typeof Channel)[keyof typeof Channel];

export async function listen(db: Queryable, channels: Channel[]): Promise<void> {
  // Channel names are the constants above, never input, so they are written into the statement.
  await db.query(channels.map((c) => `LISTEN ${c};`).join(' '));
}

export async function unlistenAll(db: Queryable): Promise<void> {
  await db.query('UNLISTEN *');
}

/**
 * Wakes the workers of a queue (payload `<queue>` or `<queue> <job id>`, as the insert trigger
 * sends): for a caller that wrote its jobs in a transaction of its own and sends the wake-up after
 * that committed.
 */
export async function jobsWake(db: Queryable, payload: string): Promise<void> {
  await db.query({
    name: 'tidemark_jobs_wake',
    text: `SELECT pg_notify('${Channel.jobs}', $1)`,
    values: [payload],
  });
}

/** Tells every worker that a queue was paused, resumed or changed (payload: the queue), at commit. */
export async function queueChangedNotify(db: Queryable, queue: string): Promise<void> {
  await db.query(`SELECT pg_notify('${Channel.queues}', $1)`, [queue]);
}
