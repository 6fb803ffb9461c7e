import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client } from '../../src/client.ts';
import { jobClaimBatch, jobReapExpired } from '../../src/store/jobs.ts';
import { queueUpsert } from '../../src/store/queues.ts';
import { tenantUpsert } from '../../src/store/tenants.ts';
import {
  JobCancelledError,
  LeaseLostError,
  NonRetryableError,
  RetryAfterError,
  WorkerShutdownError,
} from '../../src/worker/errors.ts';
import type { HandlerContext } from '../../src/worker/handler.ts';
import { createTestDatabase } from '../support/db.ts';
import { attemptsOf, deferred, jobState, startWorker, waitUntil } from './support.ts';

const db = await createTestDatabase();
const client = new Client({ pool: db.pool });
await db.pool.query('CREATE TABLE effects (job_id bigint, attempt int, note text)');

test('a job runs once, gets its context, and is recorded with its attempt', async () => {
  let seen: HandlerContext | undefined;
  const worker = await startWorker(
    db,
    {
      hello: (ctx) => {
        seen = ctx;
        return Promise.resolve();
      },
    },
    { queues: [{ name: 'ok', concurrency: 2 }] },
  );
  const job = await client.jobs.enqueue({
    queue: 'ok',
    kind: 'hello',
    payload: { n: 1 },
    idempotencyKey: 'hello-1',
  });
  await waitUntil('succeeded', async () => (await jobState(db.pool, job.id)) === 'succeeded');
  assert.equal(seen?.jobId, job.id);
  assert.deepEqual(seen?.payload, { n: 1 });
  assert.equal(seen?.attempt, 1);
  assert.equal(seen?.idempotencyKey, 'hello-1');
  const got = await client.jobs.get(job.id);
  assert.equal(got?.leaseOwner, null);
  assert.equal(got?.attempts.length, 1);
  assert.equal(got?.attempts[0]?.outcome, 'succeeded');
  assert.equal(got?.attempts[0]?.worker, worker.id);
  assert.ok((got?.attempts[0]?.durationMs ?? -1) >= 0);
  const { rows } = await db.pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM job_attempts WHERE job_id = $1',
    [job.id],
  );
  assert.equal(rows[0]?.n, 0, 'a success is recorded on the job row (0019), not as an attempt row');
  const m = worker.metrics()[0];
  assert.equal(m?.outcomes.succeeded, 1);
  assert.equal(m?.startLagMs.count, 1);
});

test('a failing job is retried with backoff until its attempts are spent, then dead with its history', async () => {
  await queueUpsert(db.pool, 'flaky', { backoffBaseMs: 20, backoffMaxMs: 100 });
  let calls = 0;
  await startWorker(
    db,
    {
      boom: () => {
        calls++;
        return Promise.reject(new Error(`boom ${calls}`));
      },
    },
    { queues: [{ name: 'flaky', concurrency: 1 }] },
  );
  const job = await client.jobs.enqueue({ queue: 'flaky', kind: 'boom', maxAttempts: 3 });
  await waitUntil('dead', async () => (await jobState(db.pool, job.id)) === 'dead');
  const history = await attemptsOf(db.pool, job.id);
  assert.deepEqual(
    history.map((a) => [a.attempt, a.outcome]),
    [
      [1, 'failed'],
      [2, 'failed'],
      [3, 'failed'],
    ],
  );
  assert.match(history[2]?.error ?? '', /boom 3/);
  assert.equal(calls, 3);
  const [dead] = await client.jobs.deadLetter({ queue: 'flaky' });
  assert.equal(dead?.id, job.id);
  assert.match(dead?.lastError ?? '', /boom 3/);
  // Re-run from the dead letter: one more attempt, which fails again and goes back to dead.
  assert.equal(await client.jobs.retry(job.id), true);
  await waitUntil('dead again', async () => calls === 4 && (await jobState(db.pool, job.id)) === 'dead');
  assert.equal((await attemptsOf(db.pool, job.id)).length, 4);
});

test('backoff grows exponentially with jitter between half and the whole nominal delay', async () => {
  const { rows } = await db.pool.query<{ a: number; d: number }>(
    `SELECT a, tidemark_backoff_ms(a, 1000, 60000) AS d FROM generate_series(1, 8) a, generate_series(1, 50)`,
  );
  for (const { a, d } of rows) {
    const nominal = Math.min(60_000, 1000 * 2 ** (a - 1));
    assert.ok(d >= nominal / 2 && d <= nominal, `attempt ${a}: ${d} outside [${nominal / 2}, ${nominal}]`);
  }
  const spread = new Set(rows.filter((r) => r.a === 3).map((r) => Math.round(r.d)));
  assert.ok(spread.size > 10, 'jitter spreads retries');
});

test('a non-retryable error sends the job to dead after one attempt', async () => {
  await startWorker(
    db,
    {
      bad: () => {
        return Promise.reject(new NonRetryableError('invalid payload'));
      },
    },
    { queues: [{ name: 'nr', concurrency: 1 }] },
  );
  const job = await client.jobs.enqueue({ queue: 'nr', kind: 'bad', maxAttempts: 5 });
  await waitUntil('dead', async () => (await jobState(db.pool, job.id)) === 'dead');
  const history = await attemptsOf(db.pool, job.id);
  assert.equal(history.length, 1);
  assert.match(history[0]?.error ?? '', /NonRetryableError: invalid payload/);
});

test('RetryAfterError holds the retry back at least its retryAfterMs; a longer backoff still wins', async () => {
  await queueUpsert(db.pool, 'later', { backoffBaseMs: 0, backoffMaxMs: 0 });
  await startWorker(
    db,
    {
      busy: (ctx) => Promise.reject(new RetryAfterError('rate limited', ctx.payload as number)),
    },
    { queues: [{ name: 'later', concurrency: 2 }] },
  );
  const floor = await client.jobs.enqueue({ queue: 'later', kind: 'busy', payload: 30_000 });
  // Backoff of one hour nominal (at least half of it with jitter) beats a 1 s Retry-After.
  const backoff = await client.jobs.enqueue({
    queue: 'later',
    kind: 'busy',
    payload: 1000,
    backoffBaseMs: 3_600_000,
    backoffMaxMs: 3_600_000,
  });
  const waitS = async (id: number): Promise<number | false> => {
    const { rows } = await db.pool.query<{ state: string; wait_s: number }>(
      'SELECT state, extract(epoch FROM run_at - now())::float8 AS wait_s FROM jobs WHERE id = $1',
      [id],
    );
    return rows[0]?.state === 'failed' ? rows[0].wait_s : false;
  };
  const floorWait = await waitUntil('the first job failed', () => waitS(floor.id));
  assert.ok(floorWait > 25 && floorWait <= 30, `retry in ${floorWait} s; retryAfterMs 30 s, backoff 0`);
  const backoffWait = await waitUntil('the second job failed', () => waitS(backoff.id));
  assert.ok(backoffWait > 1700, `retry in ${backoffWait} s; the backoff (30-60 min) is longer than 1 s`);
  const [attempt] = await attemptsOf(db.pool, floor.id);
  assert.equal(attempt?.outcome, 'failed');
  assert.match(attempt?.error ?? '', /RetryAfterError: rate limited/);
  assert.throws(() => new RetryAfterError('x', -1), /retryAfterMs: must be a finite number ≥ 0, got -1/);
  await client.jobs.cancel(floor.id);
  await client.jobs.cancel(backoff.id);
});

test('a deadline fires the signal; the attempt is timed out and retried', async () => {
  await queueUpsert(db.pool, 'slow', { backoffBaseMs: 10, backoffMaxMs: 10 });
  await startWorker(
    db,
    {
      slow: async (ctx) => {
        if (ctx.attempt > 1) return;
        await new Promise((_, reject) =>
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error)),
        );
      },
      stubborn: async () => {
        await new Promise((r) => setTimeout(r, 1500)); // ignores its signal
      },
    },
    { queues: [{ name: 'slow', concurrency: 2 }], timeoutGraceMs: 100 },
  );
  const job = await client.jobs.enqueue({ queue: 'slow', kind: 'slow', timeoutMs: 100 });
  const stubborn = await client.jobs.enqueue({
    queue: 'slow',
    kind: 'stubborn',
    timeoutMs: 50,
    maxAttempts: 1,
  });
  await waitUntil('succeeded on retry', async () => (await jobState(db.pool, job.id)) === 'succeeded');
  const history = await attemptsOf(db.pool, job.id);
  assert.deepEqual(
    history.map((a) => a.outcome),
    ['timed_out', 'succeeded'],
  );
  assert.match(history[0]?.error ?? '', /deadline of 100 ms passed/);
  // The stubborn handler is abandoned after the grace period: timed out, and (one attempt) dead.
  await waitUntil('stubborn dead', async () => (await jobState(db.pool, stubborn.id)) === 'dead');
  const s = await attemptsOf(db.pool, stubborn.id);
  assert.equal(s[0]?.outcome, 'timed_out');
  assert.match(s[0]?.error ?? '', /did not settle within 100 ms/);
});

test('heartbeat progress is stored with its time while the handler runs', async () => {
  const release = deferred();
  await startWorker(
    db,
    {
      long: async (ctx) => {
        await ctx.heartbeat({ percent: 40, message: 'halfway there' });
        await release.promise;
      },
    },
    { queues: [{ name: 'long', concurrency: 1 }] },
  );
  const job = await client.jobs.enqueue({ queue: 'long', kind: 'long' });
  const running = await waitUntil('progress', async () => {
    const j = await client.jobs.get(job.id);
    return j !== null && j.progress !== null && j;
  });
  assert.equal(running.state, 'running');
  assert.deepEqual(running.progress, { percent: 40, message: 'halfway there' });
  assert.ok(running.heartbeatAt instanceof Date);
  assert.ok(running.leaseExpiresAt instanceof Date && running.leaseExpiresAt > running.heartbeatAt);
  release.resolve();
  await waitUntil('succeeded', async () => (await jobState(db.pool, job.id)) === 'succeeded');
});

test('the automatic heartbeat keeps a job alive past its lease; a reaped job aborts its handler', async () => {
  let reason: unknown;
  const worker = await startWorker(
    db,
    {
      sleeper: async (ctx) => {
        // 2.5 leases of 1 s. (300 ms leases failed about once in 15 runs: a renewal can wait for one
        // of the pool's 5 connections, which the workers of the file's earlier tests share, long
        // enough for one of their reapers to take the job.)
        if (ctx.payload !== 'wait-abort') {
          await new Promise((r) => setTimeout(r, 2500));
          return;
        }
        if (!ctx.signal.aborted) {
          await new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
        }
        reason = ctx.signal.reason;
      },
    },
    { queues: [{ name: 'hb', concurrency: 2 }], leaseMs: 1000 },
  );
  const job = await client.jobs.enqueue({ queue: 'hb', kind: 'sleeper' });
  await waitUntil('succeeded', async () => (await jobState(db.pool, job.id)) === 'succeeded');
  assert.deepEqual(
    (await attemptsOf(db.pool, job.id)).map((a) => a.outcome),
    ['succeeded'],
  );

  // Someone else takes the attempt away (as the reaper does after a pause): the next heartbeat sees
  // it and aborts the handler with LeaseLostError, and this worker writes nothing for it.
  const lost = await client.jobs.enqueue({ queue: 'hb', kind: 'sleeper', payload: 'wait-abort' });
  await waitUntil('running', async () => (await jobState(db.pool, lost.id)) === 'running');
  await db.pool.query(
    `UPDATE jobs SET lease_owner = 'someone-else', lease_expires_at = now() + interval '1 hour' WHERE id = $1`,
    [lost.id],
  );
  await waitUntil('aborted', () => Promise.resolve(reason !== undefined));
  assert.ok(reason instanceof LeaseLostError);
  await waitUntil('lease_lost counted', () =>
    Promise.resolve((worker.metrics()[0]?.outcomes.lease_lost ?? 0) === 1),
  );
  assert.equal(await jobState(db.pool, lost.id), 'running', 'the other owner still has it');
  assert.deepEqual(await attemptsOf(db.pool, lost.id), []);
});

test('cancelling a running job aborts its handler through the signal; the job ends cancelled', async () => {
  let reason: unknown;
  await startWorker(
    db,
    {
      wait: async (ctx) => {
        await new Promise<void>((_, reject) =>
          ctx.signal.addEventListener('abort', () => {
            reason = ctx.signal.reason;
            reject(new Error('stopped on request'));
          }),
        );
      },
    },
    { queues: [{ name: 'cx', concurrency: 1 }], pollMs: 60_000 }, // only NOTIFY can deliver it in time
  );
  const job = await client.jobs.enqueue({ queue: 'cx', kind: 'wait' });
  await waitUntil('running', async () => (await jobState(db.pool, job.id)) === 'running');
  const during = await client.jobs.cancel(job.id);
  assert.equal(during?.state, 'running');
  assert.ok(during?.cancelRequestedAt instanceof Date);
  await waitUntil('cancelled', async () => (await jobState(db.pool, job.id)) === 'cancelled', 5000);
  assert.ok(reason instanceof JobCancelledError);
  assert.deepEqual(
    (await attemptsOf(db.pool, job.id)).map((a) => a.outcome),
    ['cancelled'],
  );
});

test('ctx.transaction commits the effect with the completion, or neither once the lease is lost', async () => {
  let lostError: unknown;
  await startWorker(
    db,
    {
      pay: async (ctx) => {
        if (ctx.payload === 'steal') {
          await ctx
            .transaction(async (tx) => {
              await tx.query(`INSERT INTO effects VALUES ($1, $2, 'before-steal')`, [ctx.jobId, ctx.attempt]);
              // Another owner takes the job while the effect is uncommitted.
              await db.pool.query(`UPDATE jobs SET lease_owner = 'thief' WHERE id = $1`, [ctx.jobId]);
            })
            .catch((e: unknown) => {
              lostError = e;
            });
          return;
        }
        await ctx.transaction((tx) =>
          tx.query(`INSERT INTO effects VALUES ($1, $2, 'paid')`, [ctx.jobId, ctx.attempt]),
        );
        throw new Error('thrown after the transaction: the job is already succeeded');
      },
    },
    { queues: [{ name: 'pay', concurrency: 2 }] },
  );
  const job = await client.jobs.enqueue({ queue: 'pay', kind: 'pay' });
  await waitUntil('succeeded', async () => (await jobState(db.pool, job.id)) === 'succeeded');
  const { rows } = await db.pool.query('SELECT note FROM effects WHERE job_id = $1', [job.id]);
  assert.deepEqual(rows, [{ note: 'paid' }]);
  assert.deepEqual(
    (await attemptsOf(db.pool, job.id)).map((a) => a.outcome),
    ['succeeded'],
  );

  const stolen = await client.jobs.enqueue({ queue: 'pay', kind: 'pay', payload: 'steal' });
  await waitUntil('lease lost', () => Promise.resolve(lostError !== undefined));
  assert.ok(lostError instanceof LeaseLostError);
  const none = await db.pool.query('SELECT note FROM effects WHERE job_id = $1', [stolen.id]);
  assert.equal(none.rows.length, 0, 'the effect rolled back with the completion');
});

test('ctx.once runs an effect on the first attempt only, however often the job is re-run', async () => {
  await queueUpsert(db.pool, 'once', { backoffBaseMs: 10, backoffMaxMs: 10 });
  const ran: boolean[] = [];
  await startWorker(
    db,
    {
      once: async (ctx) => {
        const r = await ctx.once('email', (tx) =>
          tx.query(`INSERT INTO effects VALUES ($1, $2, 'email')`, [ctx.jobId, ctx.attempt]),
        );
        ran.push(r.ran);
        if (ctx.attempt < 3) throw new Error('fails after the effect');
      },
    },
    { queues: [{ name: 'once', concurrency: 1 }] },
  );
  const job = await client.jobs.enqueue({ queue: 'once', kind: 'once' });
  await waitUntil('succeeded', async () => (await jobState(db.pool, job.id)) === 'succeeded');
  assert.deepEqual(ran, [true, false, false]);
  const { rows } = await db.pool.query('SELECT attempt FROM effects WHERE job_id = $1', [job.id]);
  assert.deepEqual(rows, [{ attempt: 1 }]);
});

test('a handler may destructure ctx: heartbeat, once, transaction and signal work on their own', async () => {
  let aborted: boolean | undefined;
  await startWorker(
    db,
    {
      parts: async ({ jobId, attempt, heartbeat, once, transaction, signal }) => {
        aborted = signal.aborted;
        await heartbeat({ step: 'destructured' });
        await once('note', (tx) => tx.query(`INSERT INTO effects VALUES ($1, $2, 'once')`, [jobId, attempt]));
        await transaction((tx) => tx.query(`INSERT INTO effects VALUES ($1, $2, 'tx')`, [jobId, attempt]));
      },
    },
    { queues: [{ name: 'parts', concurrency: 1 }] },
  );
  const job = await client.jobs.enqueue({ queue: 'parts', kind: 'parts' });
  await waitUntil('succeeded', async () => (await jobState(db.pool, job.id)) === 'succeeded');
  assert.equal(aborted, false);
  assert.deepEqual((await client.jobs.get(job.id))?.progress, { step: 'destructured' });
  const { rows } = await db.pool.query('SELECT note FROM effects WHERE job_id = $1 ORDER BY note', [job.id]);
  assert.deepEqual(rows, [{ note: 'once' }, { note: 'tx' }]);
});

test("fair claiming: tenant B's single job starts in the first batch despite tenant A's backlog", async () => {
  const started: string[] = [];
  const jobs = Array.from({ length: 2000 }, () => ({ queue: 'fair', kind: 'work', tenantId: 'tenant-a' }));
  await client.jobs.enqueueMany(jobs);
  const b = await client.jobs.enqueue({ queue: 'fair', kind: 'work', tenantId: 'tenant-b' });
  await startWorker(
    db,
    {
      work: async (ctx) => {
        started.push(ctx.tenantId);
        await new Promise((r) => setTimeout(r, 5));
      },
    },
    { queues: [{ name: 'fair', concurrency: 8 }] },
  );
  await waitUntil('b succeeded', async () => (await jobState(db.pool, b.id)) === 'succeeded');
  const position = started.indexOf('tenant-b');
  assert.ok(position >= 0 && position < 8, `tenant-b started as job ${position + 1} of ${started.length}`);
});

test("a tenant's quota holds across the claim loop; other tenants still run", async () => {
  await tenantUpsert(db.pool, { id: 'small', name: 'Small', maxRunning: 2 });
  let running = 0;
  let peakSmall = 0;
  const ran: string[] = [];
  await startWorker(
    db,
    {
      work: async (ctx) => {
        if (ctx.tenantId === 'small') peakSmall = Math.max(peakSmall, ++running);
        ran.push(ctx.tenantId);
        await new Promise((r) => setTimeout(r, 30));
        if (ctx.tenantId === 'small') running--;
      },
    },
    { queues: [{ name: 'quota', concurrency: 10 }] },
  );
  await client.jobs.enqueueMany(
    Array.from({ length: 12 }, () => ({ queue: 'quota', kind: 'work', tenantId: 'small' })),
  );
  await client.jobs.enqueueMany(
    Array.from({ length: 6 }, () => ({ queue: 'quota', kind: 'work', tenantId: 'other' })),
  );
  await waitUntil('all done', async () => {
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs WHERE queue = 'quota' AND state = 'succeeded'`,
    );
    return rows[0]?.n === 18;
  });
  assert.equal(peakSmall, 2, 'the quota was reached and never exceeded');
  // Quotas apply from the next claim; clear it so later tests are not serialised by it.
  await tenantUpsert(db.pool, { id: 'small', name: 'Small', maxRunning: null });
});

test("jobs enqueued one at a time into an idle queue start at once, and never past the queue's limit", async () => {
  // A lone enqueue names its job in the wake-up and an idle worker claims it by id: that path must
  // start it without the poll, and must still leave a job that the queue's limit holds back.
  await queueUpsert(db.pool, 'lone-limited', { maxRunning: 1 });
  const gate = deferred();
  const started: number[] = [];
  let running = 0;
  let peak = 0;
  await startWorker(
    db,
    {
      lone: async (ctx) => {
        started.push(ctx.jobId);
        peak = Math.max(peak, ++running);
        if (ctx.queue === 'lone-limited') await gate.promise;
        running--;
      },
    },
    // A poll far longer than the test (the waits below are 10 s): only a wake-up can start these
    // jobs in time.
    {
      queues: [
        { name: 'lone', concurrency: 5 },
        { name: 'lone-limited', concurrency: 5 },
      ],
      pollMs: 60_000,
    },
  );
  const free = await client.jobs.enqueue({ queue: 'lone', kind: 'lone' });
  await waitUntil('the lone job ran', async () => (await jobState(db.pool, free.id)) === 'succeeded', 10_000);
  const first = await client.jobs.enqueue({ queue: 'lone-limited', kind: 'lone' });
  await waitUntil('the first limited job runs', () => Promise.resolve(started.includes(first.id)), 10_000);
  const second = await client.jobs.enqueue({ queue: 'lone-limited', kind: 'lone' });
  await new Promise((r) => setTimeout(r, 300));
  assert.equal(await jobState(db.pool, second.id), 'available', 'held back by max_running 1');
  gate.resolve();
  // The first one's completion frees the slot and wakes the queue's loop.
  await waitUntil('the second ran', async () => (await jobState(db.pool, second.id)) === 'succeeded', 10_000);
  assert.equal(peak, 1);
  await queueUpsert(db.pool, 'lone-limited', { maxRunning: null });
});

test("a wake-up that comes while one claim loop's claim holds the queue's slots starts the job", async () => {
  // Each other queue's completion wakes a limited queue's loops: one claims (reserving every free
  // slot), the other finds none and waits for one. A wake-up about a new job then reaching the waiting
  // loop must survive for the claiming one, whose claim began before the job existed.
  await queueUpsert(db.pool, 'wake-limited', { maxRunning: 1 });
  const started = new Set<number>();
  await startWorker(
    db,
    { mark: (ctx) => Promise.resolve(void started.add(ctx.jobId)) },
    {
      queues: [
        { name: 'wake-other', concurrency: 5 },
        { name: 'wake-limited', concurrency: 5 },
      ],
      pollMs: 60_000,
    },
  );
  for (let i = 0; i < 20; i++) {
    const other = await client.jobs.enqueue({ queue: 'wake-other', kind: 'mark' });
    // Checked without a pause, so the next job comes while the completion's wake-up is being acted on.
    while ((await jobState(db.pool, other.id)) !== 'succeeded');
    const job = await client.jobs.enqueue({ queue: 'wake-limited', kind: 'mark' });
    await waitUntil(`round ${i}: the limited job started`, () => Promise.resolve(started.has(job.id)), 3000);
    await waitUntil('its completion', async () => (await jobState(db.pool, job.id)) === 'succeeded');
  }
  await queueUpsert(db.pool, 'wake-limited', { maxRunning: null });
});

test('a job whose lease expired is reaped as lease_lost and run again by a live worker', async () => {
  await queueUpsert(db.pool, 'reap', { backoffBaseMs: 10, backoffMaxMs: 10 });
  const job = await client.jobs.enqueue({ queue: 'reap', kind: 'ok' });
  // A worker that claimed it and vanished, with a 100 ms lease.
  const [claimed] = await jobClaimBatch(db.pool, {
    queue: 'reap',
    limit: 1,
    owner: 'ghost',
    leaseMs: 100,
    tenantCursor: '',
    limited: false,
  });
  assert.equal(claimed?.id, job.id);
  await startWorker(db, { ok: () => Promise.resolve() }, { queues: [{ name: 'reap', concurrency: 1 }] });
  await waitUntil('succeeded', async () => (await jobState(db.pool, job.id)) === 'succeeded');
  const history = await attemptsOf(db.pool, job.id);
  assert.deepEqual(
    history.map((a) => [a.attempt, a.outcome, a.worker === 'ghost']),
    [
      [1, 'lease_lost', true],
      [2, 'succeeded', false],
    ],
  );
  assert.match(history[0]?.error ?? '', /lease expired: worker ghost/);
});

test('a running job written without a start time is reaped with the others, not stopping the reaper', async () => {
  // As a hand-written row or a restore might leave them: running, the lease long gone.
  const { rows } = await db.pool.query<{ id: number }>(
    `INSERT INTO jobs (queue, kind, state, idempotency_key, key_generated, attempt, lease_owner, lease_expires_at,
                       started_at)
     VALUES ('reap-raw', 'k', 'running', 'raw-1', true, 1, 'ghost', now() - interval '1 minute', NULL),
            ('reap-raw', 'k', 'running', 'raw-2', true, 1, 'ghost', now() - interval '1 minute', now() - interval '2 minutes')
     RETURNING id`,
  );
  const ids = rows.map((r) => r.id);
  // This file's workers reap too: whoever does, both rows end the attempt as lease_lost.
  await waitUntil('both reaped', async () => {
    await jobReapExpired(db.pool, 100);
    const lost = await Promise.all(ids.map((id) => attemptsOf(db.pool, id)));
    return lost.every((h) => h.length === 1 && h[0]?.outcome === 'lease_lost');
  });
});

test('stop() lets handlers finish within the grace period, then releases the rest to the queue', async () => {
  let reason: unknown;
  const finished = deferred();
  const worker = await startWorker(
    db,
    {
      quick: async () => {
        await new Promise((r) => setTimeout(r, 100));
      },
      endless: async (ctx) => {
        await new Promise<void>((_, reject) =>
          ctx.signal.addEventListener('abort', () => {
            reason = ctx.signal.reason;
            reject(new Error('aborted'));
          }),
        );
      },
    },
    { queues: [{ name: 'bye', concurrency: 2 }], shutdownGraceMs: 300 },
  );
  const quick = await client.jobs.enqueue({ queue: 'bye', kind: 'quick' });
  const endless = await client.jobs.enqueue({ queue: 'bye', kind: 'endless', maxAttempts: 4 });
  await waitUntil('both running', () => Promise.resolve(worker.runningCount === 2));
  void worker.stop().then(finished.resolve);
  await finished.promise;
  assert.ok(reason instanceof WorkerShutdownError);
  assert.equal(await jobState(db.pool, quick.id), 'succeeded');
  const back = await client.jobs.get(endless.id);
  assert.equal(back?.state, 'available');
  assert.equal(back?.maxAttempts, 5, 'a release does not spend the retry budget');
  assert.deepEqual(
    back?.attempts.map((a) => a.outcome),
    ['released'],
  );
});
