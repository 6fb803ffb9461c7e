/**
 * Claim ahead with real `tidemark worker` processes (queues from a --config file with claimAhead
 * set), asserted on the database: a cluster-wide limit of 3 over 4 processes is never exceeded, and
 * SIGTERM hands every buffered job back within a second, while a handler still runs.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Client } from '../../src/client.ts';
import { createTestDatabase } from '../support/db.ts';
import { spawnTidemark, type TidemarkProcess } from '../support/processes.ts';
import { waitUntil } from './support.ts';

const db = await createTestDatabase();
const client = new Client({ pool: db.pool });
await db.pool.query(
  'CREATE TABLE runs (job_id bigint, attempt int, queue text, started_at timestamptz, finished_at timestamptz)',
);
const dir = await mkdtemp(join(tmpdir(), 'tidemark-claim-ahead-'));
after(() => rm(dir, { recursive: true, force: true }));

async function startWorker(
  queues: Record<string, object>,
  extra: string[] = [],
): Promise<{ proc: TidemarkProcess; id: string }> {
  const config = join(dir, `config-${Math.random().toString(36).slice(2)}.json`);
  await writeFile(config, JSON.stringify({ queues }));
  const proc = spawnTidemark(
    [
      'worker',
      '--handlers',
      'test/worker/fixtures/handlers.ts',
      '--config',
      config,
      '--poll-ms',
      '200',
      ...extra,
    ],
    { env: { DATABASE_URL: db.url, TIDEMARK_LOG_LEVEL: 'warn' } },
  );
  const [, id] = await proc.waitFor(/worker (\S+) ready/, 60_000);
  assert.ok(id !== undefined);
  return { proc, id };
}

test('a cluster-wide limit of 3 is never exceeded by 4 processes that claim ahead', async () => {
  const queues = { 'ahead-limited': { concurrency: 5, claimAhead: 50, maxRunning: 3 } };
  const workers = await Promise.all([0, 1, 2, 3].map(() => startWorker(queues)));
  const ids = (
    await client.jobs.enqueueMany(
      Array.from({ length: 60 }, () => ({ queue: 'ahead-limited', kind: 'sleep', payload: { ms: 50 } })),
    )
  ).map((j) => j.id);
  let sampledPeak = 0;
  await waitUntil(
    'all done',
    async () => {
      const { rows } = await db.pool.query<{ running: number; done: number }>(
        `SELECT count(*) FILTER (WHERE state = 'running')::int AS running,
                count(*) FILTER (WHERE state = 'succeeded')::int AS done
         FROM jobs WHERE id = ANY ($1)`,
        [ids],
      );
      sampledPeak = Math.max(sampledPeak, rows[0]?.running ?? 0);
      return rows[0]?.done === ids.length;
    },
    60_000,
  );
  await Promise.all(workers.map((w) => w.proc.kill('SIGTERM')));
  assert.ok(sampledPeak <= 3, `sampled ${sampledPeak} running (buffered jobs count as running)`);
  // The most handlers that ran at the same instant, from their recorded intervals.
  const { rows } = await db.pool.query<{ peak: number; runs: number; workers: number }>(
    `SELECT (SELECT coalesce(max(n), 0)::int FROM (
               SELECT sum(d) OVER (ORDER BY t, d) AS n FROM (
                 SELECT started_at AS t, 1 AS d FROM runs WHERE queue = 'ahead-limited'
                 UNION ALL SELECT finished_at, -1 FROM runs WHERE queue = 'ahead-limited') e) s) AS peak,
            (SELECT count(*)::int FROM runs WHERE queue = 'ahead-limited') AS runs,
            (SELECT count(DISTINCT lease_owner)::int FROM jobs WHERE id = ANY ($1)) AS workers`,
    [ids],
  );
  assert.equal(rows[0]?.peak, 3, 'the limit was reached and never exceeded');
  assert.equal(rows[0]?.runs, 60, 'each job ran exactly once');
  assert.ok((rows[0]?.workers ?? 0) >= 2, 'the work was spread over several processes');
});

test('SIGTERM hands every buffered job back within a second, before the running handlers finish', async () => {
  const w = await startWorker({ 'ahead-term': { concurrency: 2, claimAhead: 20 } }, [
    '--shutdown-grace-ms',
    '60000',
  ]);
  // Quick jobs first: the buffer holds no more than the queue started in the last second or two.
  const quick = await client.jobs.enqueueMany(
    Array.from({ length: 30 }, () => ({ queue: 'ahead-term', kind: 'sleep', payload: { ms: 1 } })),
  );
  const blockers = await client.jobs.enqueueMany(
    Array.from({ length: 2 }, () => ({ queue: 'ahead-term', kind: 'sleep', payload: { ms: 60_000 } })),
  );
  const waiting = (
    await client.jobs.enqueueMany(
      Array.from({ length: 20 }, () => ({ queue: 'ahead-term', kind: 'sleep', payload: { ms: 1 } })),
    )
  ).map((j) => j.id);
  const held = async (): Promise<number> => {
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM jobs WHERE id = ANY ($1) AND state = 'running' AND lease_owner = $2`,
      [waiting, w.id],
    );
    return rows[0]?.n ?? 0;
  };
  await waitUntil('both blockers run', async () => {
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM runs WHERE job_id = ANY ($1)`,
      [blockers.map((j) => j.id)],
    );
    return rows[0]?.n === 2;
  });
  await waitUntil('jobs buffered behind them', async () => (await held()) >= 5);
  assert.equal(quick.length, 30);
  const { rows: ran } = await db.pool.query<{ n: number }>(
    'SELECT count(*)::int AS n FROM runs WHERE job_id = ANY ($1)',
    [waiting],
  );
  assert.equal(ran[0]?.n, 0, 'the buffered jobs did not run: both slots are held');
  const buffered = await held();
  const t0 = Date.now();
  w.proc.child.kill('SIGTERM');
  await waitUntil('every buffered job handed back', async () => (await held()) === 0, 1000);
  const ms = Date.now() - t0;
  const { rows } = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM jobs WHERE id = ANY ($1) AND state = 'available' AND attempt = 0`,
    [waiting],
  );
  assert.ok((rows[0]?.n ?? 0) >= buffered, `${buffered} buffered, ${rows[0]?.n} back as they were`);
  assert.equal(w.proc.child.exitCode, null, `handed back in ${ms} ms while the blockers still run`);
  await w.proc.kill('SIGKILL');
});
