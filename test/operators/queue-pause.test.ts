/**
 * Queue pause and resume cluster-wide: a running `tidemark worker` claims nothing from a paused queue
 * (and finishes what it runs), claims again after resume; a library worker hands back what it had
 * claimed ahead; the HTTP pull API's claim skips the queue too. Every change is audited with who
 * made it, through the API, the CLI and the library alike.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client } from '../../src/client.ts';
import { createLogger } from '../../src/log.ts';
import { jobClaimBatch, jobClaimById } from '../../src/store/jobs.ts';
import { QueueInputError } from '../../src/worker/queue-settings.ts';
import { Worker } from '../../src/worker/worker.ts';
import { startTestApi } from '../api/support.ts';
import { spawnTidemark } from '../support/processes.ts';
import { jobState, waitUntil } from '../worker/support.ts';

const api = await startTestApi();
const client = new Client({ pool: api.db.pool });
const HANDLERS = 'test/worker/fixtures/handlers.ts';
const env = { DATABASE_URL: api.db.url, TIDEMARK_LOG_LEVEL: 'warn' };
const cliAuth = ['--url', api.url, '--token', api.tokens.admin];

async function states(ids: number[]): Promise<string[]> {
  return Promise.all(ids.map(async (id) => (await jobState(api.db.pool, id)) ?? 'gone'));
}

/** When the worker last heartbeated its registry row, by the database's clock. */
async function heartbeatAt(id: string): Promise<Date | undefined> {
  return (await client.workers.list()).find((w) => w.id === id)?.heartbeatAt;
}

test('a worker process claims nothing from a paused queue, finishes what it runs, and claims again on resume', async () => {
  const worker = spawnTidemark(
    [
      'worker',
      '--handlers',
      HANDLERS,
      '--queue',
      'pq:4',
      '--queue',
      'ctl:1',
      '--id',
      'w-pause',
      '--poll-ms',
      '100',
      '--registry-heartbeat-ms',
      '100',
    ],
    { env },
  );
  await worker.waitFor(/ready/);

  // A job running when the pause comes finishes.
  const long = await client.jobs.enqueue({ queue: 'pq', kind: 'pause', payload: { ms: 300 } });
  await worker.waitFor(new RegExp(`pausing ${long.id}\\n`));
  const paused = await api.call('POST', '/v1/queues/pq/pause');
  assert.equal(paused.status, 200, paused.text);
  assert.equal(paused.body.paused, true);
  assert.match(String(paused.body.pausedBy), /^token test admin \(/);
  await waitUntil(
    'the running job finished',
    async () => (await jobState(api.db.pool, long.id)) === 'succeeded',
  );

  const jobs = await client.jobs.enqueueMany(
    Array.from({ length: 5 }, () => ({ queue: 'pq', kind: 'pause', payload: { ms: 1 } })),
  );
  const ids = jobs.map((j) => j.id);
  // The worker is awake and claiming: jobs of another queue enqueued after these run, and its claim
  // loops have polled since (two registry heartbeats, each after at least one poll interval).
  const control = await client.jobs.enqueue({ queue: 'ctl', kind: 'pause', payload: { ms: 1 } });
  await waitUntil(
    'the control job ran',
    async () => (await jobState(api.db.pool, control.id)) === 'succeeded',
  );
  const seen = await heartbeatAt('w-pause');
  assert.ok(seen !== undefined);
  await waitUntil('two more heartbeats', async () => {
    const at = await heartbeatAt('w-pause');
    return at !== undefined && at.getTime() > seen.getTime() + 150;
  });
  assert.deepEqual(await states(ids), Array(5).fill('available'), 'nothing claimed while paused');

  const resume = spawnTidemark(['queue', 'resume', 'pq', ...cliAuth], { env });
  assert.equal((await resume.exited).code, 0, resume.stderr);
  assert.match(resume.stdout, /queue pq resumed/);
  await waitUntil('all ran after resume', async () => (await states(ids)).every((s) => s === 'succeeded'));
  worker.child.kill('SIGTERM');
  assert.equal((await worker.exited).code, 0);
});

test('a library worker hands back what it claimed ahead when its queue is paused', async () => {
  const release: (() => void)[] = [];
  const started: number[] = [];
  const worker = new Worker({
    connectionString: api.db.url,
    pool: api.db.pool,
    handlers: {
      block: (ctx) =>
        new Promise<void>((resolve) => {
          started.push(ctx.jobId);
          release.push(resolve);
        }),
    },
    queues: [{ name: 'ahead', concurrency: 1, claimAhead: 100 }],
    id: 'w-ahead',
    pollMs: 50,
    registryHeartbeatMs: 50,
    log: createLogger('test-worker'),
  });
  await worker.start();
  try {
    const first = await client.jobs.enqueue({ queue: 'ahead', kind: 'block', payload: {} });
    await waitUntil('first started', () => Promise.resolve(started.length === 1));
    const rest = await client.jobs.enqueueMany(
      Array.from({ length: 10 }, () => ({ queue: 'ahead', kind: 'block', payload: {} })),
    );
    await waitUntil('a job claimed ahead', () => Promise.resolve(worker.bufferedCount > 0));
    await client.queues.pause('ahead');
    await waitUntil('the buffer handed back', () => Promise.resolve(worker.bufferedCount === 0));
    // Only the job that was running is still claimed; the buffered one is available again.
    await waitUntil('the handed-back job available', async () => {
      const { rows } = await api.db.pool.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM jobs WHERE queue = 'ahead' AND state = 'running'`,
      );
      return rows[0]?.n === 1;
    });

    release.shift()?.();
    await waitUntil(
      'the running job finished',
      async () => (await jobState(api.db.pool, first.id)) === 'succeeded',
    );
    const seen = await heartbeatAt('w-ahead');
    assert.ok(seen !== undefined);
    await waitUntil('two more heartbeats', async () => {
      const at = await heartbeatAt('w-ahead');
      return at !== undefined && at.getTime() > seen.getTime() + 75;
    });
    assert.equal(started.length, 1, 'no job started while paused');

    await client.queues.resume('ahead');
    await waitUntil('the next job started', () => Promise.resolve(started.length === 2));
    // Release every job as it starts until all ran.
    await waitUntil('all ran', async () => {
      release.splice(0).forEach((r) => r());
      return (await states(rest.map((j) => j.id))).every((s) => s === 'succeeded');
    });
  } finally {
    release.splice(0).forEach((r) => r());
    await worker.stop();
  }
});

test("the HTTP pull API's claim skips a paused queue", async () => {
  const job = await client.jobs.enqueue({ queue: 'pull', kind: 'k', payload: {} });
  await client.queues.pause('pull');
  const claim = () =>
    api.call<{ jobs: { id: number }[] }>('POST', '/v1/workers/claim', {
      body: { worker: 'remote-1', queues: ['pull'], limit: 10 },
    });
  const none = await claim();
  assert.equal(none.status, 200, none.text);
  assert.deepEqual(none.body.jobs, []);
  await client.queues.resume('pull');
  assert.deepEqual(
    (await claim()).body.jobs.map((j) => j.id),
    [job.id],
  );
});

test('the claim statements themselves skip a paused queue, whoever calls them', async () => {
  const job = await client.jobs.enqueue({ queue: 'raw', kind: 'k', payload: {} });
  await client.queues.pause('raw');
  const base = { queue: 'raw', owner: 'raw-1', leaseMs: 10_000 };
  const batch = (limited: boolean) =>
    jobClaimBatch(api.db.pool, { ...base, limit: 10, tenantCursor: '', limited });
  assert.deepEqual(await batch(false), []);
  assert.deepEqual(await batch(true), []);
  assert.deepEqual(await jobClaimById(api.db.pool, { ...base, id: job.id }), []);
  await client.queues.resume('raw');
  assert.deepEqual(
    (await jobClaimById(api.db.pool, { ...base, id: job.id })).map((j) => j.id),
    [job.id],
  );
});

test('every pause, resume and settings change is recorded with who made it, before and after', async () => {
  const patched = await api.call('PATCH', '/v1/queues/audited', { body: { maxAttempts: 7 } });
  assert.equal(patched.status, 201, patched.text);
  assert.equal((await api.call('POST', '/v1/queues/audited/pause')).status, 200);
  assert.equal((await api.call('POST', '/v1/queues/audited/pause')).status, 200, 'pausing again is a no-op');
  const set = spawnTidemark(
    ['queue', 'set', 'audited', '--max-running', '5', '--timeout-ms', 'none', ...cliAuth],
    { env },
  );
  assert.equal((await set.exited).code, 0, set.stderr);
  assert.match(set.stdout, /maxRunning\s+5/);
  await new Client({ pool: api.db.pool, changedBy: 'ops-bot' }).queues.resume('audited');
  await client.queues.update('audited', { backoffBaseMs: 10, backoffMaxMs: 20 });
  await client.queues.update('audited', { backoffBaseMs: 10 }); // no change: no row

  // Refused input changes nothing and records nothing, from the library and the API alike.
  await assert.rejects(
    // @ts-expect-error -- an unknown field, as a JavaScript caller could pass it
    client.queues.update('audited', { maxAtempts: 2 }),
    (e: unknown) => e instanceof QueueInputError && e.field === 'settings.maxAtempts',
  );
  await assert.rejects(
    client.queues.update('audited', { backoffMaxMs: 5 }),
    (e: unknown) => e instanceof QueueInputError && e.field === 'settings.backoffMaxMs',
  );
  const bad = await api.call('PATCH', '/v1/queues/audited', { body: { backoffMaxMs: 5 } });
  assert.equal(bad.status, 400);
  assert.match(bad.text, /body\.backoffMaxMs/);

  const reply = await api.call<{
    changes: {
      at: string;
      by: string;
      change: string;
      before: Record<string, unknown>;
      after: Record<string, unknown>;
    }[];
  }>('GET', '/v1/queues/audited/changes');
  assert.equal(reply.status, 200, reply.text);
  const token = /^token test admin \([0-9a-f-]{36}\)$/;
  const rows = reply.body.changes.reverse();
  assert.deepEqual(
    rows.map((c) => c.change),
    ['update', 'pause', 'update', 'resume', 'update'],
  );
  assert.match(rows[0]?.by ?? '', token);
  assert.deepEqual([rows[0]?.before.maxAttempts, rows[0]?.after.maxAttempts], [4, 7]);
  assert.match(rows[1]?.by ?? '', token);
  assert.deepEqual([rows[1]?.before.paused, rows[1]?.after.paused], [false, true]);
  assert.match(rows[2]?.by ?? '', token, 'the CLI acts through the API with its token');
  assert.deepEqual([rows[2]?.before.maxRunning, rows[2]?.after.maxRunning], [null, 5]);
  assert.equal(rows[3]?.by, 'ops-bot');
  assert.equal(rows[4]?.by, 'library');
  assert.deepEqual(rows[4]?.after, {
    maxRunning: 5,
    maxAttempts: 7,
    backoffBaseMs: 10,
    backoffMaxMs: 20,
    timeoutMs: null,
    paused: false,
  });
  for (const c of rows) assert.ok(!Number.isNaN(Date.parse(c.at)));

  const ls = spawnTidemark(['queue', 'changes', 'audited', ...cliAuth], { env });
  assert.equal((await ls.exited).code, 0, ls.stderr);
  assert.match(ls.stdout, /pause\s+paused false→true/);
  const list = await client.queues.list();
  assert.deepEqual(
    list.filter((q) => q.name === 'audited').map((q) => [q.paused, q.maxRunning]),
    [[false, 5]],
  );
});
