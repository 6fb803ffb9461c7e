/**
 * Row factories for retention tests: history in any state, at any age, written straight to the
 * tables; and a lock held by another session while a test runs.
 */
import type { Pool, Queryable } from '../../src/store/pool.ts';

export const DAY_MS = 86_400_000;

export interface JobSpec {
  state: 'succeeded' | 'cancelled' | 'dead' | 'running' | 'available' | 'failed' | 'scheduled';
  /** When it finished (finished states), or was created (the others). */
  at: Date;
  queue?: string;
  tenant?: string;
  /** job_attempts rows to give it (failed attempts before the last). */
  attempts?: number;
  /** job_effects rows (ctx.once keys) it recorded. */
  effects?: number;
}

/** Inserts one job per spec, in order; returns their ids. */
export async function insertJobs(db: Queryable, specs: JobSpec[]): Promise<number[]> {
  const ids: number[] = [];
  for (const s of specs) {
    const finished = ['succeeded', 'cancelled', 'dead'].includes(s.state);
    const created = new Date(s.at.getTime() - (finished ? 60_000 : 0));
    const { rows } = await db.query<{ id: number }>(
      `INSERT INTO jobs (queue, kind, tenant_id, state, idempotency_key, key_generated, created_at, run_at,
                         started_at, finished_at, attempt, lease_owner, lease_expires_at)
       VALUES ($1, 'k', $2, $3, 'job-' || gen_random_uuid(), true, $4::timestamptz, $4::timestamptz,
               CASE WHEN $5 THEN $4::timestamptz END, CASE WHEN $5 THEN $6::timestamptz END, 1,
               CASE WHEN $3 IN ('succeeded', 'running') THEN 'w1' END,
               CASE WHEN $3 = 'running' THEN $6::timestamptz + interval '1 day' END)
       RETURNING id`,
      [s.queue ?? 'q', s.tenant ?? 'default', s.state, created, finished, s.at],
    );
    const id = rows[0]?.id;
    if (id === undefined) throw new Error('insert returned no id');
    ids.push(id);
    for (let a = 1; a <= (s.attempts ?? 0); a++) {
      await db.query(
        `INSERT INTO job_attempts (job_id, attempt, worker, started_at, finished_at, outcome, error)
         VALUES ($1, $2, 'w1', $3, $3, 'failed', 'boom')`,
        [id, a, created],
      );
    }
    for (let e = 1; e <= (s.effects ?? 0); e++) {
      await db.query(`INSERT INTO job_effects (key, job_id, attempt) VALUES ($1, $2, 1)`, [
        `effect-${id}-${e}`,
        id,
      ]);
    }
  }
  return ids;
}

export async function existingJobs(db: Queryable, ids: number[]): Promise<number[]> {
  const { rows } = await db.query<{ id: number }>('SELECT id FROM jobs WHERE id = ANY ($1) ORDER BY id', [
    ids,
  ]);
  return rows.map((r) => r.id);
}

export async function insertSchedule(
  db: Queryable,
  name: string,
  tenant = 'default',
  queue = 'q',
): Promise<string> {
  await db.query(`INSERT INTO tenants (id, name) VALUES ($1, $1) ON CONFLICT DO NOTHING`, [tenant]);
  const { rows } = await db.query<{ id: string }>(
    `INSERT INTO schedules (tenant_id, name, spec, queue, kind) VALUES ($1, $2, '* * * * *', $3, 'k') RETURNING id`,
    [tenant, name, queue],
  );
  const id = rows[0]?.id;
  if (id === undefined) throw new Error('insert returned no id');
  return id;
}

export interface OccurrenceSpec {
  fireAt: Date;
  lagMs?: number;
  state?: 'enqueued' | 'skipped' | 'missed';
  source?: 'schedule' | 'trigger';
}

export async function insertOccurrences(
  db: Queryable,
  scheduleId: string,
  specs: OccurrenceSpec[],
): Promise<void> {
  for (const o of specs) {
    await db.query(
      `INSERT INTO occurrences (schedule_id, fire_at, state, materialised_at, source)
       VALUES ($1, $2, $3, $2::timestamptz + $4 * interval '1 millisecond', $5)`,
      [scheduleId, o.fireAt, o.state ?? 'enqueued', o.lagMs ?? 0, o.source ?? 'schedule'],
    );
  }
}

/** Runs `during` while another session holds `lock`, taken in its own transaction. */
export async function whileHeld(pool: Pool, lock: string, during: () => Promise<void>): Promise<void> {
  const holder = await pool.connect();
  try {
    await holder.query('BEGIN');
    await holder.query(lock);
    await during();
  } finally {
    await holder.query('COMMIT');
    holder.release();
  }
}

export async function count(db: Queryable, sql: string, values: unknown[] = []): Promise<number> {
  const { rows } = await db.query<{ n: number }>(`SELECT (${sql})::int AS n`, values);
  return rows[0]?.n ?? 0;
}

/** Statements as onBatch reports them: the time from each one's end to the next one's start. */
export function restsBetween(statements: readonly { startedMs: number; endedMs: number }[]): number[] {
  return statements.slice(1).map((s, i) => s.startedMs - (statements[i]?.endedMs ?? s.startedMs));
}
