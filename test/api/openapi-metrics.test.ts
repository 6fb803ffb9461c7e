import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { exportSchedulerMetrics, exportWorkerMetrics } from '../../src/api/process-metrics.ts';
import { SchedulerMetrics } from '../../src/scheduler/metrics.ts';
import { jobFailMany } from '../../src/store/jobs.ts';
import { withTransaction } from '../../src/store/pool.ts';
import { QueueStats } from '../../src/worker/metrics.ts';
import { startTestApi } from './support.ts';

const api = await startTestApi();

// Every route of the issue, plus administration; the document must describe exactly these.
const ROUTES = [
  'POST /v1/schedules',
  'GET /v1/schedules',
  'GET /v1/schedules/{id}',
  'PATCH /v1/schedules/{id}',
  'DELETE /v1/schedules/{id}',
  'POST /v1/schedules/{id}/pause',
  'POST /v1/schedules/{id}/resume',
  'POST /v1/schedules/{id}/trigger',
  'POST /v1/schedules/{id}/backfill',
  'GET /v1/schedules/{id}/occurrences',
  'GET /v1/schedules/{id}/lateness',
  'GET /v1/lateness',
  'POST /v1/jobs',
  'GET /v1/jobs',
  'GET /v1/jobs/{id}',
  'POST /v1/jobs/{id}/cancel',
  'POST /v1/jobs/{id}/retry',
  'POST /v1/jobs/bulk',
  'GET /v1/dead-letter',
  'GET /v1/history',
  'GET /v1/job-counts',
  'POST /v1/dead-letter/retry',
  'POST /v1/dead-letter/discard',
  'GET /v1/workflows',
  'POST /v1/workflows',
  'GET /v1/workflows/{id}',
  'GET /v1/workflows/{id}/nodes',
  'GET /v1/workflows/{id}/timeline',
  'POST /v1/workflows/{id}/cancel',
  'POST /v1/workflows/{id}/resume',
  'POST /v1/workflows/{id}/signals/{name}',
  'POST /v1/workers/claim',
  'POST /v1/jobs/{id}/heartbeat',
  'POST /v1/jobs/{id}/complete',
  'POST /v1/jobs/{id}/fail',
  'POST /v1/tokens',
  'GET /v1/tokens',
  'DELETE /v1/tokens/{id}',
  'GET /v1/whoami',
  'GET /v1/tenants',
  'GET /v1/tenants/{id}',
  'PUT /v1/tenants/{id}',
  'GET /v1/queues',
  'GET /v1/queues/{name}',
  'PATCH /v1/queues/{name}',
  'POST /v1/queues/{name}/pause',
  'POST /v1/queues/{name}/resume',
  'GET /v1/queues/{name}/changes',
  'GET /v1/workers',
  'GET /healthz',
  'GET /readyz',
  'GET /metrics',
].sort();

test('the OpenAPI document validates against the OpenAPI 3.0 schema and lists every route', async () => {
  const reply = await api.call<{ paths: Record<string, Record<string, unknown>> }>('GET', '/openapi.json', {
    token: null,
  });
  assert.equal(reply.status, 200);
  const result = await new Validator().validate(reply.body);
  assert.equal(result.valid, true, JSON.stringify(result.errors, null, 2)?.slice(0, 3000));
  const listed = Object.entries(reply.body.paths)
    .flatMap(([path, ops]) => Object.keys(ops).map((method) => `${method.toUpperCase()} ${path}`))
    .sort();
  assert.deepEqual(listed, ROUTES);
  for (const [path, ops] of Object.entries(reply.body.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      assert.ok((op as { summary?: string }).summary, `${method} ${path} has a summary`);
    }
  }
});

test('/metrics: backlog, running and dead per queue, schedule lag and request counts, from the database', async () => {
  await api.call('POST', '/v1/jobs', {
    body: {
      jobs: [
        { queue: 'm1', kind: 'k' },
        { queue: 'm1', kind: 'k' },
        { queue: 'm2', kind: 'k' },
      ],
    },
  });
  // Made dead by the statement that fails a job for good (its dead-letter count is kept, 0027).
  const m2 = await api.db.pool.query<{ id: number }>(
    `UPDATE jobs SET state = 'running', attempt = 1, lease_owner = 'w', started_at = now(),
            lease_expires_at = now() + interval '1 minute'
      WHERE queue = 'm2' RETURNING id`,
  );
  await withTransaction(api.db.pool, (tx) =>
    jobFailMany(tx, 'w', [
      { id: m2.rows[0]?.id ?? 0, attempt: 1, outcome: 'failed', error: 'x', retryable: false },
    ]),
  );
  const claim = await api.call('POST', '/v1/workers/claim', {
    body: { worker: 'metrics-w', queues: ['m1'], limit: 1 },
  });
  assert.equal(claim.status, 200);
  // A schedule due a minute ago that no scheduler has materialised: lag ≈ 60 s.
  const s = await api.call<{ id: string }>('POST', '/v1/schedules', {
    body: { name: 'lagging', spec: '* * * * *', target: { queue: 'q', kind: 'k' } },
  });
  await api.db.pool.query("UPDATE schedules SET next_fire_at = now() - interval '60 seconds' WHERE id = $1", [
    s.body.id,
  ]);

  const reply = await fetch(`${api.url}/metrics`);
  assert.equal(reply.status, 200);
  assert.match(reply.headers.get('content-type') ?? '', /text\/plain/);
  const text = await reply.text();
  assert.match(text, /^tidemark_backlog_depth\{queue="m1"\} 1$/m);
  assert.match(text, /^tidemark_running_jobs\{queue="m1"\} 1$/m);
  assert.match(text, /^tidemark_dead_jobs\{queue="m2"\} 1$/m);
  const lag = Number(/^tidemark_schedule_lag_seconds (\S+)$/m.exec(text)?.[1]);
  assert.ok(lag >= 59 && lag < 600, `lag ${lag}`);
  assert.match(text, /^tidemark_http_requests_total\{method="POST",route="\/v1\/jobs",status="201"\} 1$/m);
  assert.match(
    text,
    /^tidemark_http_request_duration_seconds_bucket\{le="\+Inf",method="POST",route="\/v1\/workers\/claim"\} 1$/m,
  );
});

test('/metrics includes the in-process scheduler and worker metrics handed over by the process', async () => {
  const scheduler = new SchedulerMetrics();
  scheduler.role = 'leader';
  scheduler.epoch = 7;
  scheduler.recordTick(12, 3);
  scheduler.recordLag(250);
  const queue = new QueueStats('mail', 4);
  queue.claimLatency.add(5);
  queue.outcomes.succeeded = 9;
  const withdraw = [
    exportSchedulerMetrics(scheduler),
    exportWorkerMetrics({ metrics: () => [queue.snapshot()] }),
  ];
  const text = await (await fetch(`${api.url}/metrics`)).text();
  assert.match(text, /^tidemark_scheduler_leader 1$/m);
  assert.match(text, /^tidemark_scheduler_epoch 7$/m);
  assert.match(text, /^# TYPE tidemark_scheduler_tick_duration_seconds histogram$/m);
  assert.match(text, /^tidemark_scheduler_tick_duration_seconds_bucket\{le="0.01"\} 0$/m);
  assert.match(text, /^tidemark_scheduler_tick_duration_seconds_bucket\{le="0.025"\} 1$/m);
  assert.match(text, /^tidemark_scheduler_tick_duration_seconds_count 1$/m);
  assert.match(text, /^tidemark_scheduler_occurrence_lag_seconds_bucket\{le="0.25"\} 1$/m);
  assert.match(text, /^tidemark_scheduler_occurrence_lag_seconds_sum 0.25$/m);
  assert.match(text, /^tidemark_worker_claim_latency_seconds_bucket\{queue="mail",le="0.005"\} 1$/m);
  assert.match(text, /^tidemark_job_outcomes_total\{queue="mail",outcome="succeeded"\} 9$/m);
  assert.doesNotMatch(text, /quantile=/);
  for (const w of withdraw) w();
  const after = await (await fetch(`${api.url}/metrics`)).text();
  assert.doesNotMatch(after, /^tidemark_scheduler_epoch 7$/m);
});

test('/metrics: the schedule lag histogram counts each scheduled occurrence of the ledger once', async () => {
  const s = await api.call<{ id: string }>('POST', '/v1/schedules', {
    body: { name: 'ledger-lag', spec: '0 0 1 1 *', target: { queue: 'q', kind: 'k' } },
  });
  const count = async (): Promise<{ total: number; under1s: number }> => {
    const text = await (await fetch(`${api.url}/metrics`)).text();
    const read = (le: string): number =>
      Number(
        new RegExp(`^tidemark_occurrence_lag_seconds_bucket\\{le="${le}"\\} (\\d+)$`, 'm').exec(text)?.[1],
      );
    return { total: read('\\+Inf'), under1s: read('1') };
  };
  const before = await count();
  // Three scheduled occurrences 0.2 s, 0.7 s and 4 s late, and a trigger-now one, which is never late.
  await api.db.pool.query(
    `INSERT INTO occurrences (schedule_id, fire_at, state, materialised_at, source)
     VALUES ($1, '2026-01-01T00:00:00Z', 'enqueued', '2026-01-01T00:00:00.2Z', 'schedule'),
            ($1, '2026-01-02T00:00:00Z', 'enqueued', '2026-01-02T00:00:00.7Z', 'schedule'),
            ($1, '2026-01-03T00:00:00Z', 'enqueued', '2026-01-03T00:00:04Z', 'schedule'),
            ($1, '2026-01-04T00:00:00Z', 'enqueued', '2026-01-04T00:01:00Z', 'trigger')`,
    [s.body.id],
  );
  const after = await count();
  assert.equal(after.total - before.total, 3);
  assert.equal(after.under1s - before.under1s, 2);
  const again = await count();
  assert.deepEqual(again, after, 'a second scrape counts nothing twice');
});
