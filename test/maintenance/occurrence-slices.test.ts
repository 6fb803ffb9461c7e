/**
 * The occurrence ledger in slices of a day of fire time: a slice whose every fire time is past
 * retention is summed into the lateness rollups and dropped whole, so the lateness answers exactly
 * as before; a slice coming due within a day keeps its due rows until then; the default partition's
 * rows go one by one; an override that keeps some occurrences longer leaves every slice to the row
 * walk; a backfill writing into a slice holds its drop off, a lock of another slice does not;
 * slices are attached ahead of the clock, after any fire times that outran them, longer with a
 * longer retention or none; a stale fence drops nothing; a schedule's ledger is paged a range of
 * slices at a time; the oldest row is read from the oldest slice holding one.
 */
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { test } from 'node:test';
import { FakeClock } from '../../src/clock.ts';
import { createLogger } from '../../src/log.ts';
import { Maintenance, type MaintenanceOptions, type PruneBatch } from '../../src/maintenance/maintenance.ts';
import {
  occurrenceSliceSpanS,
  retentionPlan,
  type RetentionConfig,
} from '../../src/maintenance/retention-config.ts';
import {
  occurrenceLatenessBySchedule,
  occurrenceLatenessPerMinute,
} from '../../src/store/occurrence-rollup.ts';
import { historyLagPerMinute } from '../../src/store/history.ts';
import {
  occurrenceSliceAttach,
  occurrenceSliceDropDue,
  occurrenceSliceList,
  occurrenceSliceSumStep,
  OCCURRENCE_SUM_STEP_ROWS,
  OCCURRENCE_SUM_STEP_ROWS_SPARED,
  type OccurrenceSlice,
} from '../../src/store/occurrence-slices.ts';
import { occurrenceListBySchedule, type Fence } from '../../src/store/occurrences.ts';
import { withTransaction, type Pool } from '../../src/store/pool.ts';
import { historyOldestRows } from '../../src/store/stats.ts';
import { createTestDatabase } from '../support/db.ts';
import {
  count,
  DAY_MS,
  insertOccurrences,
  insertSchedule,
  restsBetween,
  whileHeld,
  type OccurrenceSpec,
} from './support.ts';

const log = createLogger('test');
log.level = 'silent';
/** Day boundaries: D is the UTC midnight before T, which is noon. */
const D = Math.floor(Date.now() / DAY_MS) * DAY_MS + DAY_MS;
const T = new Date(D + DAY_MS / 2);
const day = (n: number): Date => new Date(D + n * DAY_MS);
const at = (n: number, hours = 0): Date => new Date(D + n * DAY_MS + hours * 3_600_000);

/**
 * Replaces the ledger's slices with one per day from `from` (days from D) up to, not including, `to`;
 * with `unbounded`, the first has no lower bound, as the ledger from before 0037 has.
 */
async function sliceLedger(pool: Pool, from: number, to: number, unbounded = false): Promise<void> {
  await withTransaction(pool, async (tx) => {
    for (const s of await occurrenceSliceList(tx)) {
      await tx.query(`ALTER TABLE occurrences DETACH PARTITION "${s.name}"`);
      await tx.query(`DROP TABLE "${s.name}"`);
    }
    for (let n = from; n < to; n++) {
      const start = unbounded && n === from ? null : day(n);
      await occurrenceSliceAttach(tx, { name: `occurrences_test_${n - from}`, from: start, to: day(n + 1) });
    }
  });
}

let leaseN = 0;
function maintenance(pool: Pool, retention: RetentionConfig = {}, clock = new FakeClock(T)): Maintenance {
  return new Maintenance({
    pool,
    log,
    retention,
    clock,
    leaseName: `occurrence-slices-${leaseN++}`,
    dutyCycle: 1,
  });
}

const sliceStarts = async (pool: Pool): Promise<(number | null)[]> =>
  (await occurrenceSliceList(pool)).map((s) => (s.from === null ? null : (s.from.getTime() - D) / DAY_MS));

test('due slices are summed and dropped whole, a slice due within a day keeps its rows, strays go one by one', async () => {
  const { pool } = await createTestDatabase();
  await sliceLedger(pool, -40, 3);
  const s = await insertSchedule(pool, 'every-minute', 'acme');
  await insertOccurrences(pool, s, [
    // [D-35, D-34): due whole.
    { fireAt: at(-35, 1), lagMs: 500 },
    { fireAt: at(-35, 1), lagMs: 3_000, source: 'trigger' },
    { fireAt: at(-35, 2), lagMs: 4_000 },
    { fireAt: at(-35, 3), state: 'skipped' },
    { fireAt: at(-35, 4), state: 'missed' },
    // [D-31, D-30): due whole, its last fire time 30 days and 12 hours ago.
    { fireAt: at(-31, 23), lagMs: 100 },
    // [D-30, D-29): due by the row, but the slice comes due in 12 hours: it waits.
    { fireAt: at(-30, 1), lagMs: 200 },
    { fireAt: at(-30, 13), lagMs: 300 },
    // Before the first slice: the default partition's, due.
    { fireAt: at(-60, 5), lagMs: 700 },
  ]);
  const range = { from: at(-61), to: T, limit: 1_000 };
  const minutes = await occurrenceLatenessPerMinute(pool, { ...range, tenantId: 'acme' });
  const days = await occurrenceLatenessBySchedule(pool, s, range);
  assert.equal(minutes.length, 8);

  const dropped: number[] = [];
  const m = new Maintenance({
    pool,
    log,
    clock: new FakeClock(T),
    leaseName: 'occurrence-slices-whole',
    dutyCycle: 1,
    onBatch: (b) => {
      if (b.table === 'occurrences' && b.wholeSlice === true) dropped.push(b.deleted);
    },
  });
  const pass = await m.runPass();
  await m.stop();
  // Ten slices before D-30 went, two with rows; the default partition's row went alone.
  assert.deepEqual(dropped, [5, 1]);
  assert.equal(pass.deleted.occurrences, 7);
  assert.equal((await sliceStarts(pool))[0], -30);
  const { rows: tables } = await pool.query<{ n: number }>(
    `SELECT (SELECT count(*) FROM pg_class WHERE relname ~ '^occurrences_[0-9]' AND NOT relispartition
                                            AND relkind = 'r')::int
            + (SELECT count(*) FROM partitions_detached)::int AS n`,
  );
  assert.equal(tables[0]?.n, 0, 'the slices detached are dropped too');
  assert.deepEqual(
    (await pool.query<{ fire_at: Date }>('SELECT fire_at FROM occurrences ORDER BY fire_at')).rows.map((r) =>
      r.fire_at.getTime(),
    ),
    [at(-30, 1).getTime(), at(-30, 13).getTime()],
  );

  // The rollups answer what the rows did, and a second pass changes nothing.
  assert.deepEqual(await occurrenceLatenessPerMinute(pool, { ...range, tenantId: 'acme' }), minutes);
  assert.deepEqual(await occurrenceLatenessBySchedule(pool, s, range), days);
  const again = maintenance(pool);
  assert.equal((await again.runPass()).deleted.occurrences, 0);
  await again.stop();
  assert.deepEqual(await occurrenceLatenessPerMinute(pool, { ...range, tenantId: 'acme' }), minutes);

  // Thirteen hours on, the waiting slice is due: both its rows go with it.
  const later = maintenance(pool, {}, new FakeClock(new Date(T.getTime() + 13 * 3_600_000)));
  assert.equal((await later.runPass()).deleted.occurrences, 2);
  await later.stop();
  assert.equal(await count(pool, 'SELECT count(*) FROM occurrences'), 0);
  assert.deepEqual(await occurrenceLatenessBySchedule(pool, s, range), days);
});

test('an override keeping some occurrences longer leaves the slices to the row walk', async () => {
  const { pool } = await createTestDatabase();
  await sliceLedger(pool, -40, 3);
  const s = await insertSchedule(pool, 'short', 'default', 'q');
  const kept = await insertSchedule(pool, 'long', 'default', 'archive');
  await insertOccurrences(pool, s, [{ fireAt: at(-35, 1) }, { fireAt: at(-20, 1) }]);
  await insertOccurrences(pool, kept, [{ fireAt: at(-35, 2) }]);
  const m = maintenance(pool, { queues: { archive: { occurrences: '60d' } } });
  assert.equal((await m.runPass()).deleted.occurrences, 1);
  await m.stop();
  assert.equal((await sliceStarts(pool))[0], -40);
  assert.equal(await count(pool, 'SELECT count(*) FROM occurrences'), 2);
  assert.equal(await count(pool, 'SELECT count(*) FROM occurrences WHERE schedule_id = $1', [kept]), 1);
});

/** A maintenance fence of its own, with its lease row. */
async function fenceFor(
  pool: Pool,
  lease: string,
): Promise<{ lease: string; holder: string; epoch: number }> {
  const fence = { lease, holder: 'h', epoch: 1 };
  await pool.query(
    `INSERT INTO leases (name, holder, epoch, expires_at) VALUES ($1, $2, $3, now() + interval '1 minute')`,
    [fence.lease, fence.holder, fence.epoch],
  );
  return fence;
}

/** Runs `during` while another transaction holds `spec` written and uncommitted, then commits it. */
async function withBackfill(
  pool: Pool,
  scheduleId: string,
  spec: OccurrenceSpec,
  during: () => Promise<void>,
): Promise<void> {
  const writer = await pool.connect();
  try {
    await writer.query('BEGIN');
    await insertOccurrences(writer, scheduleId, [spec]);
    await during();
    await writer.query('COMMIT');
  } finally {
    writer.release();
  }
}

/** A step of `slice` at T that sums nothing: the slice is not the oldest, or it is busy. */
async function assertNoStep(
  pool: Pool,
  fence: Fence,
  slice: OccurrenceSlice,
  stepRows?: number,
): Promise<void> {
  assert.deepEqual(await occurrenceSliceSumStep(pool, fence, slice, T, 30 * 86_400, stepRows, 50), {
    fenced: true,
    rows: null,
    summed: false,
  });
}

test('a backfill writing into a due slice holds its sum off until it commits; one written after a step adds itself; the drop waits on no other slice', async () => {
  const { pool } = await createTestDatabase();
  await sliceLedger(pool, -35, 3);
  const s = await insertSchedule(pool, 'backfilled');
  await insertOccurrences(pool, s, [{ fireAt: at(-35, 1), lagMs: 1_000 }]);
  const [slice] = (await occurrenceSliceList(pool)).filter((x) => x.to.getTime() === day(-34).getTime());
  assert.ok(slice);
  const fence = await fenceFor(pool, 'occurrence-slices-backfill');
  await withBackfill(pool, s, { fireAt: at(-35, 2), lagMs: 2_000 }, () =>
    assertNoStep(pool, fence, slice, 100),
  );
  // A stale epoch sums nothing.
  assert.deepEqual(await occurrenceSliceSumStep(pool, { ...fence, epoch: 2 }, slice, T, 30 * 86_400), {
    fenced: false,
    rows: null,
    summed: false,
  });
  // One step sums the whole day, with no fire time left.
  assert.deepEqual(await occurrenceSliceSumStep(pool, fence, slice, T, 30 * 86_400), {
    fenced: true,
    rows: 2,
    summed: true,
    span: { stepS: 86_400, leftS: 0 },
  });
  // Summed, not yet dropped: a backfill of a fire time the sum has passed counts itself.
  await insertOccurrences(pool, s, [{ fireAt: at(-35, 3), lagMs: 3_000 }]);
  assert.deepEqual(await occurrenceSliceDropDue(pool, { ...fence, epoch: 2 }, slice, T, 30 * 86_400), {
    fenced: false,
    dropped: false,
  });
  // Another slice held as autovacuum holds one: the detach waits for no partition but its own.
  const other = (await occurrenceSliceList(pool)).find((x) => x.name !== slice.name);
  assert.ok(other);
  await whileHeld(pool, `LOCK TABLE "${other.name}" IN SHARE UPDATE EXCLUSIVE MODE`, async () => {
    assert.deepEqual(await occurrenceSliceDropDue(pool, fence, slice, T, 30 * 86_400), {
      fenced: true,
      dropped: true,
    });
  });
  assert.ok(!(await occurrenceSliceList(pool)).some((x) => x.name === slice.name));
  const [b] = await occurrenceLatenessBySchedule(pool, s, { from: at(-36), to: T, limit: 10 });
  assert.equal(b?.scheduled, 3);
  assert.equal(b?.lagMaxS, 3);
  assert.equal(b?.lagMeanS, 2);
});

test('a slice summed in steps reads the same before, between and after them, beside a row walk', async () => {
  const { pool } = await createTestDatabase();
  await sliceLedger(pool, -35, 3);
  const s = await insertSchedule(pool, 'stepped', 'acme');
  // 240 rows over the day of D-35, one every 6 minutes, with lateness of 0-5 s.
  await insertOccurrences(
    pool,
    s,
    Array.from({ length: 240 }, (_, i) => ({ fireAt: at(-35, i / 10), lagMs: (i % 6) * 1_000 })),
  );
  const [slice] = (await occurrenceSliceList(pool)).filter((x) => x.to.getTime() === day(-34).getTime());
  assert.ok(slice);
  await pool.query(`ANALYZE "${slice.name}"`);
  const range = { from: at(-36), to: T, limit: 10_000 };
  const read = async (): Promise<unknown[]> => [
    await occurrenceLatenessPerMinute(pool, { ...range, tenantId: 'acme' }),
    await occurrenceLatenessPerMinute(pool, range),
    await occurrenceLatenessBySchedule(pool, s, range),
    (await historyLagPerMinute(pool, range)).map((m) => ({ at: m.at, count: m.count })),
  ];
  let before = await read();
  const fence = await fenceFor(pool, 'occurrence-slices-steps');
  const steps: number[] = [];
  const spans: { stepS: number; leftS: number }[] = [];
  let walked = 0;
  for (;;) {
    const step = await occurrenceSliceSumStep(pool, fence, slice, T, 30 * 86_400, 60);
    assert.ok(step.rows !== null && step.span !== undefined);
    steps.push(step.rows);
    spans.push(step.span);
    assert.deepEqual(await read(), before, `after step ${steps.length}`);
    if (step.summed) break;
    // The drop waits for the last step.
    assert.deepEqual(await occurrenceSliceDropDue(pool, fence, slice, T, 30 * 86_400), {
      fenced: true,
      dropped: false,
    });
    if (steps.length === 1) {
      // The step's days wait in the unlogged partials: no logged day row is written before the drop.
      assert.equal(await count(pool, 'SELECT count(*) FROM occurrence_days'), 0);
      assert.equal(await count(pool, 'SELECT count(*) FROM occurrence_day_partials'), 1);
      // A backfill in flight holds the next step off; committed, it is summed with its minute.
      await withBackfill(pool, s, { fireAt: at(-35, 23.95), lagMs: 9_000 }, () =>
        assertNoStep(pool, fence, slice, 60),
      );
      before = await read();
    }
    if (steps.length === 2) {
      // An override appears between steps: the row walk then reads every slice, and takes the
      // rows not summed yet (due at 31 days too) but not those summed already.
      const pass = maintenance(pool, { queues: { q: { occurrences: '31d' } } });
      walked = (await pass.runPass()).deleted.occurrences;
      await pass.stop();
      assert.deepEqual(await read(), before, 'after the row walk');
    }
  }
  // About 60 rows a step (six hours), each ending on a whole minute; the walk took the rest.
  assert.deepEqual(
    steps.slice(0, 2).map((n) => n >= 50 && n <= 70),
    [true, true],
    `steps ${steps.join(', ')}`,
  );
  assert.equal(steps.reduce((a, b) => a + b, 0) + walked, 241);
  assert.ok(walked > 0);
  // The steps' fire time adds up to the day, each step's leaving the rest of it (the pace's input).
  let left = 86_400;
  for (const span of spans) {
    left -= span.stepS;
    assert.ok(Math.abs(span.leftS - left) < 1e-6, `${JSON.stringify(spans)}`);
  }
  assert.equal(left, 0);
  assert.deepEqual(await occurrenceSliceDropDue(pool, fence, slice, T, 30 * 86_400), {
    fenced: true,
    dropped: true,
  });
  assert.deepEqual(await read(), before);
});

/**
 * A slice of 240 rows over the day of D-35 (lateness 0-5 s) summed in steps of about 60 rows; after
 * the first step, `between` runs. Checks the per-minute and per-day reads against the rows' after
 * every step and after the drop.
 */
async function sumAround(pool: Pool, name: string, between: (s: string) => Promise<void>): Promise<void> {
  await sliceLedger(pool, -35, 3);
  const s = await insertSchedule(pool, name, 'acme');
  await insertOccurrences(
    pool,
    s,
    Array.from({ length: 240 }, (_, i) => ({ fireAt: at(-35, i / 10), lagMs: (i % 6) * 1_000 })),
  );
  const [slice] = await occurrenceSliceList(pool);
  assert.ok(slice);
  await pool.query(`ANALYZE "${slice.name}"`);
  const range = { from: at(-36), to: T, limit: 10_000 };
  const read = async (): Promise<unknown[]> => [
    await occurrenceLatenessPerMinute(pool, { ...range, tenantId: 'acme' }),
    await occurrenceLatenessBySchedule(pool, s, range),
  ];
  const fence = await fenceFor(pool, `occurrence-slices-${name}`);
  let before = await read();
  for (let n = 1; ; n++) {
    const step = await occurrenceSliceSumStep(pool, fence, slice, T, 30 * 86_400, 60);
    assert.deepEqual(await read(), before, `after step ${n}`);
    if (step.summed) break;
    if (n === 1) {
      await between(s);
      before = await read();
    }
  }
  assert.deepEqual(await occurrenceSliceDropDue(pool, fence, slice, T, 30 * 86_400), {
    fenced: true,
    dropped: true,
  });
  assert.deepEqual(await read(), before);
  const [b] = await occurrenceLatenessBySchedule(pool, s, range);
  assert.equal((b?.scheduled ?? 0) + (b?.triggered ?? 0), 241);
}

test('a crash that empties the unlogged day partials mid-slice: the drop sums the days from the rows', async () => {
  const { pool } = await createTestDatabase();
  await sumAround(pool, 'crashed', async (s) => {
    // What crash recovery does to unlogged tables.
    await pool.query(
      'TRUNCATE occurrence_minute_partials, occurrence_day_partials, occurrence_partials_span',
    );
    // A backfill of a fire time the steps have passed, written while the partials hold nothing.
    await insertOccurrences(pool, s, [{ fireAt: at(-35, 0.05), lagMs: 4_000 }]);
    // Later steps keep nothing in them.
    assert.equal(await count(pool, 'SELECT count(*) FROM occurrence_day_partials'), 0);
  });
  assert.equal(await count(pool, 'SELECT count(*) FROM occurrence_partials_span'), 0);
});

test('a slice part-summed into both rollups before 0039 goes on with its days counted once', async () => {
  const { pool } = await createTestDatabase();
  await sumAround(pool, 'upgraded', async (s) => {
    // 0038's steps wrote the days up to `before` into occurrence_days: what 0039 finds.
    await withTransaction(pool, async (tx) => {
      await tx.query(`INSERT INTO occurrence_days SELECT * FROM occurrence_day_partials`);
      await tx.query(
        'TRUNCATE occurrence_minute_partials, occurrence_day_partials, occurrence_partials_span',
      );
      await tx.query('UPDATE occurrence_summed SET days_before = before');
    });
    // A backfill below days_before counts itself into occurrence_days, as under 0038.
    await insertOccurrences(pool, s, [{ fireAt: at(-35, 0.05), lagMs: 4_000 }]);
  });
});

test('steps inside a minute leave it to the step that ends it, beside a backfill, a row walk and a crash', async () => {
  const { pool } = await createTestDatabase();
  await sliceLedger(pool, -34, 3);
  // The oldest slice: half an hour of D-35, a row every 5 s (twelve a minute), lateness 0-5 s.
  const short = { name: 'occurrences_test_short', from: at(-35, 1), to: at(-35, 1.5) };
  await occurrenceSliceAttach(pool, short);
  const s = await insertSchedule(pool, 'dense', 'acme');
  await insertOccurrences(
    pool,
    s,
    Array.from({ length: 360 }, (_, i) => ({
      fireAt: new Date(at(-35, 1).getTime() + i * 5_000),
      lagMs: (i % 6) * 1_000,
    })),
  );
  await pool.query(`ANALYZE "${short.name}"`);
  await pool.query(`ALTER TABLE "${short.name}" SET (autovacuum_enabled = off)`);
  const range = { from: at(-36), to: T, limit: 10_000 };
  const read = async (): Promise<unknown[]> => [
    await occurrenceLatenessPerMinute(pool, { ...range, tenantId: 'acme' }),
    await occurrenceLatenessPerMinute(pool, range),
    await occurrenceLatenessBySchedule(pool, s, range),
    // Per minute, the ledger's part and the rollup's (a row walk inside a minute splits it in two).
    [
      ...(await historyLagPerMinute(pool, range)).reduce(
        (byMinute, m) => byMinute.set(m.at.getTime(), (byMinute.get(m.at.getTime()) ?? 0) + m.count),
        new Map<number, number>(),
      ),
    ],
  ];
  let before = await read();
  const fence = await fenceFor(pool, 'occurrence-slices-dense');
  const [slice] = await occurrenceSliceList(pool);
  assert.equal(slice?.name, short.name);
  let rows = 0;
  let walked = 0;
  for (let n = 1; ; n++) {
    // Four rows a step (20 s at the slice's rate): three steps a minute, the first two inside it
    // (the first step ends where the slice starts).
    const step = await occurrenceSliceSumStep(pool, fence, slice, T, 30 * 86_400, 4);
    assert.ok(step.rows !== null);
    rows += step.rows;
    assert.deepEqual(await read(), before, `after step ${n}`);
    if (step.summed) break;
    if (n === 5) {
      // Inside the second minute: its first third waits in the partials, out of the rollup.
      assert.equal(await count(pool, 'SELECT count(*) FROM occurrence_minute_partials'), 1);
      assert.equal(await count(pool, `SELECT count(*) FROM occurrence_minutes WHERE scheduled > 0`), 1);
      // A backfill inside that third counts itself there, once.
      await insertOccurrences(pool, s, [{ fireAt: new Date(at(-35, 1).getTime() + 62_500), lagMs: 9_000 }]);
      before = await read();
    }
    if (n === 9) {
      // An override appears inside a minute: the walk takes the rows after the partials, not those in them.
      const pass = maintenance(pool, { queues: { q: { occurrences: '31d' } } });
      walked = (await pass.runPass()).deleted.occurrences;
      await pass.stop();
      assert.deepEqual(await read(), before, 'after the row walk');
    }
    if (n === 20) {
      // Crash recovery empties the partials inside a minute: the steps go on from its start.
      await pool.query(
        'TRUNCATE occurrence_minute_partials, occurrence_day_partials, occurrence_partials_span',
      );
      assert.deepEqual(await read(), before, 'after the crash');
    }
  }
  assert.ok(walked > 0);
  assert.deepEqual(await occurrenceSliceDropDue(pool, fence, slice, T, 30 * 86_400), {
    fenced: true,
    dropped: true,
  });
  assert.deepEqual(await read(), before);
  // Every occurrence once: the 360 and the backfill, summed, walked or counted by the trigger.
  const [b] = await occurrenceLatenessBySchedule(pool, s, range);
  assert.equal((b?.scheduled ?? 0) + (b?.triggered ?? 0), 361, `summed ${rows}, walked ${walked}`);
});

test('the first slice, with no lower bound, is summed in steps from its oldest row', async () => {
  const { pool } = await createTestDatabase();
  await sliceLedger(pool, -35, 3, true);
  const s = await insertSchedule(pool, 'first');
  // 120 rows over the two days before D-34, and one stray a year older written last.
  await insertOccurrences(pool, s, [
    ...Array.from({ length: 120 }, (_, i) => ({ fireAt: at(-36, i * 0.4), lagMs: (i % 4) * 1_000 })),
    { fireAt: at(-400, 3), lagMs: 7_000 },
  ]);
  await pool.query('ANALYZE occurrences_test_0');
  const range = { from: at(-401), to: T, limit: 10_000 };
  const before = await occurrenceLatenessBySchedule(pool, s, range);
  const fence = await fenceFor(pool, 'occurrence-slices-first');
  const first = (await occurrenceSliceList(pool))[0];
  assert.ok(first);
  assert.equal(first.from, null);
  const steps: number[] = [];
  for (;;) {
    const step = await occurrenceSliceSumStep(pool, fence, first, T, 30 * 86_400, 30);
    assert.ok(step.rows !== null);
    steps.push(step.rows);
    assert.deepEqual(await occurrenceLatenessBySchedule(pool, s, range), before);
    if (step.summed) break;
  }
  // The first step takes the stray with the first span of the oldest row by id.
  assert.ok(steps.length >= 3, `steps ${steps.join(', ')}`);
  assert.equal(
    steps.reduce((a, b) => a + b, 0),
    121,
  );
  assert.deepEqual(await occurrenceSliceDropDue(pool, fence, first, T, 30 * 86_400), {
    fenced: true,
    dropped: true,
  });
  assert.deepEqual(await occurrenceLatenessBySchedule(pool, s, range), before);
});

test('slices are summed oldest first: one held back by a backfill holds back the next', async () => {
  const { pool } = await createTestDatabase();
  await sliceLedger(pool, -35, 3);
  const s = await insertSchedule(pool, 'ordered', 'acme');
  await insertOccurrences(pool, s, [
    { fireAt: at(-35, 1), lagMs: 1_000 },
    { fireAt: at(-34, 1), lagMs: 2_000 },
  ]);
  const range = { from: at(-36), to: T, limit: 1_000 };
  const read = async (): Promise<unknown[]> => [
    await occurrenceLatenessPerMinute(pool, { ...range, tenantId: 'acme' }),
    await occurrenceLatenessBySchedule(pool, s, range),
  ];
  await withBackfill(pool, s, { fireAt: at(-35, 2), lagMs: 3_000 }, async () => {
    const m = maintenance(pool);
    await m.runPass();
    await m.stop();
    // The oldest slice was busy: the next, due too, was not summed past it.
    assert.equal((await sliceStarts(pool))[0], -35);
    assert.equal(await count(pool, `SELECT count(*) FROM occurrences WHERE fire_at >= $1`, [day(-34)]), 1);
    assert.equal(await count(pool, `SELECT count(*) FROM occurrence_summed WHERE before = '-infinity'`), 1);
    // Nor does a step asked for the second slice directly.
    const second = (await occurrenceSliceList(pool))[1];
    assert.ok(second);
    await assertNoStep(pool, await fenceFor(pool, 'occurrence-slices-ordered'), second);
  });
  const before = await read();
  const m = maintenance(pool);
  assert.equal((await m.runPass()).deleted.occurrences, 3);
  await m.stop();
  assert.equal((await sliceStarts(pool))[0], -30);
  assert.deepEqual(await read(), before);
});

/**
 * The ledger sliced by day from D-35, a schedule `name` (tenant acme) with 240 occurrences in the
 * first slice and one before it (the default partition's, for a row walk), and the first slice's
 * row estimate set so that its sum takes four steps of six hours of `stepRows` each: the short
 * steps of a role spreading the slice with time to spare unless given.
 */
async function fourStepSlice(
  pool: Pool,
  name: string,
  stepRows = OCCURRENCE_SUM_STEP_ROWS_SPARED,
): Promise<{ s: string; slice: OccurrenceSlice }> {
  await sliceLedger(pool, -35, 3);
  const s = await insertSchedule(pool, name, 'acme');
  await insertOccurrences(pool, s, [
    ...Array.from({ length: 240 }, (_, i) => ({ fireAt: at(-35, i / 10), lagMs: (i % 6) * 1_000 })),
    { fireAt: at(-60, 5), lagMs: 700 },
  ]);
  const [slice] = await occurrenceSliceList(pool);
  assert.ok(slice);
  // No autovacuum may analyze the estimate back to 240 meanwhile.
  await pool.query(`ALTER TABLE "${slice.name}" SET (autovacuum_enabled = off)`);
  await pool.query(`UPDATE pg_class SET reltuples = $2 WHERE oid = $1::regclass`, [
    `"${slice.name}"`,
    4 * stepRows,
  ]);
  return { s, slice };
}

test('a pass sums the ledger for at most sliceSumPassMs and goes on; the next pass picks up the slice', async () => {
  const { pool } = await createTestDatabase();
  const { s, slice } = await fourStepSlice(pool, 'budget');
  const range = { from: at(-61), to: T, limit: 10_000 };
  const read = async (): Promise<unknown[]> => [
    await occurrenceLatenessPerMinute(pool, { ...range, tenantId: 'acme' }),
    await occurrenceLatenessBySchedule(pool, s, range),
  ];
  const before = await read();
  const passes: { steps: number; walked: number; dropped: boolean }[] = [];
  while (passes.length < 10) {
    let steps = 0;
    let walked = 0;
    const m = new Maintenance({
      pool,
      log,
      clock: new FakeClock(T),
      leaseName: `occurrence-slices-budget-${passes.length}`,
      dutyCycle: 1,
      sliceSumPassMs: 1,
      onBatch: (b) => {
        if (b.table === 'occurrences' && b.wholeSlice === true) steps++;
        else if (b.table === 'occurrences') walked += b.deleted;
      },
    });
    await m.runPass();
    await m.stop();
    const dropped = !(await occurrenceSliceList(pool)).some((x) => x.name === slice.name);
    passes.push({ steps, walked, dropped });
    assert.deepEqual(await read(), before, `after pass ${passes.length}`);
    if (dropped) break;
  }
  // A step a pass, and the first pass's row walk ran after its step.
  assert.deepEqual(
    passes.map((p) => [p.steps, p.dropped]),
    [
      [1, false],
      [1, false],
      [1, false],
      [1, true],
    ],
  );
  assert.equal(passes[0]?.walked, 1);
});

/**
 * A role over fourStepSlice's ledger (schedule `name`) with `options` and a duty cycle of 1, and the
 * slice's steps as onBatch sees them.
 */
function sliceStepsRole(
  pool: Pool,
  name: string,
  options: Partial<MaintenanceOptions>,
): { m: Maintenance; steps: PruneBatch[] } {
  const steps: PruneBatch[] = [];
  const m = new Maintenance({
    pool,
    log,
    leaseName: `occurrence-slices-${name}`,
    dutyCycle: 1,
    ...options,
    onBatch: (b) => {
      if (b.table === 'occurrences' && b.wholeSlice === true) steps.push(b);
    },
  });
  return { m, steps };
}

/**
 * `passes` passes over fourStepSlice's ledger (schedule `name`) by a role with `options` (clock T and
 * a duty cycle of 1 unless given): the slice's four steps as onBatch saw them (long ones with
 * spreadSlices off, short ones otherwise), and when the first pass began.
 */
async function stepsOfPass(
  pool: Pool,
  name: string,
  options: Partial<MaintenanceOptions>,
  passes = 1,
): Promise<{ steps: PruneBatch[]; startedMs: number }> {
  const stepRows =
    options.spreadSlices === false ? OCCURRENCE_SUM_STEP_ROWS : OCCURRENCE_SUM_STEP_ROWS_SPARED;
  const { slice } = await fourStepSlice(pool, name, stepRows);
  const { m, steps } = sliceStepsRole(pool, name, { clock: new FakeClock(T), ...options });
  const startedMs = performance.now();
  for (let i = 0; i < passes; i++) await m.runPass();
  await m.stop();
  assert.equal(steps.length, 4);
  assert.ok(!(await occurrenceSliceList(pool)).some((x) => x.name === slice.name));
  return { steps, startedMs };
}

test('with spreadSlices off, a slice is summed at sliceSumDutyCycle: each step rests as long again at 50 %', async () => {
  const { pool } = await createTestDatabase();
  const { steps } = await stepsOfPass(pool, 'paced', { sliceSumDutyCycle: 0.5, spreadSlices: false });
  restsBetween(steps).forEach((rest, i) => {
    const took = (steps[i]?.endedMs ?? 0) - (steps[i]?.startedMs ?? 0);
    // A timer may fire up to a millisecond early by performance.now().
    assert.ok(rest >= took - 1.5, `step ${i + 2} started ${rest} ms after a step of ${took} ms`);
  });
});

test('behind (the next slice due already), a slice is summed on a catch-up plan, not at the cap', async () => {
  const { pool } = await createTestDatabase();
  await fourStepSlice(pool, 'behind');
  const { m, steps } = sliceStepsRole(pool, 'behind', { clock: new FakeClock(T), sliceSumPassMs: 1_500 });
  const startedMs = performance.now();
  await m.runPass();
  const passMs = performance.now() - startedMs;
  await m.stop();
  // Planned over hours (a day's slice, five due), the first step's rest lasts the pass's 1.5 s for
  // sums (a second step when it ends a millisecond early); at the cap (a duty cycle of 1) all four
  // steps would follow each other at once.
  assert.ok(steps.length <= 2, `${steps.length} steps`);
  assert.ok(passMs >= 1_400, `the pass took ${passMs} ms`);
});

test('a slice with time before the next is due is summed evenly over three quarters of it, resting between steps', async () => {
  const { pool } = await createTestDatabase();
  // Retention keeps occurrences 30 days: the slice after it comes due 8 s after this clock.
  const budgetMs = 8_000;
  const clock = new FakeClock(new Date(day(-34 + 1 + 30).getTime() - budgetMs));
  const { steps, startedMs } = await stepsOfPass(pool, 'deadline', { clock });
  // Four steps of six hours each spread evenly over the 6 s planned (three quarters of the 8 s):
  // cycles of ~1.5 s after the first three, none after the last.
  // Unpaced at a duty cycle of 1 they follow each other at once (the test above at 50 %).
  restsBetween(steps).forEach((rest, i) => assert.ok(rest >= 500, `step ${i + 2} started ${rest} ms after`));
  const endedMs = steps.at(-1)?.endedMs ?? Infinity;
  assert.ok(endedMs - startedMs < budgetMs, `summed ${endedMs - startedMs} ms after the pass began`);
});

test('a plan whose pace reaches the cap goes on in long steps', async () => {
  const { pool } = await createTestDatabase();
  const { slice } = await fourStepSlice(pool, 'capped');
  // The slice after it comes due 530 ms after this clock: the steps plan to be done in 400 ms, a
  // cycle of 100 ms a step, and a step of 2 ms or more passes a cap of 2 %.
  const clock = new FakeClock(new Date(day(-34 + 1 + 30).getTime() - 530));
  const { m, steps } = sliceStepsRole(pool, 'capped', { clock, sliceSumDutyCycle: 0.02 });
  await m.runPass();
  await m.stop();
  assert.ok(!(await occurrenceSliceList(pool)).some((x) => x.name === slice.name));
  // A short step of six hours, then a long one of fifteen and the three hours left; short steps
  // throughout would take four.
  assert.equal(steps.length, 3);
});

test("a slice's deadline is planned at its first step and kept by the passes after it", async () => {
  const { pool } = await createTestDatabase();
  // The slice after it comes due 16 s after this clock: the steps plan to be done 12 s on.
  const clock = new FakeClock(new Date(day(-34 + 1 + 30).getTime() - 16_000));
  const { steps, startedMs } = await stepsOfPass(pool, 'kept', { clock, sliceSumPassMs: 5_000 }, 2);
  // The first pass takes two steps 3 s apart and its time is up at 5 s; the second goes on to the
  // same deadline, its two steps ~3.5 s apart. Planned again at 5 s, the third step's rest would run
  // past that pass's 5 s, and the two passes would take three steps.
  const fourth = (steps[3]?.startedMs ?? 0) - startedMs;
  assert.ok(fourth >= 7_000, `the fourth step started ${fourth} ms after the first pass began`);
});

test("a slice's plan that runs out is planned anew as a catch-up, not summed at the cap", async () => {
  const { pool } = await createTestDatabase();
  await fourStepSlice(pool, 'replanned');
  // The slice after it comes due 4 s after this clock: the steps plan to be done 3 s on, a step
  // every 750 ms, so a pass of 500 ms takes one or two (a rest may end a millisecond early) of four.
  const clock = new FakeClock(new Date(day(-34 + 1 + 30).getTime() - 4_000));
  const { m, steps } = sliceStepsRole(pool, 'replanned', { clock, sliceSumPassMs: 500 });
  await m.runPass();
  const first = steps.length;
  assert.ok(first >= 1 && first <= 2, `${first} steps in the first pass`);
  // Until the plan, made just before the first step, has run out (the clock stands still, so the
  // next slice stays 4 s away).
  const plannedBy = (steps[0]?.startedMs ?? 0) + 3_000;
  while (performance.now() <= plannedBy) await new Promise((r) => setTimeout(r, 50));
  await m.runPass();
  await m.stop();
  // Planned anew over hours, one step and a rest to the end of the pass; at the cap (a duty cycle
  // of 1) the pass would take every step left, two or three.
  assert.equal(steps.length, first + 1);
});

test('slices are attached two days ahead of the clock, after fire times that outran them', async () => {
  const { pool } = await createTestDatabase();
  await sliceLedger(pool, -3, -1);
  const s = await insertSchedule(pool, 'outran');
  // Written while no slice covered them: the default partition holds them.
  await insertOccurrences(pool, s, [{ fireAt: at(-1, 1) }, { fireAt: at(0, 6) }]);
  const m = maintenance(pool, { enabled: false });
  await m.runPass();
  await m.stop();
  const slices = await occurrenceSliceList(pool);
  const first = slices.find((x) => x.from !== null && x.from.getTime() > day(-1).getTime());
  assert.equal(first?.from?.getTime(), at(0, 6).getTime() + 1_000);
  const last = slices.at(-1);
  assert.ok(last !== undefined && last.to.getTime() >= T.getTime() + 2 * DAY_MS);
  assert.equal(await count(pool, 'SELECT count(*) FROM occurrences_default'), 2);
  // A fire time after them lands in a slice.
  await insertOccurrences(pool, s, [{ fireAt: at(0, 13) }]);
  assert.equal(await count(pool, 'SELECT count(*) FROM occurrences_default'), 2);
  // A pass later changes nothing while the slices are still two days ahead.
  const again = maintenance(pool, { enabled: false });
  await again.runPass();
  await again.stop();
  assert.equal((await occurrenceSliceList(pool)).length, slices.length);
});

test('a slice spans a day, a thirtieth of a longer retention, or 30 days when none is ever dropped', async () => {
  const spanDays = (config: RetentionConfig): number => occurrenceSliceSpanS(retentionPlan(config)) / 86_400;
  assert.equal(spanDays({}), 1);
  assert.equal(spanDays({ occurrences: '7d' }), 1);
  assert.equal(spanDays({ occurrences: '90d' }), 3);
  assert.equal(spanDays({ occurrences: '365d' }), 12);
  assert.equal(spanDays({ enabled: false }), 30);
  assert.equal(spanDays({ queues: { archive: { occurrences: '60d' } } }), 30);

  const { pool } = await createTestDatabase();
  const slices = async (): Promise<number[][]> =>
    (await occurrenceSliceList(pool)).map((x) => [
      x.from === null ? Number.NaN : (x.from.getTime() - D) / DAY_MS,
      (x.to.getTime() - D) / DAY_MS,
    ]);
  // Kept a year: a slice of 12 days, the oldest [D-375, D-363), its last fire time due in 1.5 days.
  await withTransaction(pool, async (tx) => {
    for (const x of await occurrenceSliceList(tx)) {
      await tx.query(`ALTER TABLE occurrences DETACH PARTITION "${x.name}"`);
      await tx.query(`DROP TABLE "${x.name}"`);
    }
    await occurrenceSliceAttach(tx, { name: 'occurrences_test_year', from: day(-375), to: day(-363) });
  });
  const s = await insertSchedule(pool, 'kept-a-year');
  await insertOccurrences(pool, s, [{ fireAt: at(-370, 1) }, { fireAt: at(-364, 1) }]);
  const m = maintenance(pool, { occurrences: '365d' });
  // Due by the row, its slice not for 1.5 days: it waits for the slice, which has 12 days to go.
  assert.equal((await m.runPass()).deleted.occurrences, 0);
  await m.stop();
  const attached = (await slices()).slice(1);
  assert.ok(attached.length > 0);
  for (const [from, to] of attached) assert.equal((to ?? 0) - (from ?? 0), 12);
  assert.ok((attached.at(-1)?.[1] ?? 0) >= 24);

  // Two days on, the slice is due: both rows go with it, whole.
  const whole: number[] = [];
  const later = new Maintenance({
    pool,
    log,
    retention: { occurrences: '365d' },
    clock: new FakeClock(new Date(T.getTime() + 2 * DAY_MS)),
    leaseName: 'occurrence-slices-year',
    dutyCycle: 1,
    onBatch: (b) => {
      if (b.table === 'occurrences' && b.wholeSlice === true) whole.push(b.deleted);
    },
  });
  assert.equal((await later.runPass()).deleted.occurrences, 2);
  await later.stop();
  assert.deepEqual(whole, [2]);
  assert.ok((await slices()).every(([from]) => from !== -375));
});

test("a schedule's ledger is read newest first a range of slices at a time, every slice and the default partition in turn", async () => {
  const { pool } = await createTestDatabase();
  await sliceLedger(pool, -10, 3);
  const s = await insertSchedule(pool, 'hourly');
  const hours = Array.from({ length: 9 * 24 }, (_, h) => ({ fireAt: at(-10, h + 1) }));
  await insertOccurrences(pool, s, [
    ...hours,
    { fireAt: at(-6, 5), source: 'trigger' },
    // Before the oldest slice, in the default partition; and a fire time ahead of the clock.
    { fireAt: at(-12, 3) },
    { fireAt: at(2, 3) },
  ]);
  const { rows: all } = await pool.query<{ id: number }>(
    `SELECT id FROM occurrences WHERE schedule_id = $1 ORDER BY fire_at DESC, id DESC`,
    [s],
  );
  assert.equal(all.length, 9 * 24 + 3);

  // Each page, cursor to cursor, is the next of the ledger's order, across every range.
  const paged: number[] = [];
  for (let before: Date | null = null; ;) {
    const page = await occurrenceListBySchedule(pool, s, before, 7);
    paged.push(...page.map((o) => o.id));
    if (page.length < 7) break;
    before = page.at(-1)?.fireAt ?? null;
  }
  assert.deepEqual(
    paged,
    all.map((r) => r.id),
  );

  // A page inside one day's slice starts that slice's indexes alone, the named statement's generic
  // plan included (its sixth run). Counted as a difference inside one transaction: a backend's
  // counters may still hold its earlier transactions' scans.
  const scanned = await withTransaction(pool, async (tx) => {
    const counts = async (): Promise<Map<string, number>> => {
      const { rows } = await tx.query<{ relname: string; n: number }>(
        `SELECT relname, idx_scan::int AS n FROM pg_stat_xact_user_tables
          WHERE relid IN (SELECT relid FROM pg_partition_tree('occurrences'))`,
      );
      return new Map(rows.map((r) => [r.relname, r.n]));
    };
    const before = await counts();
    for (let i = 0; i < 6; i++) await occurrenceListBySchedule(tx, s, at(-4, 12), 10);
    return [...(await counts())].filter(([name, n]) => n > (before.get(name) ?? 0)).map(([name]) => name);
  });
  assert.deepEqual(scanned, ['occurrences_test_6']);
});

test("the ledger's oldest row comes from the oldest slice holding one, or an older one in the default partition", async () => {
  const { pool } = await createTestDatabase();
  await sliceLedger(pool, -5, 3);
  const s = await insertSchedule(pool, 'hourly');
  const oldestHours = async (): Promise<number | undefined> => {
    const row = (await historyOldestRows(pool)).find((r) => r.table === 'occurrences');
    return row?.ageSeconds == null ? undefined : Math.round(row.ageSeconds / 3_600);
  };
  const hoursAgo = (d: Date): number => Math.round((Date.now() - d.getTime()) / 3_600_000);
  assert.equal(await oldestHours(), undefined, 'no occurrences: no age');
  // Written newest first, so the lowest id of each slice is not its first fire time.
  await insertOccurrences(pool, s, [{ fireAt: at(-2, 3) }, { fireAt: at(-3, 7) }, { fireAt: at(-3, 2) }]);
  assert.equal(await oldestHours(), hoursAgo(at(-3, 7)), "the oldest slice's first row by id");
  await pool.query('DELETE FROM occurrences WHERE fire_at < $1', [day(-2)]);
  assert.equal(await oldestHours(), hoursAgo(at(-2, 3)), 'the oldest slice emptied: the next answers');
  // Dropped under the kept slice list: no error, the next answers.
  const [first] = await occurrenceSliceList(pool);
  assert.ok(first !== undefined);
  await pool.query(`ALTER TABLE occurrences DETACH PARTITION "${first.name}"`);
  await pool.query(`DROP TABLE "${first.name}"`);
  assert.equal(await oldestHours(), hoursAgo(at(-2, 3)));
  await insertOccurrences(pool, s, [{ fireAt: at(-9, 1) }]);
  assert.equal(
    await oldestHours(),
    hoursAgo(at(-9, 1)),
    'a backfill before every slice, in the default partition',
  );
});
