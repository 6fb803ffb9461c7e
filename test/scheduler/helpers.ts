/** Shared by the scheduler tests: schedule factories and ledger checks asserted on the database. */
import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { Clock } from '../../src/clock.ts';
import { Scheduler, type SchedulerOptions } from '../../src/scheduler/scheduler.ts';
import type { Pool } from '../../src/store/pool.ts';

/** Inserts `count` schedules straight into the table (as many clients would have), due at `nextFireAt`. */
export async function insertSchedules(
  pool: Pool,
  count: number,
  options: { spec: string; nextFireAt: Date; prefix?: string; misfirePolicy?: string; anchorAt?: Date },
): Promise<string[]> {
  const { rows } = await pool.query<{ id: string }>(
    `INSERT INTO schedules (tenant_id, name, spec, queue, kind, next_fire_at, misfire_policy, anchor_at)
     SELECT 'default', $1 || g, $2, 'q', 'k', $3, $5, $6 FROM generate_series(1, $4) g
     RETURNING id`,
    [
      options.prefix ?? 's',
      options.spec,
      options.nextFireAt,
      count,
      options.misfirePolicy ?? 'latest',
      options.anchorAt ?? new Date(0),
    ],
  );
  return rows.map((r) => r.id);
}

export interface LedgerCheck {
  occurrences: number;
  enqueued: number;
  jobs: number;
}

/**
 * Nothing duplicated: one job per enqueued occurrence and per key, every enqueued occurrence links a
 * job of its schedule. Nothing lost (when `stepMs` is given, for fixed-interval schedules): each
 * schedule's occurrences are exactly its fire times between the first and the last one (no gaps).
 */
export async function assertLedgerConsistent(pool: Pool, stepMs: number | null): Promise<LedgerCheck> {
  const dupKeys = await pool.query(
    `SELECT idempotency_key FROM jobs GROUP BY idempotency_key HAVING count(*) > 1`,
  );
  assert.equal(dupKeys.rowCount, 0, 'duplicate job keys');
  const dupOcc = await pool.query(
    `SELECT schedule_id, fire_at FROM occurrences WHERE source = 'schedule' GROUP BY 1, 2 HAVING count(*) > 1`,
  );
  assert.equal(dupOcc.rowCount, 0, 'duplicate occurrences');
  const unlinked = await pool.query(
    `SELECT o.id FROM occurrences o LEFT JOIN jobs j ON j.id = o.job_id
      WHERE o.state = 'enqueued' AND (j.id IS NULL OR j.schedule_id <> o.schedule_id
            OR j.idempotency_key <> 'occurrence:' || o.schedule_id || ':' || to_char(o.fire_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'))
        AND o.source = 'schedule'`,
  );
  assert.equal(unlinked.rowCount, 0, 'enqueued occurrences without their job');
  const orphanJobs = await pool.query(
    `SELECT j.id FROM jobs j LEFT JOIN occurrences o ON o.job_id = j.id WHERE j.schedule_id IS NOT NULL AND o.id IS NULL`,
  );
  assert.equal(orphanJobs.rowCount, 0, 'scheduled jobs without an occurrence');
  const gaps = await pool.query<{ schedule_id: string; n: number; span: number }>(
    `SELECT schedule_id, count(*)::int AS n,
            (extract(epoch FROM max(fire_at) - min(fire_at)) * 1000)::float8 AS span
       FROM occurrences WHERE source = 'schedule' GROUP BY schedule_id`,
  );
  if (stepMs !== null) {
    for (const g of gaps.rows) {
      assert.equal(g.n, Math.round(g.span / stepMs) + 1, `schedule ${g.schedule_id}: a fire time is missing`);
    }
  }
  const totals = await pool.query<LedgerCheck>(
    `SELECT (SELECT count(*) FROM occurrences)::int AS occurrences,
            (SELECT count(*) FROM occurrences WHERE state = 'enqueued')::int AS enqueued,
            (SELECT count(*) FROM jobs)::int AS jobs`,
  );
  return totals.rows[0] as LedgerCheck;
}

/**
 * An in-process scheduler on a fake clock: host time source so the clock drives it, fast ticks, and a
 * lease long enough never to lapse while the test holds the clock still.
 */
export function fakeClockScheduler(
  pool: Pool,
  clock: Clock,
  options: Partial<SchedulerOptions> = {},
): Scheduler {
  return new Scheduler({
    pool,
    log: pino({ level: 'silent' }),
    clock,
    timeSource: 'host',
    tickMs: 20,
    renewEveryMs: 100,
    leaseTtlMs: 60_000,
    ...options,
  });
}
