/**
 * client.schedules.backfill: a past range of a schedule's fire times decided now, through the
 * scheduler's own write, each fire time still one occurrence whoever writes it first.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import {
  BACKFILL_MAX,
  Client,
  FakeClock,
  Scheduler,
  ScheduleInputError,
  ScheduleNotFoundError,
  type ScheduleInput,
} from '../../src/index.ts';
import { occurrenceLagSince } from '../../src/store/occurrence-lag.ts';
import { occurrenceLatenessPerMinute } from '../../src/store/occurrence-rollup.ts';
import { createPool } from '../../src/store/pool.ts';
import { createTestDatabase } from '../support/db.ts';
import { assertLedgerConsistent } from './helpers.ts';

const db = await createTestDatabase();
const clock = new FakeClock(new Date('2025-06-01T12:00:00.000Z'));
const client = new Client({ pool: db.pool, clock });

const hourly: ScheduleInput = {
  name: 'hourly-export',
  spec: '0 * * * *',
  timeZone: 'UTC',
  target: { queue: 'exports', kind: 'export.run' },
};

async function totals(): Promise<{ occurrences: number; jobs: number }> {
  const { rows } = await db.pool.query<{ occurrences: number; jobs: number }>(
    `SELECT (SELECT count(*) FROM occurrences)::int AS occurrences, (SELECT count(*) FROM jobs)::int AS jobs`,
  );
  return rows[0] ?? { occurrences: -1, jobs: -1 };
}

async function fireTimes(scheduleId: string): Promise<string[]> {
  const { rows } = await db.pool.query<{ fire_at: Date }>(
    `SELECT fire_at FROM occurrences WHERE schedule_id = $1 ORDER BY fire_at`,
    [scheduleId],
  );
  return rows.map((r) => r.fire_at.toISOString());
}

test('a backfill enqueues each fire time once; run again it creates nothing', async () => {
  const s = await client.schedules.create({ ...hourly, name: 'twice' });
  const range = { from: new Date('2025-05-01T00:00:00Z'), to: new Date('2025-05-02T00:00:00Z') };

  const dry = await client.schedules.backfill(s.id, { ...range, dryRun: true });
  assert.deepEqual(
    [dry.dryRun, dry.fireTimes, dry.created, dry.existing],
    [true, 24, 24, 0],
    'a dry run counts 24 hourly fire times, none there yet',
  );
  assert.deepEqual(await totals(), { occurrences: 0, jobs: 0 }, 'a dry run writes nothing');

  const first = await client.schedules.backfill(s.id, range);
  assert.deepEqual([first.fireTimes, first.created, first.existing], [24, 24, 0]);
  assert.equal(first.firstFireAt?.toISOString(), '2025-05-01T00:00:00.000Z', 'from is inclusive');
  assert.equal(first.lastFireAt?.toISOString(), '2025-05-01T23:00:00.000Z', 'to is exclusive');

  const again = await client.schedules.backfill(s.id, range);
  assert.deepEqual(
    [again.fireTimes, again.created, again.existing, again.existingByState],
    [24, 0, 24, { enqueued: 24, skipped: 0, missed: 0 }],
  );
  const dryAfter = await client.schedules.backfill(s.id, { ...range, dryRun: true });
  assert.deepEqual([dryAfter.created, dryAfter.existing], [0, 24]);
  assert.deepEqual(await totals(), { occurrences: 24, jobs: 24 }, 'one occurrence and one job per fire time');

  // Each occurrence has the scheduler's job key, so the ledger checks hold as for scheduled ones.
  await assertLedgerConsistent(db.pool, 3_600_000);
  const ledger = await client.schedules.occurrences(s.id, { limit: 100 });
  assert.ok(ledger.every((o) => o.source === 'backfill' && o.state === 'enqueued' && o.jobId !== null));
  const { rows: jobs } = await db.pool.query<{ state: string; queue: string; kind: string }>(
    `SELECT DISTINCT state, queue, kind FROM jobs WHERE schedule_id = $1`,
    [s.id],
  );
  assert.deepEqual(jobs, [{ state: 'available', queue: 'exports', kind: 'export.run' }]);

  // A backfill's lateness is the age of the range: no lag metric, no lateness chart counts it.
  assert.deepEqual(await occurrenceLagSince(db.pool, 0, 100), [], 'the lag histogram leaves them out');
  const minutes = await occurrenceLatenessPerMinute(db.pool, { ...range, limit: 100 });
  assert.equal(minutes.length, 24);
  assert.ok(minutes.every((m) => m.scheduled === 0 && m.triggered === 1 && m.late === 0 && m.lagMaxS === 0));
});

test('a range across a DST gap backfills the fire times of the schedule in its own zone', async () => {
  // Europe/Berlin springs forward on 2025-03-30 at 02:00 CET to 03:00 CEST.
  const fixed = await client.schedules.create({
    ...hourly,
    name: 'berlin-0230',
    spec: '30 2 * * *',
    timeZone: 'Europe/Berlin',
  });
  const r = await client.schedules.backfill(fixed.id, {
    from: '2025-03-28T00:00:00Z',
    to: '2025-04-01T00:00:00Z',
  });
  assert.equal(r.created, 4);
  assert.deepEqual(await fireTimes(fixed.id), [
    '2025-03-28T01:30:00.000Z', // 02:30 CET
    '2025-03-29T01:30:00.000Z',
    '2025-03-30T01:00:00.000Z', // 02:30 does not exist: shifted to the end of the gap, 03:00 CEST
    '2025-03-31T00:30:00.000Z', // 02:30 CEST
  ]);

  // Every hour at :30 over the local day of the gap (23 hours long): with dstGap skip the missing
  // 02:30 does not fire (23 fire times); with shift it fires at 03:00 as well as 03:30 (24).
  const day = { from: '2025-03-29T23:00:00Z', to: '2025-03-30T22:00:00Z' };
  for (const [dstGap, count, extra] of [
    ['skip', 23, false],
    ['shift', 24, true],
  ] as const) {
    const s = await client.schedules.create({
      ...hourly,
      name: `berlin-hourly-${dstGap}`,
      spec: '30 * * * *',
      timeZone: 'Europe/Berlin',
      dstGap,
    });
    assert.equal((await client.schedules.backfill(s.id, day)).created, count, dstGap);
    const times = await fireTimes(s.id);
    assert.equal(times[0], '2025-03-29T23:30:00.000Z', '00:30 CET');
    assert.equal(times.at(-1), '2025-03-30T21:30:00.000Z', '23:30 CEST');
    assert.ok(times.includes('2025-03-30T00:30:00.000Z') && times.includes('2025-03-30T01:30:00.000Z'));
    assert.equal(times.includes('2025-03-30T01:00:00.000Z'), extra, '03:00 CEST, the shifted 02:30');
  }
});

test('bad input names the field and changes nothing', async () => {
  const s = await client.schedules.create({
    ...hourly,
    name: 'refusals',
    spec: 'every 1s',
    anchor: '2025-01-01T00:00:00Z',
  });
  const before = await totals();
  const cases: [Record<string, unknown>, string][] = [
    [{ from: '2025-05-02T00:00:00Z', to: '2025-05-01T00:00:00Z' }, 'to'],
    [{ from: '2025-05-01T00:00:00Z', to: '2025-05-01T00:00:00Z' }, 'to'],
    [{ from: '2025-05-31T00:00:00Z', to: '2025-06-01T12:00:01Z' }, 'to'],
    [{ from: '2025-05-01T00:00:00Z', to: '2025-05-01T03:00:00Z' }, 'from'],
    [{ from: 'yesterday', to: '2025-05-01T00:00:00Z' }, 'from'],
    [{ from: new Date(Number.NaN), to: '2025-05-01T00:00:00Z' }, 'from'],
    [{ from: '2025-02-30T00:00:00Z', to: '2025-05-01T00:00:00Z' }, 'from'],
    [{ to: '2025-05-01T00:00:00Z' }, 'from'],
    [{ from: '2025-05-01T00:00:00Z', to: '2025-05-01T00:01:00Z', extra: 1 }, 'extra'],
    [{ from: '2025-05-01T00:00:00Z', to: '2025-05-01T00:01:00Z', dryRun: 'yes' }, 'dryRun'],
  ];
  for (const [range, field] of cases) {
    await assert.rejects(
      client.schedules.backfill(s.id, range as { from: string; to: string }),
      (e: unknown) => {
        assert.ok(e instanceof ScheduleInputError, `${JSON.stringify(range)}: ${String(e)}`);
        assert.equal(e.code, 'invalid_request');
        assert.ok(
          e.fields.some((f) => f.field === field),
          `${JSON.stringify(range)}: expected ${field}, got ${JSON.stringify(e.fields)}`,
        );
        return true;
      },
    );
  }
  // Exactly the cap is allowed (as a dry run, to keep this quick); one more is refused.
  const atCap = await client.schedules.backfill(s.id, {
    from: '2025-05-01T00:00:00Z',
    to: new Date(Date.parse('2025-05-01T00:00:00Z') + BACKFILL_MAX * 1000),
    dryRun: true,
  });
  assert.equal(atCap.fireTimes, BACKFILL_MAX);
  await assert.rejects(
    client.schedules.backfill(s.id, {
      from: '2025-05-01T00:00:00Z',
      to: new Date(Date.parse('2025-05-01T00:00:00Z') + BACKFILL_MAX * 1000 + 1),
    }),
    (e: unknown) => e instanceof ScheduleInputError && /more than 10000 fire times/.test(e.message),
  );
  await assert.rejects(
    client.schedules.backfill('00000000-0000-4000-8000-000000000000', {
      from: '2025-05-01T00:00:00Z',
      to: '2025-05-01T00:01:00Z',
    }),
    ScheduleNotFoundError,
  );
  assert.deepEqual(await totals(), before, 'no refused backfill wrote anything');
});

test('a paused schedule is backfilled too; the backfill does not resume it', async () => {
  const s = await client.schedules.create({ ...hourly, name: 'paused-one', paused: true });
  const r = await client.schedules.backfill(s.id, {
    from: '2025-05-03T00:00:00Z',
    to: '2025-05-03T03:00:00Z',
  });
  assert.equal(r.created, 3);
  const after = await client.schedules.get(s.id);
  assert.deepEqual([after?.paused, after?.nextFireAt], [true, null]);
});

test('a backfill racing the scheduler for the same fire times leaves one occurrence per fire time', async () => {
  // Its own database: the ledger checks below look at every row.
  const own = await createTestDatabase();
  const backfillPool = createPool({ connectionString: own.url, max: 4, applicationName: 'backfill' });
  const live = new Client({ pool: backfillPool });
  const SCHEDULES = 60;
  const { rows: ids } = await own.pool.query<{ id: string }>(
    `INSERT INTO schedules (tenant_id, name, spec, queue, kind, next_fire_at, misfire_policy, anchor_at)
     SELECT 'default', 'race-' || g, 'every 1s', 'q', 'k',
            date_trunc('second', clock_timestamp()) + interval '2 s', 'all', 'epoch'
       FROM generate_series(1, ${SCHEDULES}) g
     RETURNING id`,
  );
  const scheduler = new Scheduler({
    pool: own.pool,
    log: pino({ level: 'silent' }),
    // The database's due index on a 300 ms tick: each fire time is written up to a tick after it,
    // at a phase that drifts against the rounds below, so either side may come first.
    dueIndex: 'db',
    tickMs: 300,
    renewEveryMs: 500,
    leaseTtlMs: 5_000,
  });
  const t0 = Math.floor(Date.now() / 1000) * 1000 - 10_000;
  let created = 0;
  let existing = 0;
  try {
    await scheduler.start();
    // Rounds, each started in the second after the schedules' newest fire time: the backfill and
    // the scheduler both write it. A round starts at a phase that moves 97 ms a round over the
    // first half-second, so early rounds favour the backfill and late ones the 300 ms tick. At
    // least six, and on until each side has written a fire time the other then found (a loaded
    // machine can delay either side past the other for several rounds), at most 40.
    const raced = (): boolean => scheduler.metrics.conflicts > 0 && scheduler.metrics.occurrences > 0;
    for (let round = 0; round < 6 || (!raced() && round < 40); round++) {
      const next = Math.ceil((Date.now() + 1) / 1000) * 1000 + 2 + ((round * 97) % 500);
      await new Promise((r) => setTimeout(r, next - Date.now()));
      const to = new Date(Math.floor(Date.now() / 1000) * 1000 + 1);
      const results = await Promise.all(
        ids.map((r) => live.schedules.backfill(r.id, { from: new Date(t0), to })),
      );
      for (const r of results) {
        created += r.created;
        existing += r.existing;
      }
    }
  } finally {
    await scheduler.stop();
    await backfillPool.end();
  }
  const ledger = await assertLedgerConsistent(own.pool, 1000);
  const m = scheduler.metrics;
  process.stdout.write(
    `  backfill vs scheduler: ${ledger.occurrences} occurrences (scheduler ${m.occurrences}, backfill ${created}), ` +
      `scheduler conflicts ${m.conflicts}, backfill found ${existing} present\n`,
  );
  assert.equal(m.occurrences + created, ledger.occurrences, 'each row was written by exactly one of them');
  assert.equal(ledger.jobs, ledger.enqueued, 'one job per occurrence');
  assert.ok(created > SCHEDULES * 10, 'the backfill wrote the range before the schedules began');
  assert.ok(m.occurrences > 0, 'the scheduler fired too');
  assert.ok(m.conflicts > 0, 'the scheduler never lost a fire time to the backfill: no race was run');
});
