/**
 * `--metrics-port` on the long-running roles, with real processes: each serves /metrics with its own
 * role's metric names, /healthz, and /readyz, which answers 503 while the database is cut off (a TCP
 * proxy between the process and PostgreSQL) and 200 again once it heals. The library call behind
 * it (serveMetrics) reports a stopped role as not ready.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { serveMetrics } from '../../src/api/metrics-server.ts';
import { Client } from '../../src/client.ts';
import { createLogger } from '../../src/log.ts';
import { Worker } from '../../src/worker/worker.ts';
import { createTestDatabase } from '../support/db.ts';
import { spawnTidemark, type TidemarkProcess } from '../support/processes.ts';
import { TcpProxy } from '../support/tcp-proxy.ts';
import { jobState, waitUntil } from '../worker/support.ts';

const db = await createTestDatabase();
const client = new Client({ pool: db.pool });
const HANDLERS = 'test/worker/fixtures/handlers.ts';

async function get(url: string): Promise<{ status: number; text: string }> {
  const response = await fetch(url);
  return { status: response.status, text: await response.text() };
}

/** Metric family names in a Prometheus text exposition. */
function families(text: string): Set<string> {
  return new Set([...text.matchAll(/^# TYPE (\S+) /gm)].map((m) => m[1] ?? ''));
}

/** /readyz answers 503 while the proxy is cut and 200 once healed; /healthz answers throughout. */
async function readinessFollowsTheDatabase(base: string, proxy: TcpProxy): Promise<void> {
  assert.equal((await get(`${base}/readyz`)).status, 200);
  proxy.cut();
  const down = await waitUntil('readyz 503 while cut off', async () => {
    const r = await get(`${base}/readyz`);
    return r.status === 503 ? r : undefined;
  });
  assert.match(down.text, /"status":"unavailable".*database/);
  assert.equal((await get(`${base}/healthz`)).status, 200, 'alive, though not ready');
  proxy.heal();
  await waitUntil('readyz 200 once healed', async () => (await get(`${base}/readyz`)).status === 200, 30_000);
}

async function metricsUrl(p: TidemarkProcess): Promise<string> {
  const [, url] = await p.waitFor(/metrics on (http:\/\/\S+)\n/, 60_000);
  assert.ok(url !== undefined);
  return url;
}

test('tidemark scheduler --metrics-port: scheduler and maintenance metrics, readiness follows the database', async () => {
  const proxy = await TcpProxy.start(db.url);
  // A long lease: the cut must not outlast the leader's trust window, which would stop it by design.
  const scheduler = spawnTidemark(
    ['scheduler', '--metrics-port', '0', '--lease-ttl', '60s', '--renew-every', '3s'],
    { env: { DATABASE_URL: proxy.urlFor(db.url), TIDEMARK_LOG_LEVEL: 'warn' } },
  );
  const base = await metricsUrl(scheduler);
  await scheduler.waitFor(/started/);
  const metrics = await get(`${base}/metrics`);
  assert.equal(metrics.status, 200);
  const names = families(metrics.text);
  for (const name of [
    'tidemark_scheduler_leader',
    'tidemark_scheduler_epoch',
    'tidemark_scheduler_tick_duration_seconds',
    'tidemark_scheduler_occurrences_total',
    'tidemark_maintenance_leader',
    'tidemark_retention_passes_total',
  ]) {
    assert.ok(names.has(name), `${name} in\n${metrics.text}`);
  }
  assert.ok(!names.has('tidemark_worker_running'), 'no worker metrics from a scheduler');
  assert.match(metrics.text, /^tidemark_scheduler_occurrences_total\{kind="conflict"\} 0$/m);
  assert.equal((await get(`${base}/healthz`)).text, '{"status":"ok"}');
  await readinessFollowsTheDatabase(base, proxy);
  scheduler.child.kill('SIGTERM');
  assert.equal((await scheduler.exited).code, 0, scheduler.stderr);
});

test('tidemark worker --metrics-port: its queues metrics, readiness follows the database', async () => {
  const proxy = await TcpProxy.start(db.url);
  const worker = spawnTidemark(
    ['worker', '--handlers', HANDLERS, '--queue', 'mq:2', '--metrics-port', '0', '--poll-ms', '200'],
    { env: { DATABASE_URL: proxy.urlFor(db.url), TIDEMARK_LOG_LEVEL: 'error' } },
  );
  const base = await metricsUrl(worker);
  await worker.waitFor(/ready:/);
  const job = await client.jobs.enqueue({ queue: 'mq', kind: 'pause', payload: { ms: 1 } });
  await waitUntil('the job ran', async () => (await jobState(db.pool, job.id)) === 'succeeded');
  const metrics = await waitUntil('its success counted', async () => {
    const r = await get(`${base}/metrics`);
    return /^tidemark_job_outcomes_total\{queue="mq",outcome="succeeded"\} 1$/m.test(r.text) ? r : undefined;
  });
  const names = families(metrics.text);
  for (const name of [
    'tidemark_worker_claim_latency_seconds',
    'tidemark_worker_start_lag_seconds',
    'tidemark_worker_running',
    'tidemark_job_outcomes_total',
  ]) {
    assert.ok(names.has(name), `${name} in\n${metrics.text}`);
  }
  assert.ok(!names.has('tidemark_scheduler_leader'), 'no scheduler metrics from a worker');
  assert.match(metrics.text, /^tidemark_worker_running\{queue="mq"\} 0$/m);
  await readinessFollowsTheDatabase(base, proxy);
  worker.child.kill('SIGTERM');
  assert.equal((await worker.exited).code, 0, worker.stderr);
});

test('serveMetrics: a stopped role is not ready; bad input is refused', async () => {
  const worker = new Worker({
    connectionString: db.url,
    handlers: {},
    queues: [{ name: 'lib', concurrency: 1 }],
    log: createLogger('test-worker'),
  });
  await worker.start();
  await using server = await serveMetrics({ port: 0, pool: db.pool, worker });
  assert.equal((await get(`${server.url}/readyz`)).status, 200);
  assert.equal((await get(`${server.url}/nowhere`)).status, 404);
  await worker.stop();
  const stopped = await get(`${server.url}/readyz`);
  assert.equal(stopped.status, 503);
  assert.match(stopped.text, /worker not running/);
  await assert.rejects(
    serveMetrics({ port: 0, pool: db.pool }),
    /at least one of scheduler, worker, maintenance/,
  );
  await assert.rejects(serveMetrics({ port: 70_000, pool: db.pool, worker }), /port: must be an integer/);
  const bad = spawnTidemark(['worker', '--handlers', HANDLERS, '--metrics-port', 'x'], {
    env: { DATABASE_URL: db.url },
  });
  assert.equal((await bad.exited).code, 2);
  assert.match(bad.stderr, /--metrics-port: must be a port number from 0 to 65535, got 'x'/);
});
