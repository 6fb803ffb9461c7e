/**
 * A stored spec that no longer compiles is taken out of the due set with its error recorded, so it is
 * not popped and skipped again every tick (with the db index a page of them would stall the tick
 * loop: each pass pops the same full page). An edit that fixes the spec clears the error.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { Client, FakeClock } from '../../src/index.ts';
import type { DueIndexKind } from '../../src/scheduler/due-index.ts';
import { Scheduler } from '../../src/scheduler/scheduler.ts';
import { createTestDatabase } from '../support/db.ts';
import { insertSchedules } from './helpers.ts';
import { sleep } from './processes.ts';

const T0 = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 120_000);

for (const kind of ['db', 'heap'] as const satisfies readonly DueIndexKind[]) {
  test(`${kind} index: broken schedules leave the due set, the others fire, an edit brings them back`, async () => {
    const db = await createTestDatabase();
    const clock = new FakeClock(T0);
    // Due before the good one, more of them than a pop takes (batch 2 × 1 writer).
    const broken = await insertSchedules(db.pool, 5, {
      spec: 'every blue moon',
      nextFireAt: new Date(T0.getTime() - 10_000),
      prefix: 'broken',
    });
    const [good] = await insertSchedules(db.pool, 1, { spec: 'every 10s', nextFireAt: T0, prefix: 'good' });
    const scheduler = new Scheduler({
      pool: db.pool,
      log: pino({ level: 'silent' }),
      clock,
      timeSource: 'host',
      dueIndex: kind,
      tickMs: 20,
      renewEveryMs: 100,
      leaseTtlMs: 60_000,
      batchSize: 2,
      writers: 1,
    });
    try {
      await scheduler.start();
      let fired = 0;
      for (let i = 0; i < 200 && fired === 0; i++) {
        await sleep(25);
        const { rows } = await db.pool.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM occurrences WHERE schedule_id = $1',
          [good],
        );
        fired = rows[0]!.n;
      }
      assert.equal(fired, 1, 'the good schedule fired');
      const { rows } = await db.pool.query<{
        id: string;
        next_fire_at: Date | null;
        spec_error: string | null;
      }>('SELECT id, next_fire_at, spec_error FROM schedules WHERE id = ANY($1)', [broken]);
      assert.equal(rows.length, 5);
      for (const r of rows) {
        assert.equal(r.next_fire_at, null, 'out of the due set');
        assert.match(r.spec_error ?? '', /spec/, 'the error is recorded');
      }
      const occ = await db.pool.query('SELECT 1 FROM occurrences WHERE schedule_id = ANY($1)', [broken]);
      assert.equal(occ.rowCount, 0);

      const client = new Client({ pool: db.pool, clock });
      const fixed = await client.schedules.update(broken[0]!, { spec: 'every 10s' });
      assert.equal(fixed.specError, null);
      assert.equal(fixed.nextFireAt?.getTime(), T0.getTime() + 10_000);
      clock.advance(10_000);
      let refired = 0;
      for (let i = 0; i < 200 && refired === 0; i++) {
        await sleep(25);
        const r = await db.pool.query<{ n: number }>(
          'SELECT count(*)::int AS n FROM occurrences WHERE schedule_id = $1',
          [broken[0]],
        );
        refired = r.rows[0]!.n;
      }
      assert.equal(refired, 1, 'the fixed schedule fires again');
    } finally {
      await scheduler.stop();
    }
  });
}
