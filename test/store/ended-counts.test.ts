/**
 * The kept sizes of the dead letter and of the cancelled jobs per queue (job_ended_counts, migration
 * 0036) follow every way a job enters or leaves either state: a failure, an expired lease, a cancel
 * (one job, a schedule's `replace`, a workflow's), a re-run, a discard, retention, a row inserted in
 * that state, a truncate. After each step the kept count is compared with a count of the rows, and
 * the jobs page's counts (and for the dead, the overview's) report it.
 */
import assert from 'node:assert/strict';
import { cp, mkdtemp, readdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { pino } from 'pino';
import { Maintenance } from '../../src/maintenance/maintenance.ts';
import { jobCountByState } from '../../src/store/job-counts.ts';
import { jobDiscardDead } from '../../src/store/job-discard.ts';
import {
  jobCancel,
  jobClaimBatch,
  jobFailMany,
  jobReapExpired,
  jobRetryMany,
  type JobState,
} from '../../src/store/jobs.ts';
import { migrate } from '../../src/store/migrate.ts';
import { occurrenceMaterialise, type OccurrenceInput } from '../../src/store/occurrences.ts';
import { withTransaction, type Queryable } from '../../src/store/pool.ts';
import { jobCountOpenByQueueState } from '../../src/store/stats.ts';
import { JobClient } from '../../src/worker/job-client.ts';
import { WorkflowClient } from '../../src/workflow/workflow-client.ts';
import { createEmptyDatabase, createTestDatabase } from '../support/db.ts';
import { waitUntil } from '../worker/support.ts';

const db = await createTestDatabase();
const jobs = new JobClient(db.pool);
const workflows = new WorkflowClient(db.pool);

type Ended = 'dead' | 'cancelled';

async function kept(state: Ended, on: Queryable = db.pool): Promise<Record<string, number>> {
  const { rows } = await on.query<{ queue: string; n: number }>(
    'SELECT queue, n::int FROM job_ended_counts WHERE state = $1 AND n <> 0 ORDER BY queue',
    [state],
  );
  return Object.fromEntries(rows.map((r) => [r.queue, r.n]));
}

async function counted(state: Ended, on: Queryable = db.pool): Promise<Record<string, number>> {
  const { rows } = await on.query<{ queue: string; n: number }>(
    `SELECT queue, count(*)::int AS n FROM jobs WHERE state = $1 GROUP BY queue ORDER BY queue`,
    [state],
  );
  return Object.fromEntries(rows.map((r) => [r.queue, r.n]));
}

/** What the jobs page's tabs show for `state`: over all queues, and for each of `queues`. */
async function pageCounts(state: JobState, queues: string[]): Promise<Record<string, number>> {
  const all = await jobCountByState(db.pool, { cap: 10_000 });
  const shown: Record<string, number> = { '*': all.counts[state] };
  for (const queue of queues) {
    const n = (await jobCountByState(db.pool, { queue, cap: 10_000 })).counts[state];
    if (n > 0) shown[queue] = n;
  }
  return shown;
}

async function assertCounts(state: Ended, step: string, expected: Record<string, number>): Promise<void> {
  assert.deepEqual(await counted(state), expected, `${step}: ${state} rows`);
  assert.deepEqual(await kept(state), expected, `${step}: job_ended_counts (${state})`);
  const total = Object.values(expected).reduce((a, b) => a + b, 0);
  // A queue without any is asked about too: its count must be 0, not the total.
  const queues = [...Object.keys(expected), 'none'];
  assert.deepEqual(await pageCounts(state, queues), { '*': total, ...expected }, `${step}: jobCountByState`);
  if (state === 'dead') {
    const overview = (await jobCountOpenByQueueState(db.pool)).filter((r) => r.state === 'dead');
    assert.deepEqual(Object.fromEntries(overview.map((r) => [r.queue, r.n])), expected, `${step}: overview`);
  }
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

async function idsIn(state: JobState, queue: string): Promise<number[]> {
  const { rows } = await db.pool.query<{ id: number }>(
    'SELECT id FROM jobs WHERE state = $1 AND queue = $2 ORDER BY id',
    [state, queue],
  );
  return rows.map((r) => r.id);
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
  await assertCounts('dead', 'failures', { a: 3, b: 1 });

  // An expired lease on a job with no attempts left.
  await jobs.enqueue({ queue: 'b', kind: 'k', maxAttempts: 1 });
  await claim('b', 1);
  await db.pool.query(`UPDATE jobs SET lease_expires_at = now() - interval '1 s' WHERE state = 'running'`);
  assert.equal((await jobReapExpired(db.pool, 10)).length, 1);
  await assertCounts('dead', 'reaper', { a: 3, b: 2 });

  // A cancel leaves a dead job as it is, and counts nothing.
  const [deadA] = await idsIn('dead', 'a');
  assert.equal((await jobCancel(db.pool, deadA ?? 0))?.job.state, 'dead');
  await assertCounts('dead', 'cancel of a dead job', { a: 3, b: 2 });
  await assertCounts('cancelled', 'cancel of a dead job', {});

  // A re-run of two dead jobs and of one that is only failed.
  const dead = (await idsIn('dead', 'a')).slice(0, 2);
  const failed = b[1]?.id ?? 0;
  await jobRetryMany(db.pool, [...dead, failed], 1);
  await assertCounts('dead', 'retry', { a: 1, b: 2 });

  // A discard: one dead job of each queue, and a job that is not dead (untouched).
  const { rows: some } = await db.pool.query<{ id: number }>(
    `SELECT DISTINCT ON (queue) id FROM jobs WHERE state = 'dead' ORDER BY queue, id`,
  );
  await jobDiscardDead(db.pool, [...some.map((r) => r.id), failed]);
  await assertCounts('dead', 'discard', { b: 1 });

  // Rows inserted as dead, then retention deleting those finished long enough ago.
  await db.pool.query(
    `INSERT INTO jobs (queue, kind, state, idempotency_key, key_generated, finished_at)
     SELECT 'c', 'k', 'dead', 'job-' || g, true, now() - g * interval '20 days' FROM generate_series(1, 3) g`,
  );
  await assertCounts('dead', 'insert', { b: 1, c: 3 });
  const m = new Maintenance({ pool: db.pool, log: pino({ level: 'silent' }) });
  await m.runPass();
  await m.stop();
  await assertCounts('dead', 'retention (30 days for dead)', { b: 1, c: 1 });

  await db.pool.query('TRUNCATE jobs');
  await assertCounts('dead', 'truncate', {});
});

test('the cancelled count follows every way in and out', async () => {
  await db.pool.query('TRUNCATE jobs');
  // Failures: a cancelled attempt (ca[0]), a failure of a job whose cancel was asked for while it ran
  // (cb[0]), a retryable failure (ca[1], failed) and a final one (cb[1], dead) that add nothing here.
  await jobs.enqueueMany([
    ...Array.from({ length: 2 }, () => ({ queue: 'ca', kind: 'k', maxAttempts: 5 })),
    ...Array.from({ length: 2 }, () => ({ queue: 'cb', kind: 'k', maxAttempts: 5 })),
  ]);
  const ca = await claim('ca', 2);
  const cb = await claim('cb', 2);
  assert.equal((await jobCancel(db.pool, cb[0]?.id ?? 0))?.job.state, 'running', 'asked to stop');
  await assertCounts('cancelled', 'cancel of a running job', {});
  await withTransaction(db.pool, (tx) =>
    jobFailMany(tx, 'w1', [
      { id: ca[0]?.id ?? 0, attempt: 1, outcome: 'cancelled', error: 'x', retryable: true },
      { id: ca[1]?.id ?? 0, attempt: 1, outcome: 'failed', error: 'x', retryable: true },
      { id: cb[0]?.id ?? 0, attempt: 1, outcome: 'failed', error: 'x', retryable: true },
      { id: cb[1]?.id ?? 0, attempt: 1, outcome: 'failed', error: 'x', retryable: false },
    ]),
  );
  await assertCounts('cancelled', 'failures', { ca: 1, cb: 1 });
  await assertCounts('dead', 'failures', { cb: 1 });

  // An expired lease on a job whose cancel was asked for.
  await jobs.enqueue({ queue: 'cc', kind: 'k', maxAttempts: 5 });
  const [reaped] = await claim('cc', 1);
  await jobCancel(db.pool, reaped?.id ?? 0);
  await db.pool.query(`UPDATE jobs SET lease_expires_at = now() - interval '1 s' WHERE state = 'running'`);
  assert.deepEqual(
    (await jobReapExpired(db.pool, 10)).map((r) => r.state),
    ['cancelled'],
  );
  await assertCounts('cancelled', 'reaper', { ca: 1, cb: 1, cc: 1 });

  // A cancel of one job, in each state it takes: available, scheduled, failed (ca[1], awaiting its
  // retry); then of one already cancelled and of a dead one, which stay as they are.
  const [available] = await jobs.enqueueMany([{ queue: 'ca', kind: 'k' }]);
  const later = await jobs.enqueue({ queue: 'cb', kind: 'k', runAt: new Date(Date.now() + 3_600_000) });
  for (const id of [available?.id, later.id, ca[1]?.id]) {
    assert.equal((await jobCancel(db.pool, id ?? 0))?.job.state, 'cancelled');
  }
  assert.equal((await jobCancel(db.pool, ca[0]?.id ?? 0))?.previous, 'cancelled');
  assert.equal((await jobCancel(db.pool, cb[1]?.id ?? 0))?.job.state, 'dead');
  await assertCounts('cancelled', 'single cancels', { ca: 3, cb: 2, cc: 1 });
  await assertCounts('dead', 'single cancels', { cb: 1 });

  // A re-run of cancelled jobs of three queues and of a dead one.
  await jobRetryMany(db.pool, [ca[0]?.id ?? 0, later.id, cb[1]?.id ?? 0, reaped?.id ?? 0], 1);
  await assertCounts('cancelled', 'retry', { ca: 2, cb: 1 });
  await assertCounts('dead', 'retry', {});

  // A discard deletes only dead jobs: a cancelled one stays, and stays counted.
  assert.deepEqual(await jobDiscardDead(db.pool, [ca[1]?.id ?? 0]), []);
  await assertCounts('cancelled', 'discard', { ca: 2, cb: 1 });

  // A schedule's `replace`: its next occurrence cancels its queued job (a running one is only asked
  // to stop).
  const { rows: schedule } = await db.pool.query<{ id: string }>(
    `INSERT INTO schedules (tenant_id, name, spec, queue, kind, next_fire_at)
     VALUES ('default', 'replace', '* * * * *', 'sched', 'k', now()) RETURNING id`,
  );
  const scheduleId = schedule[0]?.id ?? '';
  const occurrence = (minute: number, cancelPrevious: boolean): OccurrenceInput => {
    const fireAt = new Date(Date.UTC(2030, 0, 1, 0, minute));
    return {
      scheduleId,
      version: 1,
      fireAt,
      state: 'enqueued',
      reason: null,
      runAt: new Date(Date.now() - 1_000),
      idempotencyKey: `occurrence:${scheduleId}:${fireAt.toISOString()}`,
      source: 'schedule',
      cancelPrevious,
    };
  };
  await occurrenceMaterialise(db.pool, null, [occurrence(0, false), occurrence(1, false)], []);
  await claim('sched', 1);
  await occurrenceMaterialise(db.pool, null, [occurrence(2, true)], []);
  assert.equal((await idsIn('running', 'sched')).length, 1, 'asked to stop, still running');
  await assertCounts('cancelled', "a schedule's replace", { ca: 2, cb: 1, sched: 1 });

  // A workflow's cancel cancels its queued nodes' jobs; fail_fast does so in the failure's own
  // transaction, beside a dead job.
  await workflows.submit({
    id: 'stop',
    nodes: [
      { id: 'x', kind: 'k', queue: 'wa' },
      { id: 'y', kind: 'k', queue: 'wb' },
      { id: 'z', kind: 'k', queue: 'wa', dependsOn: ['x', 'y'] },
    ],
  });
  assert.equal(await workflows.cancel('stop'), true);
  await assertCounts('cancelled', 'workflow cancel', { ca: 2, cb: 1, sched: 1, wa: 1, wb: 1 });
  await workflows.submit({
    id: 'fast',
    failurePolicy: 'fail_fast',
    nodes: [
      { id: 'x', kind: 'k', queue: 'wc', retries: 0 },
      { id: 'y', kind: 'k', queue: 'wb' },
    ],
  });
  const [x] = await claim('wc', 1);
  await withTransaction(db.pool, (tx) =>
    jobFailMany(tx, 'w1', [{ id: x?.id ?? 0, attempt: 1, outcome: 'failed', error: 'x', retryable: true }]),
  );
  await assertCounts('cancelled', 'fail_fast', { ca: 2, cb: 1, sched: 1, wa: 1, wb: 2 });
  await assertCounts('dead', 'fail_fast', { wc: 1 });

  // Rows inserted as cancelled, then retention deleting those finished long enough ago.
  await db.pool.query(
    `INSERT INTO jobs (queue, kind, state, idempotency_key, key_generated, finished_at)
     SELECT 'cd', 'k', 'cancelled', 'cancelled-' || g, true, now() - g * interval '20 days'
       FROM generate_series(1, 3) g`,
  );
  await assertCounts('cancelled', 'insert', { ca: 2, cb: 1, cd: 3, sched: 1, wa: 1, wb: 2 });
  const m = new Maintenance({ pool: db.pool, log: pino({ level: 'silent' }) });
  await m.runPass();
  await m.stop();
  await assertCounts('cancelled', 'retention (30 days for cancelled)', {
    ca: 2,
    cb: 1,
    cd: 1,
    sched: 1,
    wa: 1,
    wb: 2,
  });

  await db.pool.query('TRUNCATE jobs');
  await assertCounts('cancelled', 'truncate', {});
  await assertCounts('dead', 'truncate', {});
});

test('the jobs page reads the kept counts unless it filters by tenant or searches', async () => {
  await db.pool.query('TRUNCATE jobs');
  await db.pool.query(
    `INSERT INTO jobs (queue, kind, state, idempotency_key, key_generated, finished_at)
     SELECT 'p', 'k', s, s || g, true, now() FROM unnest(ARRAY['dead', 'cancelled']) s, generate_series(1, 2) g`,
  );
  // Off by 10 for a moment: what the page shows then comes from the kept count.
  await db.pool.query(`UPDATE job_ended_counts SET n = n + 10 WHERE queue = 'p'`);
  try {
    const page = async (f: { tenantId?: string; kind?: string }) => {
      const { counts } = await jobCountByState(db.pool, { ...f, cap: 10_000 });
      return [counts.dead, counts.cancelled];
    };
    assert.deepEqual(await page({}), [12, 12]);
    assert.deepEqual(await page({ tenantId: 'default' }), [2, 2], 'a tenant: counted from the rows');
    assert.deepEqual(await page({ kind: 'k' }), [2, 2], 'a search: counted from the rows');
    // The cap holds for a kept count as for a counted one.
    const capped = await jobCountByState(db.pool, { cap: 5 });
    assert.deepEqual([capped.counts.cancelled, capped.exact.cancelled], [5, false]);
  } finally {
    await db.pool.query(`UPDATE job_ended_counts SET n = n - 10 WHERE queue = 'p'`);
  }
  assert.deepEqual(await kept('cancelled'), { p: 2 });
});

test('an upgrade counts the dead and cancelled jobs already there', async () => {
  const up = await createEmptyDatabase();
  const dir = fileURLToPath(new URL('../../src/store/migrations/', import.meta.url));
  const before = await mkdtemp(join(tmpdir(), 'tidemark-migrations-'));
  for (const file of await readdir(dir)) {
    if (file < '0036') await cp(join(dir, file), join(before, file));
  }
  await migrate(up.pool, before);
  await up.pool.query(
    `INSERT INTO jobs (queue, kind, state, idempotency_key, key_generated, finished_at)
     SELECT q, 'k', s, q || s || g, true, now()
       FROM unnest(ARRAY['u1', 'u2']) q, unnest(ARRAY['dead', 'cancelled', 'succeeded']) s, generate_series(1, 2) g
      WHERE q = 'u1' OR s <> 'dead'`,
  );
  // A dead count that had drifted from its rows: the upgrade counts the rows.
  await up.pool.query(`UPDATE job_dead_counts SET n = 7 WHERE queue = 'u1'`);
  await migrate(up.pool);
  assert.deepEqual(await kept('dead', up.pool), { u1: 2 });
  assert.deepEqual(await kept('cancelled', up.pool), { u1: 2, u2: 2 });
  const { rows } = await up.pool.query<{ gone: boolean }>(
    `SELECT to_regclass('job_dead_counts') IS NULL AS gone`,
  );
  assert.deepEqual(rows, [{ gone: true }]);
});

/**
 * A failure and the reaper move their jobs, then lock their workflows, then count; a cancel or a
 * re-run of a sibling node's job locks the workflow first, then counts. Counting in the failure's own
 * statement locked the count rows before the workflow, and each waited for the other until
 * PostgreSQL broke the deadlock.
 */
test('a failure beside a cancel of a sibling node in the same queue: both commit, counted once each', async () => {
  await workflows.submit({
    id: 'siblings',
    failurePolicy: 'continue',
    nodes: [
      { id: 'a', kind: 'k', queue: 'sib' },
      { id: 'b', kind: 'k', queue: 'sib' },
    ],
  });
  const before = await kept('cancelled');
  const [a] = await claim('sib', 1);
  assert.ok(a);
  const { rows } = await db.pool.query<{ id: number }>(
    `SELECT id FROM jobs WHERE queue = 'sib' AND state = 'available'`,
  );
  const b = rows[0]?.id;
  assert.ok(b !== undefined);
  const canceller = await db.pool.connect();
  const failer = await db.pool.connect();
  try {
    const { rows: pid } = await failer.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
    // The cancel's first step for a node's job: its workflow locked.
    await canceller.query('BEGIN');
    await canceller.query(`SELECT 1 FROM workflows WHERE id = 'siblings' FOR UPDATE`);
    await failer.query('BEGIN');
    const failed = jobFailMany(failer, 'w1', [
      { id: a.id, attempt: a.attempt, outcome: 'cancelled', error: 'stop', retryable: true },
    ]);
    await waitUntil('the failure to wait for the workflow', async () => {
      const { rows: waiting } = await db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE pid = $1 AND wait_event_type = 'Lock'`,
        [pid[0]?.pid],
      );
      return waiting[0]?.n === 1;
    });
    const cancelled = jobCancel(canceller, b);
    const settled = await Promise.allSettled([
      cancelled.then(() => canceller.query('COMMIT')),
      failed.then(() => failer.query('COMMIT')),
    ]);
    assert.deepEqual(
      settled.map((s) => (s.status === 'rejected' ? String(s.reason) : 'committed')),
      ['committed', 'committed'],
    );
  } finally {
    canceller.release();
    failer.release();
  }
  await assertCounts('cancelled', 'failure beside a cancel', { ...before, sib: 2 });
});
