/**
 * Claim ahead (QueueOptions.claimAhead): jobs claimed beyond the free slots wait in the worker's
 * buffer. Each story fills one slot with a job that waits for the test, lets three more be claimed
 * into the buffer behind it, then checks what a buffered job may and may not do: run after its
 * cancel, lose its lease while it waits, hide its wait from the start-lag metric, outlive stop().
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client } from '../../src/client.ts';
import { FakeClock } from '../../src/clock.ts';
import { queueUpsert } from '../../src/store/queues.ts';
import { Worker, type WorkerOptions } from '../../src/worker/worker.ts';
import { createTestDatabase } from '../support/db.ts';
import { attemptsOf, deferred, jobState, startWorker, waitUntil } from './support.ts';

const db = await createTestDatabase();
const client = new Client({ pool: db.pool });

interface Setup {
  worker: Worker;
  clock: FakeClock;
  blocker: number;
  buffered: number[];
  /** Jobs whose handler ran, in order. */
  ran: number[];
  unblock: () => void;
}

/**
 * A worker of one slot on `queue` with claimAhead 4: three quick jobs first (the buffer holds no more
 * than the queue started lately), then a blocker that holds the slot until `unblock`, then three
 * jobs that wait in the buffer (running in the database, under this worker's lease). Room for four,
 * not three: a by-id claim of the blocker that lost it to the loop's poll may still hold its place as
 * the three arrive, so the loop claims two, and with a buffer of three the one place left is less
 * than the half-buffer a refill waits for (seen once in CI as a setup timeout).
 */
async function setup(queue: string, options: Partial<WorkerOptions> = {}): Promise<Setup> {
  const clock = new FakeClock(new Date());
  const ran: number[] = [];
  const gate = deferred();
  const worker = await startWorker(
    db,
    {
      quick: (ctx) => {
        ran.push(ctx.jobId);
        return Promise.resolve();
      },
      block: async (ctx) => {
        ran.push(ctx.jobId);
        await gate.promise;
      },
    },
    { queues: [{ name: queue, concurrency: 1, claimAhead: 4 }], clock, ...options },
  );
  const warm = await client.jobs.enqueueMany(Array.from({ length: 3 }, () => ({ queue, kind: 'quick' })));
  await waitUntil('warm-up done', () => Promise.resolve(warm.every((j) => ran.includes(j.id))));
  const blocker = (await client.jobs.enqueue({ queue, kind: 'block' })).id;
  await waitUntil('blocker running', () => Promise.resolve(ran.includes(blocker)));
  const buffered = (
    await client.jobs.enqueueMany(Array.from({ length: 3 }, () => ({ queue, kind: 'quick' })))
  ).map((j) => j.id);
  await waitUntil('three jobs buffered', async () => {
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs WHERE id = ANY ($1) AND state = 'running' AND lease_owner = $2`,
      [buffered, worker.id],
    );
    // The database shows the claim before this worker has read its answer: wait for both.
    return rows[0]?.n === 3 && worker.bufferedCount === 3;
  });
  assert.equal(worker.runningCount, 1, 'the buffered jobs hold no slot');
  return { worker, clock, blocker, buffered, ran, unblock: gate.resolve };
}

test('a buffered job is never run after its cancel, by NOTIFY or by the lease renewal', async () => {
  // Renewals every second: the missed cancel is reported within one, and a stalled machine (CI ran
  // this file beside others at load ~10) does not reap the buffered jobs before they are counted.
  const s = await setup('ahead-cancel', { leaseMs: 3000 });
  const [byNotify, byRenewal, kept] = s.buffered as [number, number, number];
  await client.jobs.cancel(byNotify);
  // A cancel whose NOTIFY was missed: only the lease renewal's report can tell the worker.
  await db.pool.query('UPDATE jobs SET cancel_requested_at = now() WHERE id = $1', [byRenewal]);
  await waitUntil('both recorded cancelled', async () => {
    const states = await Promise.all([byNotify, byRenewal].map((id) => jobState(db.pool, id)));
    return states.every((state) => state === 'cancelled');
  });
  s.unblock();
  await waitUntil('the third ran', async () => (await jobState(db.pool, kept)) === 'succeeded');
  await waitUntil('blocker done', async () => (await jobState(db.pool, s.blocker)) === 'succeeded');
  assert.ok(!s.ran.includes(byNotify) && !s.ran.includes(byRenewal), `ran: ${s.ran.join(', ')}`);
  for (const id of [byNotify, byRenewal]) {
    assert.deepEqual(
      (await attemptsOf(db.pool, id)).map((a) => a.outcome),
      ['cancelled'],
    );
  }
});

test("a buffered job's lease is renewed while it waits: three leases long, never reaped", async () => {
  // The worker's own maintenance reaps expired leases every 50 ms beside it.
  const s = await setup('ahead-lease', { leaseMs: 600 });
  await waitUntil(
    'the buffered jobs waited three leases',
    async () => {
      const { rows } = await db.pool.query<{ waited: boolean; live: boolean }>(
        `SELECT bool_and(now() - started_at > interval '1800 ms') AS waited,
                bool_and(state = 'running' AND lease_expires_at > now()) AS live
         FROM jobs WHERE id = ANY ($1)`,
        [s.buffered],
      );
      assert.equal(rows[0]?.live, true, 'a buffered job lost its lease');
      return rows[0]?.waited === true;
    },
    20_000,
  );
  s.unblock();
  for (const id of s.buffered) {
    await waitUntil('succeeded', async () => (await jobState(db.pool, id)) === 'succeeded');
    assert.deepEqual(
      (await attemptsOf(db.pool, id)).map((a) => [a.attempt, a.outcome, a.worker]),
      [[1, 'succeeded', s.worker.id]],
    );
  }
});

test('the start-lag metric counts the wait in the buffer: measured at the start, not at the claim', async () => {
  const s = await setup('ahead-lag');
  s.clock.advance(60_000);
  s.unblock();
  for (const id of s.buffered) await waitUntil('ran', () => Promise.resolve(s.ran.includes(id)));
  const [metrics] = s.worker.metrics();
  assert.ok((metrics?.startLagMs.max ?? 0) >= 60_000, JSON.stringify(metrics?.startLagMs));
  assert.ok((metrics?.startLagMs.p50 ?? Infinity) < 60_000, 'the jobs that never waited show no wait');
});

test('stop() hands the buffered jobs back at once, as they were before the claim, while a handler still runs', async () => {
  const s = await setup('ahead-stop', { shutdownGraceMs: 60_000 });
  const stopped = s.worker.stop();
  await waitUntil('handed back', async () => {
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs
       WHERE id = ANY ($1) AND state = 'available' AND attempt = 0 AND lease_owner IS NULL AND started_at IS NULL`,
      [s.buffered],
    );
    return rows[0]?.n === 3;
  });
  assert.equal(await jobState(db.pool, s.blocker), 'running', 'before the running handler finished');
  for (const id of s.buffered) assert.deepEqual(await attemptsOf(db.pool, id), [], 'no attempt recorded');
  s.unblock();
  await stopped;
  assert.ok(!s.buffered.some((id) => s.ran.includes(id)));
});

test('a limit set while jobs wait in the buffer sends them back instead of starting them past it', async () => {
  const s = await setup('ahead-limit', { leaseMs: 60_000 });
  await queueUpsert(db.pool, 'ahead-limit', { maxRunning: 1 });
  await waitUntil('handed back', async () => {
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs WHERE id = ANY ($1) AND state = 'available'`,
      [s.buffered],
    );
    return rows[0]?.n === 3;
  });
  s.unblock();
  for (const id of s.buffered)
    await waitUntil('ran', async () => (await jobState(db.pool, id)) === 'succeeded');
});

test('claimAhead must be an integer ≥ 0, named in the error', () => {
  assert.throws(
    () =>
      new Worker({
        pool: db.pool,
        connectionString: db.url,
        handlers: {},
        queues: [{ name: 'q', concurrency: 1, claimAhead: 1.5 }],
      }),
    /queues\.q\.claimAhead: must be an integer ≥ 0, got 1\.5/,
  );
});
