/**
 * Story 3 again with an injected clock: the Scheduler in this process, its wall clock a FakeClock
 * the test steps back and forward (monotonic time untouched, as with an NTP step). With a clock
 * that is exact, the misfire policies are checked to the occurrence.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../src/clock.ts';
import { createTestDatabase } from '../support/db.ts';
import { insertSchedules, fakeClockScheduler } from './helpers.ts';
import { sleep } from './processes.ts';

const T0 = new Date(Math.floor(Date.now() / 60_000) * 60_000);

test('injected clock: back 5 min re-fires nothing; forward 10 min applies all / latest / skip exactly', async () => {
  const db = await createTestDatabase();
  const clock = new FakeClock(T0);
  for (const policy of ['all', 'latest', 'skip']) {
    await insertSchedules(db.pool, 1, {
      spec: 'every 10s',
      nextFireAt: new Date(T0.getTime() + 10_000),
      prefix: policy,
      misfirePolicy: policy,
    });
  }
  const scheduler = fakeClockScheduler(db.pool, clock);
  const count = async (): Promise<Record<string, Record<string, number>>> => {
    const { rows } = await db.pool.query<{ policy: string; state: string; n: number }>(
      `SELECT s.misfire_policy AS policy, o.state, count(*)::int AS n
         FROM occurrences o JOIN schedules s ON s.id = o.schedule_id GROUP BY 1, 2`,
    );
    const out: Record<string, Record<string, number>> = {};
    for (const r of rows) (out[r.policy] ??= {})[r.state] = r.n;
    return out;
  };
  const settle = async (expectedTotal: number): Promise<void> => {
    for (let i = 0; i < 100; i++) {
      const { rows } = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM occurrences');
      if (rows[0]!.n >= expectedTotal) return;
      await sleep(50);
    }
  };
  try {
    await scheduler.start();
    while (!scheduler.isLeader) await sleep(20);

    clock.advance(10_000);
    await settle(3);
    const once = { enqueued: 1 };
    assert.deepEqual(await count(), { all: once, latest: once, skip: once });

    clock.jumpWall(-5 * 60_000);
    await sleep(300);
    clock.advance(20_000);
    await sleep(300);
    assert.deepEqual(
      await count(),
      { all: once, latest: once, skip: once },
      'behind the last fire: nothing fires',
    );

    // Now = T0 + 10 s + 20 s − 5 min + 10 min = T0 + 5 min 30 s: 32 fire times (T0+20 s … T0+5 min 30 s) are due.
    clock.jumpWall(10 * 60_000);
    await settle(3 + 32 * 3);
    assert.deepEqual(await count(), {
      all: { enqueued: 1 + 32 },
      latest: { enqueued: 1 + 1, missed: 31 },
      // skip runs those at most 60 s late: T0+4 min 30 s … T0+5 min 30 s.
      skip: { enqueued: 1 + 7, missed: 25 },
    });
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM (SELECT schedule_id, fire_at FROM occurrences GROUP BY 1, 2 HAVING count(*) > 1) d`,
    );
    assert.equal(rows[0]!.n, 0);
    const m = scheduler.metrics.snapshot();
    assert.equal(m.role, 'leader');
    assert.equal(m.occurrences, 3 + 32 * 3);
    assert.ok((m.lagMs.max ?? 0) >= 5 * 60_000, 'the lag metric saw the 5-minute-late occurrences');
  } finally {
    await scheduler.stop();
  }
  const { rows } = await db.pool.query<{ holder: string | null }>(
    "SELECT holder FROM leases WHERE name = 'scheduler'",
  );
  assert.equal(rows[0]?.holder, null, 'stop() released the lease');
});
