/**
 * The worker registry with real processes: two `tidemark worker`s register and show the job each
 * holds; one SIGKILLed becomes `lost` after its missed heartbeats, one given SIGTERM is `stopped`;
 * the maintenance role prunes both after `retention.workers`. Read through the API, the CLI and the
 * library, which must agree.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client } from '../../src/client.ts';
import { FakeClock } from '../../src/clock.ts';
import { createLogger } from '../../src/log.ts';
import { Maintenance } from '../../src/maintenance/maintenance.ts';
import { VERSION } from '../../src/version.ts';
import { Worker } from '../../src/worker/worker.ts';
import { startTestApi } from '../api/support.ts';
import { spawnTidemark } from '../support/processes.ts';
import { waitUntil } from '../worker/support.ts';

const api = await startTestApi();
const client = new Client({ pool: api.db.pool });
const HANDLERS = 'test/worker/fixtures/handlers.ts';
const env = { DATABASE_URL: api.db.url, TIDEMARK_LOG_LEVEL: 'warn' };

interface WorkerJson {
  id: string;
  host: string;
  pid: number;
  version: string;
  startedAt: string;
  heartbeatAt: string;
  stoppedAt: string | null;
  state: string;
  queues: { name: string; concurrency: number; running: number }[];
  running: {
    jobId: number;
    queue: string;
    kind: string;
    tenantId: string;
    startedAt: string;
    progress: unknown;
  }[];
}

async function listed(): Promise<WorkerJson[]> {
  const reply = await api.call<{ workers: WorkerJson[] }>('GET', '/v1/workers');
  assert.equal(reply.status, 200, reply.text);
  return reply.body.workers;
}

function startWorker(id: string) {
  return spawnTidemark(
    [
      'worker',
      '--handlers',
      HANDLERS,
      '--queue',
      `reg-${id}:2`,
      '--id',
      id,
      '--registry-heartbeat-ms',
      '200',
      '--poll-ms',
      '100',
    ],
    { env },
  );
}

test('workers register, show what they run, become lost when killed and stopped when stopped; pruned later', async () => {
  const killed = startWorker('w-killed');
  const stopped = startWorker('w-stopped');
  await killed.waitFor(/ready/);
  await stopped.waitFor(/ready/);
  const [a, b] = await client.jobs.enqueueMany([
    { queue: 'reg-w-killed', kind: 'hang', payload: { hangOn: [1] } },
    { queue: 'reg-w-stopped', kind: 'hang', payload: { hangOn: [1] } },
  ]);
  assert.ok(a !== undefined && b !== undefined);

  // Both running, each holding its job, its slot counted at a heartbeat.
  const running = await waitUntil('both workers running their job', async () => {
    const ws = await listed();
    const ok = ws.length === 2 && ws.every((w) => w.state === 'running' && w.queues[0]?.running === 1);
    return ok ? ws : undefined;
  });
  const byId = new Map(running.map((w) => [w.id, w]));
  const k = byId.get('w-killed');
  assert.ok(k !== undefined);
  assert.equal(k.pid, killed.pid);
  assert.equal(k.version, VERSION);
  assert.equal(k.stoppedAt, null);
  assert.deepEqual(k.queues, [{ name: 'reg-w-killed', concurrency: 2, running: 1 }]);
  assert.deepEqual(
    k.running.map((j) => [j.jobId, j.queue, j.kind, j.tenantId, j.progress]),
    [[a.id, 'reg-w-killed', 'hang', 'default', null]],
  );
  assert.deepEqual(
    byId.get('w-stopped')?.running.map((j) => j.jobId),
    [b.id],
  );

  // The CLI prints the same list; the library's is the same rows.
  const cli = spawnTidemark(['workers', 'ls', '--json', '--url', api.url, '--token', api.tokens.admin], {
    env,
  });
  assert.equal((await cli.exited).code, 0, cli.stderr);
  const cliWorkers = (JSON.parse(cli.stdout) as { workers: WorkerJson[] }).workers;
  assert.deepEqual(
    cliWorkers.map((w) => [w.id, w.state, w.pid]).sort(),
    running.map((w) => [w.id, w.state, w.pid]).sort(),
  );
  const lib = await client.workers.list();
  assert.deepEqual(lib.map((w) => w.id).sort(), ['w-killed', 'w-stopped']);

  await killed.kill('SIGKILL');
  stopped.child.kill('SIGTERM');
  assert.equal((await stopped.exited).code, 0);
  const after = await waitUntil('the killed worker lost, the other stopped', async () => {
    const ws = new Map((await listed()).map((w) => [w.id, w]));
    return ws.get('w-killed')?.state === 'lost' && ws.get('w-stopped')?.state === 'stopped' ? ws : undefined;
  });
  const s = after.get('w-stopped');
  assert.ok(s?.stoppedAt !== null && s?.stoppedAt !== undefined);
  assert.deepEqual(s.running, [], 'a stopped worker handed its job back');
  assert.deepEqual(
    after.get('w-killed')?.running.map((j) => j.jobId),
    [a.id],
    'a lost worker still holds its job until the lease runs out',
  );
  assert.deepEqual([...after.keys()], ['w-killed', 'w-stopped'], 'lost ones are listed before stopped ones');

  // Retention: kept within the period, pruned after it (the clock moved a day and a minute ahead).
  const log = createLogger('test-maintenance');
  const now = new Maintenance({ pool: api.db.pool, log, holder: 'm1' });
  assert.equal((await now.runPass()).deleted.workers, 0);
  await now.stop();
  const later = new Maintenance({
    pool: api.db.pool,
    log,
    holder: 'm2',
    clock: new FakeClock(new Date(Date.now() + 86_400_000 + 60_000)),
  });
  const pass = await later.runPass();
  await later.stop();
  assert.equal(pass.deleted.workers, 2);
  assert.deepEqual(await listed(), []);
});

test('a library Worker registers, registers again if its row was pruned, and is marked stopped by stop()', async () => {
  const worker = new Worker({
    connectionString: api.db.url,
    handlers: {},
    queues: [{ name: 'lib-q', concurrency: 3 }],
    id: 'w-lib',
    registryHeartbeatMs: 100,
    log: createLogger('test-worker'),
  });
  await worker.start();
  const [row] = (await client.workers.list()).filter((w) => w.id === 'w-lib');
  assert.equal(row?.state, 'running', 'registered by start(), before its first heartbeat');
  assert.deepEqual(row.queues, [{ name: 'lib-q', concurrency: 3, running: 0 }]);
  assert.equal(row.pid, process.pid);
  await api.db.pool.query(`DELETE FROM workers WHERE id = 'w-lib'`);
  await waitUntil('registered again', async () =>
    (await client.workers.list()).some((w) => w.id === 'w-lib' && w.state === 'running'),
  );
  await worker.stop();
  const [stopped] = (await client.workers.list()).filter((w) => w.id === 'w-lib');
  assert.equal(stopped?.state, 'stopped');
  assert.ok(stopped.stoppedAt instanceof Date);
});
