/**
 * Overlap policies and jitter as the leader applies them, with the previous job's state set the way
 * a worker would leave it. Every outcome has its ledger row: a skipped occurrence is recorded too.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../src/clock.ts';
import { Client } from '../../src/index.ts';
import { jitterOffsetMs } from '../../src/schedule/index.ts';
import type { Pool } from '../../src/store/pool.ts';
import { createTestDatabase } from '../support/db.ts';
import { sleep } from './processes.ts';
import { fakeClockScheduler } from './helpers.ts';

// Two minutes back, so every fire time of the test is in the database's past (jobs start available).
const T0 = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 120_000);

interface OccRow {
  name: string;
  state: string;
  reason: string | null;
  job_state: string | null;
  cancel_requested: boolean | null;
}

test('overlap forbid / replace / buffer_one and jitter, with the previous run still running', async () => {
  const db = await createTestDatabase();
  const clock = new FakeClock(T0);
  const client = new Client({ pool: db.pool, clock });
  const target = { queue: 'q', kind: 'k' };
  for (const overlap of ['allow', 'forbid', 'replace', 'buffer_one'] as const) {
    await client.schedules.create({ name: overlap, spec: 'every 10s', overlap, target, anchor: T0 });
  }
  const jittered = await client.schedules.create({
    name: 'jitter',
    spec: 'every 10s',
    jitterMs: 9000,
    target,
    anchor: T0,
  });
  const scheduler = fakeClockScheduler(db.pool, clock);
  const settle = (n: number): Promise<void> => occurrencesAtLeast(db.pool, n);
  try {
    await scheduler.start();
    while (!scheduler.isLeader) await sleep(20);
    clock.advance(10_000);
    await settle(5);
    // A worker picked up every first job and is still running it.
    await db.pool.query(
      "UPDATE jobs SET state = 'running', started_at = now(), lease_owner = 'test', lease_expires_at = now() + interval '1 hour'",
    );
    clock.advance(10_000);
    await settle(10);
    clock.advance(10_000);
    await settle(15);
  } finally {
    await scheduler.stop();
  }
  const { rows } = await db.pool.query<OccRow>(
    `SELECT s.name, o.state, o.reason, j.state AS job_state, CASE WHEN j.id IS NOT NULL THEN j.cancel_requested_at IS NOT NULL END AS cancel_requested
       FROM occurrences o JOIN schedules s ON s.id = o.schedule_id LEFT JOIN jobs j ON j.id = o.job_id
      ORDER BY s.name, o.fire_at`,
  );
  const by = (name: string): [string, string | null, boolean | null][] =>
    rows.filter((r) => r.name === name).map((r) => [r.state, r.job_state, r.cancel_requested]);
  assert.deepEqual(by('allow'), [
    ['enqueued', 'running', false],
    ['enqueued', 'available', false],
    ['enqueued', 'available', false],
  ]);
  assert.deepEqual(by('forbid'), [
    ['enqueued', 'running', false],
    ['skipped', null, null],
    ['skipped', null, null],
  ]);
  // replace: the running one is asked to stop (the worker aborts it); the queued one is cancelled.
  assert.deepEqual(by('replace'), [
    ['enqueued', 'running', true],
    ['enqueued', 'cancelled', true],
    ['enqueued', 'available', false],
  ]);
  // buffer_one: one waits behind the running one, the next is skipped.
  assert.deepEqual(by('buffer_one'), [
    ['enqueued', 'running', false],
    ['enqueued', 'available', false],
    ['skipped', null, null],
  ]);
  assert.match(
    rows.find((r) => r.name === 'forbid' && r.state === 'skipped')?.reason ?? '',
    /overlap policy forbid/,
  );

  const jobs = await db.pool.query<{ run_at: Date; fire_at: Date }>(
    'SELECT j.run_at, o.fire_at FROM jobs j JOIN occurrences o ON o.job_id = j.id WHERE j.schedule_id = $1',
    [jittered.id],
  );
  assert.equal(jobs.rowCount, 3);
  for (const j of jobs.rows) {
    assert.equal(
      j.run_at.getTime() - j.fire_at.getTime(),
      jitterOffsetMs(jittered.id, 9000),
      'run_at = fire + jitter',
    );
  }
});

test('a previous run that failed and awaits its retry still counts as busy', async () => {
  const db = await createTestDatabase();
  const clock = new FakeClock(T0);
  const client = new Client({ pool: db.pool, clock });
  const target = { queue: 'q', kind: 'k' };
  for (const overlap of ['forbid', 'replace', 'buffer_one'] as const) {
    await client.schedules.create({ name: overlap, spec: 'every 10s', overlap, target, anchor: T0 });
  }
  const scheduler = fakeClockScheduler(db.pool, clock);
  const settle = (n: number): Promise<void> => occurrencesAtLeast(db.pool, n);
  try {
    await scheduler.start();
    while (!scheduler.isLeader) await sleep(20);
    clock.advance(10_000);
    await settle(3);
    // Each first run failed its first attempt and waits out its retry backoff, as a worker leaves it.
    await db.pool.query(
      "UPDATE jobs SET state = 'failed', attempt = 1, run_at = now() + interval '1 hour', started_at = now()",
    );
    clock.advance(10_000);
    await settle(6);
  } finally {
    await scheduler.stop();
  }
  const { rows } = await db.pool.query<{
    name: string;
    state: string;
    job_id: number | null;
    job_state: string | null;
    after_job_id: number | null;
  }>(
    `SELECT s.name, o.state, j.id::int AS job_id, j.state AS job_state, j.after_job_id::int AS after_job_id
       FROM occurrences o JOIN schedules s ON s.id = o.schedule_id LEFT JOIN jobs j ON j.id = o.job_id
      ORDER BY s.name, o.fire_at`,
  );
  const by = (name: string): [string, string | null][] =>
    rows.filter((r) => r.name === name).map((r) => [r.state, r.job_state]);
  assert.deepEqual(by('forbid'), [
    ['enqueued', 'failed'],
    ['skipped', null],
  ]);
  // replace: the retry is cancelled (it is not running, so nothing needs to be asked to stop).
  assert.deepEqual(by('replace'), [
    ['enqueued', 'cancelled'],
    ['enqueued', 'available'],
  ]);
  // buffer_one: the new job waits for the failed one to finish its retries.
  const buffer = rows.filter((r) => r.name === 'buffer_one');
  assert.deepEqual(by('buffer_one'), [
    ['enqueued', 'failed'],
    ['enqueued', 'available'],
  ]);
  assert.equal(buffer[1]!.after_job_id, buffer[0]!.job_id, 'buffered behind the job awaiting its retry');
});

/** Waits until the ledger holds at least `n` occurrences (the scheduler writes them asynchronously). */
async function occurrencesAtLeast(pool: Pool, n: number): Promise<void> {
  for (let i = 0; i < 100; i++) {
    const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM occurrences');
    if (rows[0]!.n >= n) return;
    await sleep(50);
  }
  assert.fail(`fewer than ${n} occurrences`);
}
