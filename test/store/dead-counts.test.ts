/**
 * The dead letter's size per queue (job_dead_counts, migration 0027) follows every way a job enters
 * or leaves it: a non-retryable failure, exhausted attempts, an expired lease, a re-run, a discard,
 * retention, a row inserted as dead, a truncate. After each step the kept count is compared with a
 * count of the rows, and the overview's statement reports it.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { Maintenance } from '../../src/maintenance/maintenance.ts';
import { jobDiscardDead } from '../../src/store/job-discard.ts';
import { jobClaimBatch, jobFailMany, jobReapExpired, jobRetryMany } from '../../src/store/jobs.ts';
import { withTransaction } from '../../src/store/pool.ts';
import { jobCountOpenByQueueState } from '../../src/store/stats.ts';
import { JobClient } from '../../src/worker/job-client.ts';
import { createTestDatabase } from '../support/db.ts';

const db = await createTestDatabase();
const jobs = new JobClient(db.pool);

async function kept(): Promise<Record<string, number>> {
  const { rows } = await db.pool.query<{ queue: string; n: number }>(
    'SELECT queue, n::int FROM job_dead_counts WHERE n <> 0 ORDER BY queue',
  );
  return Object.fromEntries(rows.map((r) => [r.queue, r.n]));
}

async function counted(): Promise<Record<string, number>> {
  const { rows } = await db.pool.query<{ queue: string; n: number }>(
    `SELECT queue, count(*)::int AS n FROM jobs WHERE state = 'dead' GROUP BY queue ORDER BY queue`,
  );
  return Object.fromEntries(rows.map((r) => [r.queue, r.n]));
}

async function assertCounts(step: string, expected: Record<string, number>): Promise<void> {
  assert.deepEqual(await counted(), expected, `${step}: rows`);
  assert.deepEqual(await kept(), expected, `${step}: job_dead_counts`);
  const overview = (await jobCountOpenByQueueState(db.pool)).filter((r) => r.state === 'dead');
  assert.deepEqual(Object.fromEntries(overview.map((r) => [r.queue, r.n])), expected, `${step}: overview`);
}

async function claim(queue: string, n: number) {
  return jobClaimBatch(db.pool, {
    queue,
    limit: n,
    owner: 'w1',
    leaseMs: 60_000,
    tenantCursor: '',
    limited: false,
  });
}

test('the dead-letter count follows every way in and out', async () => {
  // Two queues, so a statement that touches both adds to each.
  await jobs.enqueueMany([
    ...Array.from({ length: 3 }, () => ({ queue: 'a', kind: 'k', maxAttempts: 1 })),
    ...Array.from({ length: 2 }, () => ({ queue: 'b', kind: 'k', maxAttempts: 5 })),
  ]);
  const a = await claim('a', 3);
  const b = await claim('b', 2);
  // Exhausted attempts (a, max 1), a non-retryable error (b[0]), a retryable one that stays failed (b[1]).
  await withTransaction(db.pool, (tx) =>
    jobFailMany(tx, 'w1', [
      ...a.map((j) => ({
        id: j.id,
        attempt: j.attempt,
        outcome: 'failed' as const,
        error: 'x',
        retryable: true,
      })),
      { id: b[0]?.id ?? 0, attempt: 1, outcome: 'failed', error: 'x', retryable: false },
      { id: b[1]?.id ?? 0, attempt: 1, outcome: 'failed', error: 'x', retryable: true },
    ]),
  );
  await assertCounts('failures', { a: 3, b: 1 });

  // An expired lease on a job with no attempts left.
  await jobs.enqueue({ queue: 'b', kind: 'k', maxAttempts: 1 });
  await claim('b', 1);
  await db.pool.query(`UPDATE jobs SET lease_expires_at = now() - interval '1 s' WHERE state = 'running'`);
  assert.equal((await jobReapExpired(db.pool, 10)).length, 1);
  await assertCounts('reaper', { a: 3, b: 2 });

  // A re-run of two dead jobs and of one that is only failed.
  const { rows: dead } = await db.pool.query<{ id: number }>(
    `SELECT id FROM jobs WHERE state = 'dead' AND queue = 'a' ORDER BY id LIMIT 2`,
  );
  const failed = b[1]?.id ?? 0;
  await jobRetryMany(db.pool, [...dead.map((r) => r.id), failed], 1);
  await assertCounts('retry', { a: 1, b: 2 });

  // A discard: one dead job of each queue, and a job that is not dead (untouched).
  const { rows: some } = await db.pool.query<{ id: number }>(
    `SELECT DISTINCT ON (queue) id FROM jobs WHERE state = 'dead' ORDER BY queue, id`,
  );
  await jobDiscardDead(db.pool, [...some.map((r) => r.id), failed]);
  await assertCounts('discard', { b: 1 });

  // Rows inserted as dead, then retention deleting those finished long enough ago.
  await db.pool.query(
    `INSERT INTO jobs (queue, kind, state, idempotency_key, key_generated, finished_at)
     SELECT 'c', 'k', 'dead', 'job-' || g, true, now() - g * interval '20 days' FROM generate_series(1, 3) g`,
  );
  await assertCounts('insert', { b: 1, c: 3 });
  const m = new Maintenance({ pool: db.pool, log: pino({ level: 'silent' }) });
  await m.runPass();
  await m.stop();
  await assertCounts('retention (30 days for dead)', { b: 1, c: 1 });

  await db.pool.query('TRUNCATE jobs');
  await assertCounts('truncate', {});
});
