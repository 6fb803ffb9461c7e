/**
 * Prometheus's own tool accepts what Tidemark exposes: `promtool check metrics` on a live /metrics
 * (with the scheduler's and a worker's in-process metrics handed over, and every database-read
 * metric populated), and `promtool check rules` / `test rules` on the documented alert rules.
 * promtool comes from Debian's `prometheus` package, which npm test installs with the other tools
 * it drives (scripts/test-tools.ts), so a missing promtool fails here rather than skipping.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { exportSchedulerMetrics, exportWorkerMetrics } from '../../src/api/process-metrics.ts';
import { SchedulerMetrics } from '../../src/scheduler/metrics.ts';
import { QueueStats } from '../../src/worker/metrics.ts';
import { startTestApi } from './support.ts';

const RULES = 'docs/prometheus/tidemark.rules.yml';
const RULES_TEST = 'docs/prometheus/tidemark.rules.test.yml';

const found = spawnSync('promtool', ['--version'], { encoding: 'utf8' });
if (found.error !== undefined || found.status !== 0) {
  throw new Error(
    'promtool is missing: npm test installs Debian package `prometheus` (apt-get install prometheus)',
  );
}

function promtool(args: string[], input?: string): { status: number | null; output: string } {
  const run = spawnSync('promtool', args, { input, encoding: 'utf8' });
  return { status: run.status, output: `${run.stdout}${run.stderr}`.trim() };
}

test('promtool check metrics accepts a live /metrics', async () => {
  const api = await startTestApi();
  const scheduler = new SchedulerMetrics();
  scheduler.role = 'leader';
  scheduler.epoch = 3;
  scheduler.recordTick(4, 2);
  scheduler.recordLag(120);
  const queue = new QueueStats('mail', 2);
  queue.claimLatency.add(3);
  queue.startLag.add(40);
  queue.outcomes.succeeded = 2;
  const withdraw = [
    exportSchedulerMetrics(scheduler),
    exportWorkerMetrics({ metrics: () => [queue.snapshot()] }),
  ];
  try {
    await api.call('POST', '/v1/jobs', {
      body: {
        jobs: [
          { queue: 'mail', kind: 'k' },
          { queue: 'mail', kind: 'k' },
        ],
      },
    });
    await api.call('POST', '/v1/workers/claim', { body: { worker: 'w', queues: ['mail'], limit: 1 } });
    await api.db.pool.query(
      `INSERT INTO leases (name, holder, epoch, expires_at) VALUES ('scheduler', 'h', 1, now() + interval '10 s')
       ON CONFLICT (name) DO NOTHING`,
    );
    await fetch(`${api.url}/metrics`); // the first scrape sets the ledger cursor
    const text = await (await fetch(`${api.url}/metrics`)).text();
    for (const name of [
      'tidemark_schedule_lag_seconds',
      'tidemark_occurrence_lag_seconds_bucket',
      'tidemark_scheduler_tick_duration_seconds_bucket',
      'tidemark_worker_claim_latency_seconds_bucket',
      'tidemark_job_outcomes_total',
      'tidemark_leader_held',
    ]) {
      assert.match(text, new RegExp(`^${name}[{ ]`, 'm'), `${name} is exposed`);
    }
    const check = promtool(['check', 'metrics'], text);
    console.log(
      `promtool check metrics: exit ${check.status}${check.output === '' ? ', no findings' : `\n${check.output}`}`,
    );
    assert.equal(check.status, 0, check.output);
    assert.equal(check.output, '');
  } finally {
    for (const w of withdraw) w();
  }
});

test('promtool check rules and test rules accept the documented alert rules', () => {
  const check = promtool(['check', 'rules', RULES]);
  console.log(`promtool check rules: exit ${check.status}\n${check.output}`);
  assert.equal(check.status, 0, check.output);
  const unit = promtool(['test', 'rules', RULES_TEST]);
  console.log(`promtool test rules: exit ${unit.status}\n${unit.output}`);
  assert.equal(unit.status, 0, unit.output);
});
