import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jobInsertMany } from '../../src/store/job-insert.ts';
import { jobClaimBatch, jobCompleteMany, jobFailMany, leaseRenewMany } from '../../src/store/jobs.ts';
import { withTransaction } from '../../src/store/pool.ts';
import { validateEnqueue } from '../../src/worker/validate.ts';
import { createTestDatabase } from '../support/db.ts';

const db = await createTestDatabase();

async function claimed(queue: string, n: number) {
  await jobInsertMany(
    db.pool,
    Array.from({ length: n }, () => validateEnqueue({ queue, kind: 'k', maxAttempts: 5 }, '')),
  );
  const jobs = await jobClaimBatch(db.pool, {
    queue,
    limit: n,
    owner: 'w1',
    leaseMs: 60_000,
    tenantCursor: '',
    limited: false,
  });
  assert.equal(jobs.length, n);
  return jobs.map((j) => ({ id: j.id, attempt: j.attempt }));
}

async function states(ids: number[]) {
  const { rows } = await db.pool.query<{ id: number; state: string; last_error: string | null }>(
    'SELECT id, state, last_error FROM jobs WHERE id = ANY ($1::bigint[]) ORDER BY id',
    [ids],
  );
  return rows;
}

test('a batch of failures in any order gives each job its own outcome and error', async () => {
  const [a, b, c, d] = await claimed('fail-batch', 4);
  assert.ok(a && b && c && d);
  // Out of id order on purpose: the statement sorts the batch and finds each job's entry by position.
  const failed = await withTransaction(db.pool, (tx) =>
    jobFailMany(tx, 'w1', [
      { ...d, outcome: 'failed', error: 'error of d', retryable: true },
      { ...b, outcome: 'timed_out', error: 'error of b', retryable: true },
      { ...c, outcome: 'cancelled', error: 'error of c', retryable: false },
      { ...a, outcome: 'failed', error: 'error of a', retryable: false },
    ]),
  );
  assert.equal(failed.length, 4);
  assert.deepEqual(await states([a.id, b.id, c.id, d.id]), [
    { id: a.id, state: 'dead', last_error: 'error of a' },
    { id: b.id, state: 'failed', last_error: 'error of b' },
    { id: c.id, state: 'cancelled', last_error: 'error of c' },
    { id: d.id, state: 'failed', last_error: 'error of d' },
  ]);
  const { rows } = await db.pool.query<{ job_id: number; outcome: string }>(
    'SELECT job_id, outcome FROM job_attempt_history WHERE job_id = ANY ($1::bigint[]) ORDER BY job_id',
    [[a.id, b.id, c.id, d.id]],
  );
  assert.deepEqual(
    rows.map((r) => r.outcome),
    ['failed', 'timed_out', 'cancelled', 'failed'],
  );
});

test('a completion batch writes only attempts still owned, whatever their order in the batch', async () => {
  const [a, b, c] = await claimed('complete-batch', 3);
  assert.ok(a && b && c);
  const done = await withTransaction(db.pool, (tx) =>
    jobCompleteMany(tx, 'w1', [
      c,
      { id: a.id, attempt: a.attempt + 1 }, // an attempt that is not the job's: refused
      b,
    ]),
  );
  assert.deepEqual(
    done.sort((x, y) => x - y),
    [b.id, c.id],
  );
  assert.deepEqual(
    (await states([a.id, b.id, c.id])).map((r) => r.state),
    ['running', 'succeeded', 'succeeded'],
  );
  // Another owner's completion and renewal of the running one change nothing.
  assert.deepEqual(await withTransaction(db.pool, (tx) => jobCompleteMany(tx, 'w2', [a])), []);
  assert.deepEqual(await leaseRenewMany(db.pool, 'w2', [a], 60_000), []);
  const renewed = await leaseRenewMany(db.pool, 'w1', [b, a, c], 60_000);
  assert.deepEqual(
    renewed.map((r) => r.id),
    [a.id],
  );
});

test('the same job twice in one batch is written once, for its later attempt', async () => {
  const [a] = await claimed('dup-batch', 1);
  assert.ok(a);
  const done = await withTransaction(db.pool, (tx) =>
    jobCompleteMany(tx, 'w1', [a, { id: a.id, attempt: a.attempt - 1 }]),
  );
  assert.deepEqual(done, [a.id]);
});
