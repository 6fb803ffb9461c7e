/**
 * Failure story 4: 5,000 schedules due at the same instant. All must be materialised exactly once;
 * the test reports how long the burst took to drain and the lag p50/p99 (from the ledger's own
 * materialised_at − fire_at). Speed is a benchmark's business (`npm run bench scheduler`); here the
 * numbers are printed, and only correctness is asserted.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTestDatabase } from '../support/db.ts';
import { assertLedgerConsistent, insertSchedules } from './helpers.ts';
import { nextWholeSecond, sleep, startScheduler } from './processes.ts';

const BURST = 5000;

for (const dueIndex of ['heap', 'wheel', 'db'] as const) {
  test(`5,000 schedules due at one instant (${dueIndex} index): all materialised, none twice`, async () => {
    const db = await createTestDatabase();
    // This story is about the due index and the write path, not the lease: production lease timings,
    // so a starved 2 s test lease on a loaded machine cannot end the term mid-burst.
    const scheduler = startScheduler(db.url, [
      '--due-index',
      dueIndex,
      '--lease-ttl',
      '10s',
      '--renew-every',
      '3s',
    ]);
    await scheduler.waitFor(/leading epoch=1/);
    // Registered while it leads: the 5,000 reach its index through LISTEN/NOTIFY.
    const fireAt = nextWholeSecond(2500);
    await insertSchedules(db.pool, BURST, { spec: `at ${fireAt.toISOString()}`, nextFireAt: fireAt });
    for (let i = 0; i < 100; i++) {
      const { rows } = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM occurrences');
      if (rows[0]?.n === BURST) break;
      await sleep(200);
    }
    assert.equal((await scheduler.kill('SIGTERM')).code, 0, scheduler.stderr);
    const ledger = await assertLedgerConsistent(db.pool, 1000);
    assert.deepEqual([ledger.occurrences, ledger.enqueued, ledger.jobs], [BURST, BURST, BURST]);
    const { rows } = await db.pool.query<{ drain: number; p50: number; p99: number; left: number }>(
      `SELECT (extract(epoch FROM max(materialised_at) - min(materialised_at)) * 1000)::float8 AS drain,
              (percentile_cont(0.5) WITHIN GROUP (ORDER BY extract(epoch FROM materialised_at - fire_at)) * 1000)::float8 AS p50,
              (percentile_cont(0.99) WITHIN GROUP (ORDER BY extract(epoch FROM materialised_at - fire_at)) * 1000)::float8 AS p99,
              (SELECT count(*) FROM schedules WHERE next_fire_at IS NOT NULL)::int AS left
         FROM occurrences`,
    );
    const r = rows[0]!;
    assert.equal(r.left, 0, 'every one-off schedule is finished');
    process.stdout.write(
      `  burst (${dueIndex}): drained ${BURST} in ${r.drain.toFixed(0)} ms; lag p50 ${r.p50.toFixed(0)} ms, p99 ${r.p99.toFixed(0)} ms (tick 200 ms)\n`,
    );
  });
}
