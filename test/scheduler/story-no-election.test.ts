/**
 * Failure story 6: two schedulers with --unsafe-no-election against one database. Both materialise
 * every occurrence; the unique key must leave exactly one row each. If the two never collided the
 * test proves nothing, so it also requires the conflict counters to be above zero.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTestDatabase } from '../support/db.ts';
import { assertLedgerConsistent, insertSchedules } from './helpers.ts';
import { nextWholeSecond, sleep, startScheduler } from './processes.ts';

test('two unfenced schedulers over many ticks: zero duplicate occurrences, and the constraint was exercised', async () => {
  const db = await createTestDatabase();
  await insertSchedules(db.pool, 300, {
    spec: 'every 1s',
    nextFireAt: nextWholeSecond(2000),
    misfirePolicy: 'all',
  });
  const a = startScheduler(db.url, ['--unsafe-no-election', '--tick', '100ms']);
  const b = startScheduler(db.url, ['--unsafe-no-election', '--tick', '100ms']);
  await Promise.all([a.waitFor(/leading epoch=none/), b.waitFor(/leading epoch=none/)]);
  await sleep(6000);
  const [ea, eb] = await Promise.all([a.kill('SIGTERM'), b.kill('SIGTERM')]);
  assert.equal(ea.code, 0, a.stderr);
  assert.equal(eb.code, 0, b.stderr);

  const conflicts = [a, b].map((p) => Number(/conflicts=(\d+)/.exec(p.stdout)?.[1] ?? 'NaN'));
  const written = [a, b].map((p) => Number(/occurrences=(\d+)/.exec(p.stdout)?.[1] ?? 'NaN'));
  const ledger = await assertLedgerConsistent(db.pool, 1000);
  process.stdout.write(
    `  no election: occurrences ${ledger.occurrences} (written ${written.join(' + ')}), conflicts ${conflicts.join(' + ')}\n`,
  );
  assert.ok(
    ledger.enqueued >= 300 * 3,
    `expected several ticks' worth of occurrences, got ${ledger.enqueued}`,
  );
  assert.equal(written[0]! + written[1]!, ledger.occurrences, 'each row was written by exactly one of them');
  assert.ok(conflicts[0]! + conflicts[1]! > 0, 'no conflict ever happened: the constraint was not exercised');
  const epochs = await db.pool.query('SELECT 1 FROM occurrences WHERE epoch IS NOT NULL');
  assert.equal(epochs.rowCount, 0, 'unfenced writes carry no epoch');
});
