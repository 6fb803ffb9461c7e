/**
 * Over HTTP: a schedule's lateness per day and the cluster's per minute answer the same before and
 * after retention prunes the ledger; /metrics reports rows pruned and the oldest row left per table.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../src/clock.ts';
import { createLogger } from '../../src/log.ts';
import { Maintenance } from '../../src/maintenance/maintenance.ts';
import { DAY_MS, insertJobs, insertOccurrences, insertSchedule } from '../maintenance/support.ts';
import { startTestApi } from './support.ts';

const api = await startTestApi();
const log = createLogger('test');
log.level = 'silent';

test('lateness survives pruning over HTTP, tenant-scoped; /metrics counts what was pruned', async () => {
  const T = new Date(Math.floor(Date.now() / 60_000) * 60_000);
  const s = await insertSchedule(api.db.pool, 'nightly', 'acme');
  const old = new Date(T.getTime() - 40 * DAY_MS);
  await insertOccurrences(api.db.pool, s, [
    { fireAt: old, lagMs: 1_000 },
    { fireAt: new Date(old.getTime() + 60_000), lagMs: 5_000 },
    { fireAt: new Date(T.getTime() - 60_000), lagMs: 100 },
  ]);
  await insertJobs(api.db.pool, [
    { state: 'succeeded', at: new Date(T.getTime() - 8 * DAY_MS), attempts: 1 },
  ]);
  const from = new Date(T.getTime() - 41 * DAY_MS).toISOString();
  const read = async () => ({
    days: (await api.call('GET', `/v1/schedules/${s}/lateness?from=${from}`, { token: api.tokens.acme }))
      .body,
    minutes: (await api.call('GET', `/v1/lateness?from=${from}`, { token: api.tokens.acme })).body,
  });
  const before = await read();
  assert.deepEqual(
    (before.minutes.items as { scheduled: number; late: number; lateMaxMs: number }[]).map((b) => [
      b.scheduled,
      b.late,
      b.lateMaxMs,
    ]),
    [
      [1, 0, 1000],
      [1, 1, 5000],
      [1, 0, 100],
    ],
  );
  const m = new Maintenance({ pool: api.db.pool, log, clock: new FakeClock(T), dutyCycle: 1 });
  const pass = await m.runPass();
  await m.stop();
  assert.equal(pass.deleted.occurrences, 2);
  assert.equal(pass.deleted.jobs, 1);
  assert.deepEqual(await read(), before);
  // Another tenant reads none of it, and not the schedule at all.
  const globex = await api.call<{ items: unknown[] }>('GET', `/v1/lateness?from=${from}`, {
    token: api.tokens.globex,
  });
  assert.deepEqual(globex.body.items, []);
  assert.equal(
    (await api.call('GET', `/v1/schedules/${s}/lateness?from=${from}`, { token: api.tokens.globex })).status,
    404,
  );
  assert.equal((await api.call('GET', `/v1/lateness?from=yesterday`)).status, 400);

  const metrics = (await api.call('GET', '/metrics')).text;
  assert.match(metrics, /^tidemark_retention_pruned_rows_total\{table="jobs"\} 1$/m);
  assert.match(metrics, /^tidemark_retention_pruned_rows_total\{table="occurrences"\} 2$/m);
  assert.match(metrics, /^tidemark_retention_pruned_rows_total\{table="job_attempts"\} 1$/m);
  assert.match(metrics, /^# TYPE tidemark_retention_pruned_rows_total counter$/m);
  const oldest = /^tidemark_history_oldest_row_age_seconds\{table="occurrences"\} ([\d.]+)$/m.exec(metrics);
  assert.ok(oldest?.[1] !== undefined, 'oldest occurrence age exported');
  assert.ok(Number(oldest[1]) < 3_600, `oldest occurrence left is the recent one: ${oldest[1]} s`);
  // The migration's first slice runs 10 million ids past the ids drawn so far.
  const left = /^tidemark_job_slice_ids_left (\d+)$/m.exec(metrics);
  assert.ok(left?.[1] !== undefined && Number(left[1]) > 9_000_000, `slice ids left: ${left?.[1]}`);
  assert.match(metrics, /^tidemark_job_slices 1$/m);
});

test('a person discards dead jobs: only dead ones, with their attempts, only their tenant’s', async () => {
  const now = new Date();
  const [deadA, deadB, succeeded, otherTenant] = await insertJobs(api.db.pool, [
    { state: 'dead', at: now, attempts: 3 },
    { state: 'dead', at: now, attempts: 1 },
    { state: 'succeeded', at: now },
    { state: 'dead', at: now, tenant: 'globex' },
  ]);
  const ids = [deadA, deadB, succeeded, otherTenant] as number[];
  const acme = await api.call<{ discarded: number[]; notDiscarded: number[] }>(
    'POST',
    '/v1/dead-letter/discard',
    { token: api.tokens.acme, body: { ids } },
  );
  assert.equal(acme.status, 200);
  assert.deepEqual(acme.body.discarded, []);
  const admin = await api.call<{ discarded: number[]; notDiscarded: number[] }>(
    'POST',
    '/v1/dead-letter/discard',
    {
      body: { ids: [deadA, deadB, succeeded] },
    },
  );
  assert.deepEqual(admin.body, { discarded: [deadA, deadB], notDiscarded: [succeeded] });
  const { rows } = await api.db.pool.query<{ id: number }>(
    'SELECT id FROM jobs WHERE id = ANY ($1) ORDER BY id',
    [ids],
  );
  assert.deepEqual(
    rows.map((r) => r.id),
    [succeeded, otherTenant],
  );
  const attempts = await api.db.pool.query('SELECT 1 FROM job_attempts WHERE job_id = ANY ($1)', [
    [deadA, deadB],
  ]);
  assert.equal(attempts.rowCount, 0);
  const both = await api.call('POST', '/v1/dead-letter/discard', { body: { ids: [deadA], queue: 'q' } });
  assert.equal(both.status, 400);
});
