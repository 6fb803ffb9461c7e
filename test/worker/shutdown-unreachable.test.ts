/**
 * SIGTERM while the database is unreachable (a TCP proxy between worker and PostgreSQL holds every
 * byte, as a partition does): the worker cannot hand back what it holds, so it says what it could
 * not write and exits instead of retrying for minutes: within its shutdown grace (here used up by a
 * handler that never finishes), 1 s of hand-back after it and 1 s for the process to let go. The
 * database then has what the log line said it would: the unwritten attempts are still leased to the
 * gone worker, for the reaper to hand back.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client } from '../../src/client.ts';
import { createTestDatabase } from '../support/db.ts';
import { spawnTidemark } from '../support/processes.ts';
import { TcpProxy } from '../support/tcp-proxy.ts';
import { jobState, waitUntil } from './support.ts';

const db = await createTestDatabase();
const client = new Client({ pool: db.pool });
const GRACE_MS = 2000;

test('SIGTERM with the database cut: exits within the shutdown grace, naming what it could not hand back', async (t) => {
  const proxy = await TcpProxy.start(db.url);
  const worker = spawnTidemark(
    [
      'worker',
      '--handlers',
      'test/worker/fixtures/handlers.ts',
      '--queue',
      'cut:4',
      '--shutdown-grace-ms',
      String(GRACE_MS),
      '--poll-ms',
      '200',
    ],
    { env: { DATABASE_URL: proxy.urlFor(db.url), TIDEMARK_LOG_LEVEL: 'info' } },
  );
  await worker.waitFor(/worker \S+ ready/, 60_000);
  const held = await client.jobs.enqueue({ queue: 'cut', kind: 'pause', payload: { ms: 600_000 } });
  await worker.waitFor(new RegExp(`pausing ${held.id}\\n`));
  // The cut holds the success write itself: a cut made once the handler had started raced its
  // 600 ms on a loaded machine, and a write already at the database was taken for unwritten.
  proxy.cutOn('tidemark_job_complete_outside_workflows');
  const done = await client.jobs.enqueue({ queue: 'cut', kind: 'pause', payload: { ms: 600 } });
  await worker.waitFor(new RegExp(`paused ${done.id}\\n`));
  await waitUntil('the success write held by the cut', () => Promise.resolve(proxy.isCut), 10_000);

  const t0 = performance.now();
  worker.child.kill('SIGTERM');
  const exit = await Promise.race([
    worker.exited,
    new Promise<'hung'>((r) => setTimeout(() => r('hung'), GRACE_MS + 15_000)),
  ]);
  const tookMs = performance.now() - t0;
  assert.notEqual(
    exit,
    'hung',
    `still running ${GRACE_MS + 15_000} ms after SIGTERM:\n${worker.stderr.slice(-3000)}`,
  );
  assert.ok(tookMs < GRACE_MS + 4000, `exited ${Math.round(tookMs)} ms after SIGTERM (grace ${GRACE_MS} ms)`);
  t.diagnostic(`exited ${Math.round(tookMs)} ms after SIGTERM (grace ${GRACE_MS} ms)`);
  const line = worker.stderr.split('\n').find((l) => l.includes('could not hand back'));
  assert.ok(line !== undefined, `no 'could not hand back' line:\n${worker.stderr.slice(-3000)}`);
  const logged = JSON.parse(line) as {
    msg: string;
    succeeded: number[];
    released: number[];
    failed: number[];
  };
  assert.deepEqual(logged.succeeded, [done.id]);
  assert.deepEqual(logged.released, [held.id]);
  assert.deepEqual(logged.failed, []);

  // What the line said was not written is not in the database: both attempts are still leased.
  // Read before the heal, which delivers the bytes the proxy held (the success the worker sent
  // into the cut among them) and may let that write land after all, as a late packet would.
  assert.equal(await jobState(db.pool, done.id), 'running');
  assert.equal(await jobState(db.pool, held.id), 'running');
  proxy.heal();
});
