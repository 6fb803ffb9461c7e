/**
 * Overlap policy buffer_one end to end: the job buffered behind a still-running run of the same
 * schedule is not claimed until that run has finished (after_job_id, 0008), while other jobs of the
 * queue are claimed meanwhile. Handler start and end times are written to a table by the database's
 * clock, so "no overlap" is asserted on what the database recorded.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../src/clock.ts';
import { Client } from '../../src/index.ts';
import { jobClaimBatch } from '../../src/store/jobs.ts';
import type { Pool } from '../../src/store/pool.ts';
import { createTestDatabase } from '../support/db.ts';
import { deferred, startWorker, waitUntil } from '../worker/support.ts';
import { sleep } from './processes.ts';
import { fakeClockScheduler } from './helpers.ts';

// Two minutes back, so every fire time of the test is in the database's past (jobs start available).
const T0 = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 120_000);

interface RunRow {
  job_id: number;
  kind: string;
  started_at: Date;
  ended_at: Date | null;
}

async function runs(pool: Pool): Promise<RunRow[]> {
  const { rows } = await pool.query<RunRow>(
    'SELECT job_id::int AS job_id, kind, started_at, ended_at FROM runs ORDER BY started_at',
  );
  return rows;
}

test('buffer_one: the buffered job waits for the running one, other jobs of the queue do not', async () => {
  const db = await createTestDatabase();
  await db.pool.query(
    'CREATE TABLE runs (job_id bigint PRIMARY KEY, kind text NOT NULL, started_at timestamptz NOT NULL, ended_at timestamptz)',
  );
  const clock = new FakeClock(T0);
  const client = new Client({ pool: db.pool, clock });
  const schedule = await client.schedules.create({
    name: 'nightly',
    spec: 'every 10s',
    overlap: 'buffer_one',
    target: { queue: 'q', kind: 'slow' },
    anchor: T0,
  });
  const release = deferred();
  const record = async (jobId: number, kind: string, wait: Promise<void>): Promise<void> => {
    await db.pool.query('INSERT INTO runs (job_id, kind, started_at) VALUES ($1, $2, clock_timestamp())', [
      jobId,
      kind,
    ]);
    await wait;
    await db.pool.query('UPDATE runs SET ended_at = clock_timestamp() WHERE job_id = $1', [jobId]);
  };
  let slowRuns = 0;
  const worker = await startWorker(db, {
    // The first run holds until the test releases it; later runs finish at once.
    slow: (ctx) => record(ctx.jobId, 'slow', slowRuns++ === 0 ? release.promise : Promise.resolve()),
    fast: (ctx) => record(ctx.jobId, 'fast', Promise.resolve()),
  });
  const scheduler = fakeClockScheduler(db.pool, clock);
  const scheduleJobs = async (
    n: number,
  ): Promise<{ id: number; after_job_id: number | null }[] | undefined> => {
    const { rows } = await db.pool.query<{ id: number; after_job_id: number | null }>(
      'SELECT id::int AS id, after_job_id::int AS after_job_id FROM jobs WHERE schedule_id = $1 ORDER BY id',
      [schedule.id],
    );
    return rows.length >= n ? rows : undefined;
  };
  let first: { id: number; after_job_id: number | null } | undefined;
  let buffered: { id: number; after_job_id: number | null } | undefined;
  try {
    await scheduler.start();
    while (!scheduler.isLeader) await sleep(20);
    clock.advance(10_000);
    [first] = await waitUntil('the first scheduled job', () => scheduleJobs(1));
    assert.equal(first!.after_job_id, null, 'a job enqueued with nothing running waits for nothing');
    await waitUntil('the first run to start', async () => (await runs(db.pool)).length === 1);

    // The next occurrence fires while the first run is still going: buffered behind it.
    clock.advance(10_000);
    [, buffered] = await waitUntil('the buffered job', () => scheduleJobs(2));
    assert.equal(buffered!.after_job_id, first!.id, 'buffered behind the running job');
    // An ordinary job enqueued after it, so it is behind the buffered job in claim order.
    const other = await client.jobs.enqueue({ queue: 'q', kind: 'fast' });
    await waitUntil('the ordinary job to finish', async () =>
      (await runs(db.pool)).some((r) => r.job_id === Number(other.id) && r.ended_at !== null),
    );
    // Many poll intervals (50 ms) and the wake-up from the ordinary job's insert have passed.
    await sleep(500);
    const { rows: waiting } = await db.pool.query<{ state: string }>('SELECT state FROM jobs WHERE id = $1', [
      buffered!.id,
    ]);
    assert.equal(waiting[0]!.state, 'available', 'not claimed while its predecessor runs');
    assert.equal((await runs(db.pool)).filter((r) => r.kind === 'slow').length, 1);

    release.resolve();
    await waitUntil('the buffered job to finish', async () =>
      (await runs(db.pool)).some((r) => r.job_id === buffered!.id && r.ended_at !== null),
    );
  } finally {
    release.resolve();
    await scheduler.stop();
    // Before the file's pool ends, so no completion is left to write to a closed pool.
    await worker.stop();
  }
  const all = await runs(db.pool);
  const firstRun = all.find((r) => r.job_id === first!.id)!;
  const bufferedRun = all.find((r) => r.job_id === buffered!.id)!;
  const otherRun = all.find((r) => r.kind === 'fast')!;
  assert.ok(bufferedRun.started_at >= firstRun.ended_at!, 'the buffered run starts after the first ended');
  assert.ok(otherRun.ended_at! <= firstRun.ended_at!, 'the ordinary job ran while the first was running');
  const { rows: states } = await db.pool.query<{ state: string }>(
    'SELECT state FROM jobs WHERE schedule_id = $1 ORDER BY id',
    [schedule.id],
  );
  assert.deepEqual(
    states.map((s) => s.state),
    ['succeeded', 'succeeded'],
  );
});

test('a buffered job is claimable only once its predecessor is finished or gone', async () => {
  const db = await createTestDatabase();
  const insert = async (state: string, afterJobId: number | null, priority = 0): Promise<number> => {
    const { rows } = await db.pool.query<{ id: number }>(
      `INSERT INTO jobs (queue, kind, idempotency_key, state, run_at, priority, after_job_id, finished_at,
                         lease_owner, lease_expires_at)
       VALUES ('b', 'k', gen_random_uuid()::text, $1, now() - interval '1 minute', $2, $3,
               CASE WHEN $1 IN ('succeeded', 'dead', 'cancelled') THEN now() END,
               CASE WHEN $1 = 'running' THEN 'test' END, CASE WHEN $1 = 'running' THEN now() + interval '1 hour' END)
       RETURNING id::int AS id`,
      [state, priority, afterJobId],
    );
    return rows[0]!.id;
  };
  const claim = async (limit: number): Promise<number[]> =>
    (
      await jobClaimBatch(db.pool, {
        queue: 'b',
        limit,
        owner: 'test',
        leaseMs: 60_000,
        tenantCursor: '',
        limited: false,
      })
    ).map((j) => Number(j.id));

  // Predecessors in every state; the buffered jobs get a higher priority so they head the line.
  const pred: Record<string, number> = {};
  for (const state of ['scheduled', 'failed', 'running', 'succeeded', 'dead', 'cancelled']) {
    pred[state] = await insert(state, null);
  }
  // A predecessor awaiting its retry backoff ('failed') and one promoted back to 'available' block.
  const predAvailable = await insert('available', null, -10);
  const blocked = [
    await insert('available', pred.scheduled!, 10),
    await insert('available', pred.failed!, 10),
    await insert('available', pred.running!, 10),
    await insert('available', predAvailable, 10),
  ];
  // With a batch of one, the head of the line is blocked: the scan must go on past it.
  assert.deepEqual(await claim(1), [predAvailable]);
  const free = [
    await insert('available', pred.succeeded!, 10),
    await insert('available', pred.dead!, 10),
    await insert('available', pred.cancelled!, 10),
  ];
  const gone = await insert('available', 999_999_999, 10);
  assert.deepEqual(
    (await claim(100)).sort((a, b) => a - b),
    [...free, gone].sort((a, b) => a - b),
  );
  assert.deepEqual(await claim(100), [], 'blocked ones stay: their predecessors are not finished');

  // The predecessor finishes (a committed state change): its follower becomes claimable.
  await db.pool.query("UPDATE jobs SET state = 'succeeded', finished_at = now() WHERE id = $1", [
    pred.running,
  ]);
  assert.deepEqual(await claim(100), [blocked[2]]);
  // A deleted predecessor counts as finished.
  await db.pool.query('DELETE FROM jobs WHERE id = $1', [pred.failed]);
  assert.deepEqual(await claim(100), [blocked[1]]);
});
