/**
 * The source document's failure stories for workers, with real `tidemark worker` processes killed
 * by SIGKILL, asserted on what the database holds afterwards: nothing lost, nothing duplicated.
 * Timings are scaled down through flags (leases of 1 s, polls of 100 ms).
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Client } from '../../src/client.ts';
import { queueUpsert } from '../../src/store/queues.ts';
import { createTestDatabase } from '../support/db.ts';
import { spawnTidemark, type TidemarkProcess } from '../support/processes.ts';
import { attemptsOf, jobState, waitUntil } from './support.ts';

const db = await createTestDatabase();
const client = new Client({ pool: db.pool });
await db.pool.query('CREATE TABLE aborts (job_id bigint, reason text, at timestamptz)');
const dir = await mkdtemp(join(tmpdir(), 'tidemark-worker-stories-'));
after(() => rm(dir, { recursive: true, force: true }));

const HANDLERS = 'test/worker/fixtures/handlers.ts';

async function startWorker(
  queue: string,
  extra: string[] = [],
): Promise<{ proc: TidemarkProcess; id: string }> {
  const proc = spawnTidemark(
    [
      'worker',
      '--handlers',
      HANDLERS,
      '--queue',
      `${queue}:4`,
      '--lease-ms',
      '1000',
      '--poll-ms',
      '100',
      ...extra,
    ],
    { env: { DATABASE_URL: db.url, TIDEMARK_LOG_LEVEL: 'warn' } },
  );
  const [, id] = await proc.waitFor(/worker (\S+) ready/, 60_000);
  assert.ok(id !== undefined);
  return { proc, id };
}

test('story 1: killed after the side effect, before the ack: re-delivered; the dedupe helper records the effect once', async () => {
  await queueUpsert(db.pool, 'story1', { backoffBaseMs: 10, backoffMaxMs: 10 });
  const file = join(dir, 'effects.log');
  const deduped = await client.jobs.enqueue({
    queue: 'story1',
    kind: 'effect',
    payload: { file, dedupe: true },
  });
  const plain = await client.jobs.enqueue({
    queue: 'story1',
    kind: 'effect',
    payload: { file, dedupe: false },
  });

  const a = await startWorker('story1');
  await a.proc.waitFor(new RegExp(`effect-done ${deduped.id} attempt 1`));
  await a.proc.waitFor(new RegExp(`effect-done ${plain.id} attempt 1`));
  await a.proc.kill('SIGKILL');
  assert.equal(await jobState(db.pool, deduped.id), 'running', 'never acknowledged');

  const b = await startWorker('story1');
  await waitUntil('both succeeded', async () => {
    const states = await Promise.all([jobState(db.pool, deduped.id), jobState(db.pool, plain.id)]);
    return states.every((s) => s === 'succeeded');
  });
  await b.proc.kill('SIGTERM');

  const lines = (await readFile(file, 'utf8')).trim().split('\n');
  const effectsOf = (id: number): string[] => lines.filter((l) => l.startsWith(`${id} `));
  assert.deepEqual(
    effectsOf(deduped.id).map((l) => l.split(' pid')[0]),
    [`${deduped.id} attempt 1`],
    'with the dedupe helper: one effect, although the handler ran twice',
  );
  assert.deepEqual(
    effectsOf(plain.id).map((l) => l.split(' pid')[0]),
    [`${plain.id} attempt 1`, `${plain.id} attempt 2`],
    'without it: two effects (at-least-once)',
  );
  for (const id of [deduped.id, plain.id]) {
    assert.deepEqual(
      (await attemptsOf(db.pool, id)).map((x) => [x.attempt, x.outcome, x.worker]),
      [
        [1, 'lease_lost', a.id],
        [2, 'succeeded', b.id],
      ],
    );
  }
  const { rows } = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM jobs WHERE queue = 'story1'`,
  );
  assert.equal(rows[0]?.n, 2, 'no job was duplicated');
});

test('story 3: a dead worker loses no job: reaped and finished elsewhere; attempts are capped and the dead letter keeps the history', async () => {
  await queueUpsert(db.pool, 'story3', { backoffBaseMs: 10, backoffMaxMs: 10 });
  const recovers = await client.jobs.enqueue({
    queue: 'story3',
    kind: 'hang',
    payload: { hangOn: [1] },
    maxAttempts: 3,
  });
  const doomed = await client.jobs.enqueue({
    queue: 'story3',
    kind: 'hang',
    payload: { hangOn: [1, 2, 3] },
    maxAttempts: 2,
  });

  const a = await startWorker('story3');
  await a.proc.waitFor(new RegExp(`started ${recovers.id} attempt 1`));
  await a.proc.waitFor(new RegExp(`started ${doomed.id} attempt 1`));
  await a.proc.kill('SIGKILL');

  const b = await startWorker('story3');
  await b.proc.waitFor(new RegExp(`started ${doomed.id} attempt 2`), 20_000);
  await waitUntil(
    'recovered job succeeded',
    async () => (await jobState(db.pool, recovers.id)) === 'succeeded',
  );
  await b.proc.kill('SIGKILL');

  // A third worker's reaper finds the doomed job's second lease expired with no attempts left.
  const c = await startWorker('story3');
  await waitUntil('doomed job dead', async () => (await jobState(db.pool, doomed.id)) === 'dead');
  await c.proc.kill('SIGTERM');

  assert.deepEqual(
    (await attemptsOf(db.pool, recovers.id)).map((x) => [x.outcome, x.worker]),
    [
      ['lease_lost', a.id],
      ['succeeded', b.id],
    ],
  );
  const [dead] = await client.jobs.deadLetter({ queue: 'story3' });
  assert.equal(dead?.id, doomed.id);
  assert.equal(dead?.attempt, 2, 'capped at max attempts');
  assert.match(
    dead?.lastError ?? '',
    new RegExp(`lease expired: worker ${b.id.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`),
  );
  assert.deepEqual(
    dead?.attempts.map((x) => [x.attempt, x.outcome, x.worker]),
    [
      [1, 'lease_lost', a.id],
      [2, 'lease_lost', b.id],
    ],
  );
  assert.doesNotMatch(c.proc.stdout, new RegExp(`started ${doomed.id} attempt 3`), 'no third attempt');
});

test('cancel reaches a running handler in another process within 1 s (NOTIFY, not the next heartbeat)', async () => {
  // Heartbeats every 10 s and polls every 10 s: only the NOTIFY can deliver the cancel in time.
  const w = await startWorker('cancel', ['--lease-ms', '30000', '--poll-ms', '10000']);
  const job = await client.jobs.enqueue({ queue: 'cancel', kind: 'wait' });
  await w.proc.waitFor(new RegExp(`waiting ${job.id}`));
  await client.jobs.cancel(job.id);
  await waitUntil('cancelled', async () => (await jobState(db.pool, job.id)) === 'cancelled', 10_000);
  const { rows } = await db.pool.query<{ reason: string; delay_ms: number }>(
    `SELECT a.reason, (extract(epoch FROM a.at - j.cancel_requested_at) * 1000)::float8 AS delay_ms
     FROM aborts a JOIN jobs j ON j.id = a.job_id WHERE a.job_id = $1`,
    [job.id],
  );
  assert.equal(rows.length, 1);
  assert.equal(rows[0]?.reason, 'JobCancelledError');
  assert.ok(
    (rows[0]?.delay_ms ?? Infinity) < 1000,
    `cancel took ${rows[0]?.delay_ms} ms to reach the handler`,
  );
  assert.deepEqual(
    (await attemptsOf(db.pool, job.id)).map((x) => x.outcome),
    ['cancelled'],
  );
  await w.proc.kill('SIGTERM');
});

test('SIGTERM: running handlers finish within the grace period; what is left is released, not failed', async () => {
  const w = await startWorker('term', ['--shutdown-grace-ms', '700', '--timeout-grace-ms', '200']);
  const quick = await client.jobs.enqueue({ queue: 'term', kind: 'pause', payload: { ms: 300 } });
  const endless = await client.jobs.enqueue({ queue: 'term', kind: 'wait' });
  await w.proc.waitFor(new RegExp(`pausing ${quick.id}`));
  await w.proc.waitFor(new RegExp(`waiting ${endless.id}`));
  const exit = await w.proc.kill('SIGTERM');
  assert.equal(exit.code, 0, w.proc.stderr);
  assert.match(w.proc.stdout, /worker stopped/);
  assert.deepEqual(
    (await attemptsOf(db.pool, quick.id)).map((x) => x.outcome),
    ['succeeded'],
  );
  const back = await client.jobs.get(endless.id);
  assert.equal(back?.state, 'available', 'handed back for another worker');
  assert.equal(back?.leaseOwner, null);
  assert.deepEqual(
    back?.attempts.map((x) => [x.outcome, x.worker]),
    [['released', w.id]],
  );
  const { rows } = await db.pool.query<{ reason: string }>('SELECT reason FROM aborts WHERE job_id = $1', [
    endless.id,
  ]);
  assert.deepEqual(rows, [{ reason: 'WorkerShutdownError' }]);
});

test("a worker whose clock is 5 minutes behind keeps its leases: expiry is the database's clock", async () => {
  const proc = spawnTidemark(
    ['worker', '--handlers', HANDLERS, '--queue', 'skew:2', '--lease-ms', '1000', '--poll-ms', '100'],
    { env: { DATABASE_URL: db.url, TIDEMARK_LOG_LEVEL: 'warn' }, faketime: '-5m' },
  );
  const [, skewedId] = await proc.waitFor(/worker (\S+) ready/, 60_000);
  // A job that outlives its 1 s lease three times over, beside a correctly-clocked reaper.
  const job = await client.jobs.enqueue({ queue: 'skew', kind: 'pause', payload: { ms: 3000 } });
  await proc.waitFor(new RegExp(`pausing ${job.id}`));
  const reaper = await startWorker('skew-reaper-only');
  await waitUntil('succeeded', async () => (await jobState(db.pool, job.id)) === 'succeeded', 20_000);
  assert.deepEqual(
    (await attemptsOf(db.pool, job.id)).map((x) => [x.outcome, x.worker]),
    [['succeeded', skewedId]],
  );
  assert.equal((await proc.kill('SIGTERM')).code, 0);
  await reaper.proc.kill('SIGTERM');
});
