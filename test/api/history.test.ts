/**
 * GET /v1/history: schedule lateness p50/p99 per minute from the ledger and, once retention has
 * rolled a minute up, its mean and worst; jobs succeeded and attempts failed per minute; the backlog
 * at the end of every minute. Jobs move through the worker API as a real worker's would; the ledger
 * rows are written with the lateness the test wants to read back.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { startTestApi } from './support.ts';

const api = await startTestApi();

interface History {
  from: string;
  to: string;
  lag: { at: string; count: number; p50Ms: number; p99Ms: number; exact: boolean }[];
  throughput: { at: string; succeeded: number; failed: number }[];
  backlog: { at: string; waiting: number }[];
}

async function ok<T>(method: string, path: string, body?: unknown, token = api.tokens.admin): Promise<T> {
  const reply = await api.call<T>(method, path, { body, token });
  assert.ok(reply.status >= 200 && reply.status < 300, `${method} ${path}: ${reply.status} ${reply.text}`);
  return reply.body;
}

test('lateness per minute: exact percentiles from the ledger, mean and worst from the rollup; tenant-scoped', async () => {
  const schedule = await ok<{ id: string }>(
    'POST',
    '/v1/schedules',
    { name: 'nightly', spec: '0 3 * * *', target: { kind: 'noop' } },
    api.tokens.acme,
  );
  const { rows } = await api.db.pool.query<{ minute: Date }>(
    `SELECT date_trunc('minute', now() - interval '30 minutes') AS minute`,
  );
  const minute = rows[0]?.minute;
  assert.ok(minute !== undefined);
  // Ten occurrences in one minute, 100 ms to 1,000 ms late.
  await api.db.pool.query(
    `INSERT INTO occurrences (schedule_id, fire_at, state, materialised_at)
     SELECT $1, $2::timestamptz + i * interval '1 second', 'enqueued',
            $2::timestamptz + i * interval '1 second' + i * interval '100 milliseconds'
       FROM generate_series(1, 10) i`,
    [schedule.id, minute],
  );
  // A minute retention already pruned: four occurrences, 2 s late on average, 5 s at worst.
  await api.db.pool.query(
    `INSERT INTO occurrence_minutes (minute, tenant_id, scheduled, lag_sum_s, lag_max_s)
     VALUES ($1::timestamptz - interval '60 minutes', 'acme', 4, 8, 5)`,
    [minute],
  );

  const history = await ok<History>('GET', '/v1/history', undefined, api.tokens.acme);
  assert.equal(history.lag.length, 2);
  const [rolled, live] = history.lag;
  assert.deepEqual(rolled, {
    at: new Date(minute.getTime() - 3600_000).toISOString(),
    count: 4,
    p50Ms: 2000,
    p99Ms: 5000,
    exact: false,
  });
  assert.equal(live?.at, minute.toISOString());
  assert.equal(live?.count, 10);
  assert.equal(live?.exact, true);
  // percentile_cont over 0.1 … 1.0 s: 0.55 s and 0.991 s.
  assert.ok(Math.abs((live?.p50Ms ?? 0) - 550) < 0.001, `p50 ${live?.p50Ms}`);
  assert.ok(Math.abs((live?.p99Ms ?? 0) - 991) < 0.001, `p99 ${live?.p99Ms}`);

  assert.equal((await ok<History>('GET', '/v1/history', undefined, api.tokens.globex)).lag.length, 0);
  assert.equal((await ok<History>('GET', '/v1/history?tenantId=acme')).lag.length, 2);
  const other = await api.call('GET', '/v1/history?tenantId=acme', { token: api.tokens.globex });
  assert.equal(other.status, 404);
});

test('throughput and backlog per minute follow jobs through the worker API', async () => {
  const enqueue = (maxAttempts = 4) =>
    ok<{ id: number }>('POST', '/v1/jobs', { queue: 'hist', kind: 'k', maxAttempts });
  const before = await ok<History>('GET', '/v1/history?queue=hist');
  assert.equal(before.backlog.at(-1)?.waiting, 0);

  for (let i = 0; i < 5; i++) await enqueue(i === 2 ? 1 : 4);
  const waiting = await ok<History>('GET', '/v1/history?queue=hist');
  assert.equal(waiting.backlog.at(-1)?.waiting, 5);
  assert.equal(waiting.backlog.at(-1)?.at, waiting.to);
  // Three hours of minutes, one point at the end of each; none waited before they were made.
  assert.ok(waiting.backlog.length >= 180 && waiting.backlog.length <= 181, `${waiting.backlog.length}`);
  assert.equal(waiting.backlog.at(-3)?.waiting, 0);

  const { jobs } = await ok<{ jobs: { id: number; attempt: number; maxAttempts?: number }[] }>(
    'POST',
    '/v1/workers/claim',
    { worker: 'w1', queues: ['hist'], limit: 3 },
  );
  assert.equal(jobs.length, 3);
  const [a, b, c] = jobs;
  assert.ok(a !== undefined && b !== undefined && c !== undefined);
  await ok('POST', `/v1/jobs/${a.id}/complete`, { worker: 'w1', attempt: a.attempt });
  await ok('POST', `/v1/jobs/${b.id}/complete`, { worker: 'w1', attempt: b.attempt });
  await ok('POST', `/v1/jobs/${c.id}/fail`, {
    worker: 'w1',
    attempt: c.attempt,
    error: 'boom',
    retryable: false,
  });

  const after = await ok<History>('GET', '/v1/history?queue=hist');
  const sum = (key: 'succeeded' | 'failed') => after.throughput.reduce((n, m) => n + m[key], 0);
  assert.equal(sum('succeeded'), 2);
  assert.equal(sum('failed'), 1);
  assert.equal(after.backlog.at(-1)?.waiting, 2);
  // Another queue's filter sees none of it.
  const elsewhere = await ok<History>('GET', '/v1/history?queue=elsewhere');
  assert.deepEqual(elsewhere.throughput, []);
  assert.equal(elsewhere.backlog.at(-1)?.waiting, 0);
});

test('a bad window is a 400 naming the field, and the window is at most a day', async () => {
  const backwards = await api.call<{ error: { fields: { field: string }[] } }>(
    'GET',
    '/v1/history?from=2026-01-02T00:00:00Z&to=2026-01-01T00:00:00Z',
  );
  assert.equal(backwards.status, 400);
  assert.equal(backwards.body.error.fields[0]?.field, 'query.from');
  const long = await api.call<{ error: { fields: { field: string; reason: string }[] } }>(
    'GET',
    '/v1/history?from=2026-01-01T00:00:00Z&to=2026-01-03T00:00:00Z',
  );
  assert.equal(long.status, 400);
  assert.match(long.body.error.fields[0]?.reason ?? '', /24 hours/);
  const fixed = await ok<History>('GET', '/v1/history?from=2026-01-01T00:00:00Z&to=2026-01-01T01:00:00Z');
  assert.equal(fixed.backlog.length, 60);
  assert.equal(fixed.backlog[0]?.at, '2026-01-01T00:01:00.000Z');
});
