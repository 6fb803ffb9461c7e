import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { Client } from '../../src/client.ts';
import { queueGet } from '../../src/store/queues.ts';
import { applyQueueFlags, parseConfigFile } from '../../src/worker/config.ts';
import { createTestDatabase } from '../support/db.ts';
import { spawnTidemark } from '../support/processes.ts';
import { jobState, waitUntil } from './support.ts';

const db = await createTestDatabase();
const client = new Client({ pool: db.pool });
const dir = await mkdtemp(join(tmpdir(), 'tidemark-worker-cli-'));
await chmod(dir, 0o755);
after(() => rm(dir, { recursive: true, force: true }));
const HANDLERS = 'test/worker/fixtures/handlers.ts';
const env = { DATABASE_URL: db.url, TIDEMARK_LOG_LEVEL: 'warn' };

test('config files and --queue flags: local concurrency and cluster-wide settings, bad input named', () => {
  const config = parseConfigFile({
    pollMs: 250,
    queues: { mail: { concurrency: 3, claimAhead: 50, maxRunning: 20, timeoutMs: 5000 }, reports: {} },
  });
  assert.equal(config.pollMs, 250);
  assert.deepEqual(config.queues, [
    { name: 'mail', concurrency: 3, claimAhead: 50, settings: { maxRunning: 20, timeoutMs: 5000 } },
    { name: 'reports', concurrency: 10, settings: {} },
  ]);
  const merged = applyQueueFlags(config, ['reports:1', 'extra']);
  assert.deepEqual(
    merged.queues.map((q) => [q.name, q.concurrency]),
    [
      ['mail', 3],
      ['reports', 1],
      ['extra', 10],
    ],
  );
  assert.throws(
    () => parseConfigFile({ queues: { mail: { concurrency: 0 } } }),
    /config\.queues\.mail\.concurrency: must be an integer ≥ 1/,
  );
  assert.throws(
    () => parseConfigFile({ queues: { mail: { claimAhead: -1 } } }),
    /config\.queues\.mail\.claimAhead: must be an integer ≥ 0, got -1/,
  );
  assert.throws(
    () => parseConfigFile({ queues: { mail: { retries: 3 } } }),
    /config\.queues\.mail\.retries: unknown setting/,
  );
  assert.throws(
    () => parseConfigFile({ queues: { 'bad name': {} } }),
    /config\.queues\.bad name: 'bad name' is not a valid queue name/,
  );
  assert.throws(() => parseConfigFile({ lease: 5 }), /config\.lease: unknown setting/);
  assert.throws(() => applyQueueFlags(config, ['mail:x']), /--queue mail:x: concurrency: must be an integer/);
});

test('tidemark worker refuses bad input with exit code 2 and a message naming it', async () => {
  const noHandlers = spawnTidemark(['worker'], { env });
  assert.equal((await noHandlers.exited).code, 2);
  assert.match(noHandlers.stderr, /--handlers: required/);

  const bad = join(dir, 'bad.json');
  await writeFile(bad, JSON.stringify({ queues: { mail: { maxAttempts: 0 } } }));
  const badConfig = spawnTidemark(['worker', '--handlers', HANDLERS, '--config', bad], { env });
  assert.equal((await badConfig.exited).code, 2);
  assert.match(
    badConfig.stderr,
    /config\.queues\.mail\.maxAttempts: must be an integer from 1 to 2147483647, got 0/,
  );
  assert.equal(await queueGet(db.pool, 'mail'), undefined, 'nothing written');
});

test("tidemark worker --config writes the queue's cluster-wide settings and runs its jobs", async () => {
  const file = join(dir, 'worker.json');
  await writeFile(
    file,
    JSON.stringify({ queues: { configured: { concurrency: 2, maxAttempts: 6, backoffBaseMs: 50 } } }),
  );
  const worker = spawnTidemark(['worker', '--handlers', HANDLERS, '--config', file], { env });
  await worker.waitFor(/ready: configured\(2\)/, 60_000);
  const queue = await queueGet(db.pool, 'configured');
  assert.equal(queue?.maxAttempts, 6);
  assert.equal(queue?.backoffBaseMs, 50);
  assert.equal(queue?.maxRunning, null);
  const [change, ...older] = await client.queues.changes('configured');
  assert.deepEqual(older, []);
  assert.equal(change?.change, 'update');
  assert.match(change.by, /^worker \S+:\d+:/, 'recorded as made by the worker that started with them');
  assert.deepEqual(
    [change.before.maxAttempts, change.after.maxAttempts, change.after.backoffBaseMs],
    [4, 6, 50],
  );
  const job = await client.jobs.enqueue({ queue: 'configured', kind: 'pause', payload: { ms: 1 } });
  assert.equal((await client.jobs.get(job.id))?.maxAttempts, 6, "the queue's default applies to new jobs");
  await waitUntil('succeeded', async () => (await jobState(db.pool, job.id)) === 'succeeded');
  assert.equal((await worker.kill('SIGTERM')).code, 0);
});

test('tidemark dev --handlers runs a worker role beside the others', async () => {
  const dev = spawnTidemark(['dev', '--data-dir', dir, '--handlers', HANDLERS, '--queue', 'devq:2'], {
    env: { ...env, TIDEMARK_API_PORT: '0' },
  });
  await dev.waitFor(/DATABASE_URL=/, 90_000);
  const job = await client.jobs.enqueue({ queue: 'devq', kind: 'pause', payload: { ms: 1 } });
  await waitUntil('succeeded', async () => (await jobState(db.pool, job.id)) === 'succeeded', 20_000);
  assert.equal((await dev.kill('SIGTERM')).code, 0, dev.stderr.slice(-2000));
});
