import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../src/clock.ts';
import { databaseSnapshot, startTestApi } from './support.ts';

// Monday 2026-01-05 08:00 UTC: "every weekday at 9am" fires next at 09:00 today.
const clock = new FakeClock(new Date('2026-01-05T08:00:00Z'));
const api = await startTestApi({ clock });

interface Schedule {
  id: string;
  name: string;
  compiled: { canonical: string; description: string };
  nextFireTimes: string[];
  target: { queue: string; kind: string; url?: string; payload: unknown };
  paused: boolean;
  version: number;
}

async function create(body: Record<string, unknown>, token = api.tokens.acme) {
  return api.call<Schedule>('POST', '/v1/schedules', { token, body });
}

test('register a phrase for a URL target: the answer echoes the compiled spec and the next five fire times', async () => {
  const reply = await create({
    name: 'standup',
    spec: 'every weekday at 9am',
    timeZone: 'UTC',
    target: { url: 'https://example.test/hook', payload: { hello: 1 } },
  });
  assert.equal(reply.status, 201, reply.text);
  assert.equal(reply.body.compiled.canonical, '0 9 * * 1-5');
  assert.match(reply.body.compiled.description, /9:00|09:00/);
  assert.deepEqual(reply.body.nextFireTimes, [
    '2026-01-05T09:00:00.000Z',
    '2026-01-06T09:00:00.000Z',
    '2026-01-07T09:00:00.000Z',
    '2026-01-08T09:00:00.000Z',
    '2026-01-09T09:00:00.000Z',
  ]);
  assert.deepEqual(reply.body.target, {
    queue: 'http',
    kind: 'http.post',
    url: 'https://example.test/hook',
    payload: { hello: 1 },
    priority: 0,
    maxAttempts: null,
    timeoutMs: null,
  });
});

test('cron, interval and one-off specs; bad specs are 400 naming the field, and write nothing', async () => {
  for (const spec of ['*/5 * * * *', 'every 90s', 'at 2026-02-01T10:00:00Z']) {
    const r = await create({ name: `s-${spec}`, spec, target: { queue: 'q', kind: 'k' } });
    assert.equal(r.status, 201, `${spec}: ${r.text}`);
  }
  const before = await databaseSnapshot(api.db);
  const cases: [Record<string, unknown>, string][] = [
    [{ name: 'x', spec: 'every blue moon', target: { queue: 'q', kind: 'k' } }, 'body.spec'],
    [
      { name: 'x', spec: '0 9 * * *', timeZone: 'Mars/Olympus', target: { queue: 'q', kind: 'k' } },
      'body.timeZone',
    ],
    [{ name: 'x', spec: '0 9 * * *', target: { queue: 'q' } }, 'body.target.kind'],
    [{ name: 'x', spec: '0 9 * * *', target: { url: 'ftp://x', queue: 'q' } }, 'body.target.url'],
    [
      { name: 'x', spec: '0 9 * * *', target: { queue: 'q', kind: 'k' }, misfire: { policy: 'never' } },
      'body.misfire.policy',
    ],
    [{ name: 'standup', spec: '0 9 * * *', target: { queue: 'q', kind: 'k' } }, 'body.name'],
    [{ name: 'x', spec: 'at 2020-01-01T00:00:00Z', target: { queue: 'q', kind: 'k' } }, 'body.spec'],
  ];
  for (const [body, field] of cases) {
    const r = await create(body);
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    const fields = (r.body as unknown as { error: { fields: { field: string }[] } }).error.fields.map(
      (f) => f.field,
    );
    assert.ok(fields.includes(field), `${field} in ${JSON.stringify(fields)}`);
  }
  assert.equal(await databaseSnapshot(api.db), before);
});

test('show, list, patch, pause, resume, trigger, history, delete', async () => {
  const { body: s } = await create({
    name: 'nightly',
    spec: '0 2 * * *',
    target: { queue: 'reports', kind: 'build' },
  });
  assert.equal(
    (await api.call<Schedule>('GET', `/v1/schedules/${s.id}`, { token: api.tokens.acme })).body.name,
    'nightly',
  );
  const list = await api.call<{ items: Schedule[] }>('GET', '/v1/schedules?limit=1000', {
    token: api.tokens.acme,
  });
  assert.ok(list.body.items.some((x) => x.id === s.id));

  const patched = await api.call<Schedule>('PATCH', `/v1/schedules/${s.id}`, {
    token: api.tokens.acme,
    body: { spec: '0 3 * * *' },
  });
  assert.equal(patched.status, 200, patched.text);
  assert.equal(patched.body.compiled.canonical, '0 3 * * *');
  assert.equal(patched.body.version, s.version + 1);
  const stale = await api.call<{ error: { code: string; currentVersion: number } }>(
    'PATCH',
    `/v1/schedules/${s.id}?expectedVersion=${s.version}`,
    {
      token: api.tokens.acme,
      body: { spec: '0 4 * * *' },
    },
  );
  assert.equal(stale.status, 409, stale.text);
  assert.equal(stale.body.error.code, 'version_conflict');
  assert.equal(stale.body.error.currentVersion, s.version + 1);

  assert.equal(
    (await api.call<Schedule>('POST', `/v1/schedules/${s.id}/pause`, { token: api.tokens.acme })).body.paused,
    true,
  );
  assert.equal(
    (await api.call<Schedule>('POST', `/v1/schedules/${s.id}/resume`, { token: api.tokens.acme })).body
      .paused,
    false,
  );

  const fired = await api.call<{ jobId: number }>('POST', `/v1/schedules/${s.id}/trigger`, {
    token: api.tokens.acme,
  });
  assert.equal(fired.status, 201, fired.text);
  const history = await api.call<{ items: { source: string; jobId: number; state: string }[] }>(
    'GET',
    `/v1/schedules/${s.id}/occurrences`,
    { token: api.tokens.acme },
  );
  assert.deepEqual(
    history.body.items.map((o) => [o.source, o.state, o.jobId]),
    [['trigger', 'enqueued', fired.body.jobId]],
  );
  const job = await api.call<{ tenantId: string; queue: string }>('GET', `/v1/jobs/${fired.body.jobId}`, {
    token: api.tokens.acme,
  });
  assert.deepEqual([job.body.tenantId, job.body.queue], ['acme', 'reports']);

  assert.equal((await api.call('DELETE', `/v1/schedules/${s.id}`, { token: api.tokens.acme })).status, 204);
  assert.equal((await api.call('GET', `/v1/schedules/${s.id}`, { token: api.tokens.acme })).status, 404);
  // The record of what ran stays: the occurrence row and its job outlive the schedule.
  const { rows: ledger } = await api.db.pool.query<{ job_id: number; job_schedule: string }>(
    `SELECT o.job_id, j.schedule_id AS job_schedule FROM occurrences o JOIN jobs j ON j.id = o.job_id
      WHERE o.schedule_id = $1`,
    [s.id],
  );
  assert.deepEqual(ledger, [{ job_id: fired.body.jobId, job_schedule: s.id }]);
  assert.equal((await api.call('GET', '/v1/schedules/not-a-uuid', { token: api.tokens.acme })).status, 400);
});

test("tenant isolation: every schedule route answers 404 for another tenant's schedule and changes nothing", async () => {
  const { body: s } = await create({ name: 'private', spec: '0 5 * * *', target: { queue: 'q', kind: 'k' } });
  const before = await databaseSnapshot(api.db);
  const missing = '00000000-0000-4000-8000-000000000000';
  const routes: [string, string, unknown][] = [
    ['GET', `/v1/schedules/${s.id}`, undefined],
    ['PATCH', `/v1/schedules/${s.id}`, { spec: '0 6 * * *' }],
    ['DELETE', `/v1/schedules/${s.id}`, undefined],
    ['POST', `/v1/schedules/${s.id}/pause`, undefined],
    ['POST', `/v1/schedules/${s.id}/resume`, undefined],
    ['POST', `/v1/schedules/${s.id}/trigger`, undefined],
    ['GET', `/v1/schedules/${s.id}/occurrences`, undefined],
    ['POST', `/v1/schedules/${s.id}/backfill`, { from: '2026-01-01T00:00:00Z', to: '2026-01-03T00:00:00Z' }],
  ];
  for (const [method, path, body] of routes) {
    const theirs = await api.call(method, path, { token: api.tokens.globex, body });
    const none = await api.call(method, path.replace(s.id, missing), { token: api.tokens.globex, body });
    assert.equal(theirs.status, 404, `${method} ${path}`);
    assert.equal(none.status, 404);
    assert.equal((theirs.body.error as { code: string }).code, (none.body.error as { code: string }).code);
  }
  const list = await api.call<{ items: Schedule[] }>('GET', '/v1/schedules', { token: api.tokens.globex });
  assert.ok(!list.body.items.some((x) => x.id === s.id));
  assert.equal(
    (await api.call('GET', '/v1/schedules?tenantId=acme', { token: api.tokens.globex })).status,
    404,
  );
  const forOther = await create(
    { name: 'sneaky', spec: '0 5 * * *', target: { queue: 'q', kind: 'k' }, tenantId: 'acme' },
    api.tokens.globex,
  );
  assert.equal(forOther.status, 404);
  assert.equal(await databaseSnapshot(api.db), before);
});

test('a stored spec that no longer compiles is shown with its error, not a 500, and can be fixed', async () => {
  const created = await api.call<{ id: string }>('POST', '/v1/schedules', {
    body: { name: 'zone-withdrawn', spec: '0 9 * * *', target: { queue: 'q', kind: 'k' } },
  });
  // As if the tz database had dropped the zone after the schedule was registered.
  await api.db.pool.query("UPDATE schedules SET time_zone = 'Mars/Olympus_Mons' WHERE id = $1", [
    created.body.id,
  ]);

  const shown = await api.call<{ compiled: unknown; specError: string | null; nextFireTimes: string[] }>(
    'GET',
    `/v1/schedules/${created.body.id}`,
  );
  assert.equal(shown.status, 200);
  assert.equal(shown.body.compiled, null);
  assert.match(shown.body.specError ?? '', /Mars\/Olympus_Mons/);
  assert.deepEqual(shown.body.nextFireTimes, []);
  const listed = await api.call<{ items: { id: string }[] }>('GET', '/v1/schedules');
  assert.equal(listed.status, 200);
  assert.ok(listed.body.items.some((s) => s.id === created.body.id));

  const fixed = await api.call<{ compiled: { canonical: string } | null }>(
    'PATCH',
    `/v1/schedules/${created.body.id}`,
    { body: { timeZone: 'Europe/Berlin' } },
  );
  assert.equal(fixed.status, 200);
  assert.equal(fixed.body.compiled?.canonical, '0 9 * * *');
});

test('backfill: a dry run counts, the backfill enqueues, a second one finds them all; bad ranges are 400 and write nothing', async () => {
  const { body: s } = await create({
    name: 'nightly-backfill',
    spec: '0 2 * * *',
    timeZone: 'America/New_York',
    target: { queue: 'q', kind: 'k' },
  });
  const path = `/v1/schedules/${s.id}/backfill`;
  // 02:00 New York, 2025-12-29 … 2026-01-04: seven fire times at 07:00 UTC.
  const range = { from: '2025-12-29T00:00:00Z', to: '2026-01-05T00:00:00Z' };
  interface Backfill {
    dryRun: boolean;
    fireTimes: number;
    created: number;
    existing: number;
    existingByState: Record<string, number>;
    firstFireAt: string | null;
    lastFireAt: string | null;
  }
  const dry = await api.call<Backfill>('POST', path, { body: { ...range, dryRun: true } });
  assert.equal(dry.status, 200, dry.text);
  assert.deepEqual(
    [dry.body.dryRun, dry.body.fireTimes, dry.body.created, dry.body.existing],
    [true, 7, 7, 0],
  );
  assert.equal(dry.body.firstFireAt, '2025-12-29T07:00:00.000Z');

  const done = await api.call<Backfill>('POST', path, { body: range });
  assert.equal(done.status, 200, done.text);
  assert.deepEqual([done.body.dryRun, done.body.created, done.body.existing], [false, 7, 0]);
  const again = await api.call<Backfill>('POST', path, { body: range });
  assert.deepEqual(
    [again.body.created, again.body.existing, again.body.existingByState],
    [0, 7, { enqueued: 7, skipped: 0, missed: 0 }],
  );
  const ledger = await api.call<{ items: { source: string; state: string; jobId: number | null }[] }>(
    'GET',
    `/v1/schedules/${s.id}/occurrences`,
  );
  assert.equal(ledger.body.items.length, 7);
  assert.ok(
    ledger.body.items.every((o) => o.source === 'backfill' && o.state === 'enqueued' && o.jobId !== null),
  );

  const before = await databaseSnapshot(api.db);
  const cases: [unknown, string][] = [
    [{ from: '2026-01-02T00:00:00Z', to: '2026-01-01T00:00:00Z' }, 'body.to'],
    [{ from: '2026-01-01T00:00:00Z', to: '2026-01-06T00:00:00Z' }, 'body.to'],
    [{ from: '2026-01-01T00:00:00', to: '2026-01-02T00:00:00Z' }, 'body.from'],
    [{ from: '1990-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z' }, 'body.from'],
    [{ to: '2026-01-02T00:00:00Z' }, 'body.from'],
    [{ from: '2026-01-01T00:00:00Z', to: '2026-01-02T00:00:00Z', force: true }, 'body.force'],
  ];
  for (const [body, field] of cases) {
    const r = await api.call('POST', path, { body });
    assert.equal(r.status, 400, `${JSON.stringify(body)}: ${r.text}`);
    const fields = (r.body as unknown as { error: { fields: { field: string }[] } }).error.fields.map(
      (f) => f.field,
    );
    assert.ok(fields.includes(field), `${field} in ${JSON.stringify(fields)}`);
  }
  assert.equal(await databaseSnapshot(api.db), before, 'no refused backfill changed anything');
});
