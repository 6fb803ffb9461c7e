/** client.schedules, as a library user writes it. Every rejection is checked to have written nothing. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  Client,
  FakeClock,
  ScheduleInputError,
  ScheduleNotFoundError,
  ScheduleVersionConflictError,
  type ScheduleInput,
} from '../../src/index.ts';
import { createTestDatabase } from '../support/db.ts';

const db = await createTestDatabase();
const clock = new FakeClock(new Date('2030-03-01T08:59:30.000Z'));
const client = new Client({ pool: db.pool, clock });

const report: ScheduleInput = {
  name: 'nightly-report',
  spec: '0 9 * * *',
  timeZone: 'Europe/Berlin',
  target: { queue: 'reports', kind: 'report.build', payload: { format: 'pdf' }, maxAttempts: 3 },
};

async function scheduleCount(): Promise<number> {
  const { rows } = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM schedules');
  return rows[0]?.n ?? -1;
}

test('create stores the schedule with its next fire time in its zone; edits bump the version', async () => {
  const s = await client.schedules.create(report);
  assert.equal(s.version, 1);
  assert.equal(s.nextFireAt?.toISOString(), '2030-03-02T08:00:00.000Z', '09:00 in Berlin (UTC+1)');
  assert.deepEqual(s.payload, { format: 'pdf' });

  const edited = await client.schedules.update(s.id, { spec: 'every day at 10:30', target: { priority: 5 } });
  assert.equal(edited.version, 2);
  assert.equal(edited.priority, 5);
  assert.equal(edited.queue, 'reports', 'fields not in the patch are kept');
  assert.equal(edited.nextFireAt?.toISOString(), '2030-03-01T09:30:00.000Z');

  const paused = await client.schedules.pause(s.id);
  assert.deepEqual([paused.paused, paused.version, paused.nextFireAt], [true, 3, null]);
  clock.advance(3 * 86_400_000);
  const resumed = await client.schedules.resume(s.id);
  assert.equal(resumed.version, 4);
  assert.equal(
    resumed.nextFireAt?.toISOString(),
    '2030-03-04T09:30:00.000Z',
    'resumes from now, not from the pause',
  );

  await assert.rejects(
    client.schedules.update(s.id, { jitterMs: 5 }, { expectedVersion: 1 }),
    (e: unknown) => {
      return e instanceof ScheduleVersionConflictError && e.currentVersion === 4 && e.expectedVersion === 1;
    },
  );
  assert.equal((await client.schedules.get(s.id))?.version, 4);
  assert.equal((await client.schedules.list()).length, 1);
  await client.schedules.delete(s.id);
  assert.equal(await client.schedules.get(s.id), null, 'a read of a missing id is null');
  await assert.rejects(client.schedules.delete(s.id), (e: unknown) => {
    assert.ok(e instanceof ScheduleNotFoundError && e.code === 'not_found', String(e));
    return true;
  });
});

test('invalid input names the field and the reason, and writes nothing', async () => {
  const before = await scheduleCount();
  const cases: [Partial<ScheduleInput> & Record<string, unknown>, string][] = [
    [{ spec: '61 * * * *' }, 'spec'],
    [{ spec: '' }, 'spec'],
    [{ timeZone: 'Mars/Olympus' }, 'timeZone'],
    [{ spec: 'at 2001-01-01T00:00:00Z' }, 'spec'],
    [{ tenantId: 'Not A Tenant' }, 'tenantId'],
    [{ tenantId: 'nobody' }, 'tenantId'],
    [{ name: '' }, 'name'],
    [{ target: { queue: 'bad queue!', kind: 'k' } }, 'target.queue'],
    [{ target: { queue: 'q', kind: '' } }, 'target.kind'],
    [{ target: { queue: 'q', kind: 'k', maxAttempts: 0 } }, 'target.maxAttempts'],
    [{ target: { queue: 'q', kind: 'k', payload: { big: 1n } } }, 'target.payload'],
    [{ misfire: { policy: 'sometimes' as 'all' } }, 'misfire.policy'],
    [{ misfire: { cap: -1 } }, 'misfire.cap'],
    [{ overlap: 'queue' as 'allow' }, 'overlap'],
    [{ jitterMs: 1.5 }, 'jitterMs'],
  ];
  for (const [patch, field] of cases) {
    await assert.rejects(
      client.schedules.create({ ...report, name: `bad-${field}`, ...patch }),
      (e: unknown) => {
        assert.ok(e instanceof ScheduleInputError, `${field}: ${String(e)}`);
        assert.equal(e.fields[0]?.field, field, e.message);
        assert.ok((e.fields[0]?.reason.length ?? 0) > 0);
        return true;
      },
    );
  }
  await client.schedules.create({ ...report, name: 'taken' });
  await assert.rejects(client.schedules.create({ ...report, name: 'taken' }), (e: unknown) => {
    return e instanceof ScheduleInputError && e.fields[0]?.field === 'name';
  });
  assert.equal(await scheduleCount(), before + 1, 'only the one valid schedule was written');
});

test("a schedule job's key (an occurrence's or a trigger's) sent back to its queue returns that job", async () => {
  const s = await client.schedules.create({ ...report, name: 'keys-sent-back', paused: true });
  await client.schedules.triggerNow(s.id);
  await client.schedules.backfill(s.id, {
    from: new Date('2030-02-27T00:00:00.000Z'),
    to: new Date('2030-02-28T00:00:00.000Z'),
  });
  const { rows } = await db.pool.query<{ id: number; idempotency_key: string }>(
    'SELECT id, idempotency_key FROM jobs WHERE schedule_id = $1 ORDER BY id',
    [s.id],
  );
  assert.deepEqual(
    rows.map((r) => r.idempotency_key.split(':')[0]),
    ['trigger', 'occurrence'],
  );
  for (const r of rows) {
    const again = await client.jobs.enqueue({
      queue: 'reports',
      kind: 'k',
      idempotencyKey: r.idempotency_key,
    });
    assert.deepEqual([again.id, again.created], [r.id, false], r.idempotency_key);
    const [many] = await client.jobs.enqueueMany([
      { queue: 'reports', kind: 'k', idempotencyKey: r.idempotency_key },
    ]);
    assert.deepEqual([many?.id, many?.created], [r.id, false]);
    const elsewhere = await client.jobs.enqueue({
      queue: 'other',
      kind: 'k',
      idempotencyKey: r.idempotency_key,
    });
    assert.equal(elsewhere.created, true, 'another queue: an ordinary key of its own');
  }
});

test('trigger-now enqueues through the scheduler path with a key no scheduled occurrence can take', async () => {
  const s = await client.schedules.create({ ...report, name: 'triggered', paused: true });
  const first = await client.schedules.triggerNow(s.id);
  const second = await client.schedules.triggerNow(s.id);
  assert.notEqual(first.jobId, second.jobId, 'two presses, two jobs, even at the same instant');
  const jobs = await db.pool.query<{ idempotency_key: string; queue: string; max_attempts: number }>(
    'SELECT idempotency_key, queue, max_attempts FROM jobs WHERE schedule_id = $1 ORDER BY id',
    [s.id],
  );
  assert.equal(jobs.rowCount, 2);
  for (const j of jobs.rows) {
    assert.match(j.idempotency_key, new RegExp(`^trigger:${s.id}:[0-9a-f-]{36}$`));
    assert.deepEqual([j.queue, j.max_attempts], ['reports', 3]);
  }
  const ledger = await client.schedules.occurrences(s.id);
  assert.deepEqual(
    ledger.map((o) => [o.source, o.state, o.reason]),
    [
      ['trigger', 'enqueued', 'triggered'],
      ['trigger', 'enqueued', 'triggered'],
    ],
  );
  assert.deepEqual(ledger.map((o) => o.jobId).sort(), [first.jobId, second.jobId].sort());
});
