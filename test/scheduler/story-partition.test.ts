/**
 * Failure story 2: the leader is cut off from PostgreSQL by a TCP proxy that stops forwarding. It
 * must stop materialising and exit non-zero; a standby takes over; and when the proxy heals, the
 * old leader's statement that was in flight reaches the database and is rejected by the epoch
 * condition: no row carries the old epoch after the new term began, nothing is missing or twice.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTestDatabase } from '../support/db.ts';
import { TcpProxy } from '../support/tcp-proxy.ts';
import { assertLedgerConsistent, insertSchedules } from './helpers.ts';
import { nextWholeSecond, sleep, startScheduler } from './processes.ts';

test('partitioned leader stops and exits; its in-flight write arrives after healing and is fenced out', async () => {
  const db = await createTestDatabase();
  await insertSchedules(db.pool, 200, {
    spec: 'every 1s',
    nextFireAt: nextWholeSecond(2000),
    misfirePolicy: 'all',
  });
  const proxy = await TcpProxy.start(db.url);
  const old = startScheduler(proxy.urlFor(db.url), ['--holder', 'old']);
  await old.waitFor(/leading epoch=1/);
  const standby = startScheduler(db.url, ['--holder', 'new']);
  await standby.waitFor(/started/);
  await sleep(2500);

  proxy.cutOn('occurrenceMaterialise');
  const exit = await old.exited;
  assert.equal(exit.code, 1, 'a leader that cannot renew exits non-zero');
  assert.match(old.stdout, /lost leadership: (lease renewal failed|lease term 1 outlived its trust window)/);
  await standby.waitFor(/leading epoch=2/, 20_000);
  const { rows: lease } = await db.pool.query<{ acquired_at: Date }>(
    "SELECT acquired_at FROM leases WHERE name = 'scheduler'",
  );
  const newTermAt = lease[0]!.acquired_at;

  proxy.heal();
  await sleep(1500);
  const held = proxy.delivered.toString('latin1');
  assert.ok(
    held.includes('occurrenceMaterialise'),
    `the old leader had a materialising write in flight\n${JSON.stringify(held.slice(0, 300))}\n${old.stderr}`,
  );
  // The database ran it and answered: a DataRow ('D', length, 7 columns) whose first column,
  // `fenced`, is false ('f'): the epoch condition rejected it.
  const fencedOut = Buffer.from([0x00, 0x07, 0x00, 0x00, 0x00, 0x01, 0x66]);
  const answer = proxy.lateAnswers;
  const at = answer.indexOf(fencedOut);
  assert.ok(at >= 5 && answer[at - 5] === 0x44, 'the late write was executed and fenced out');

  await sleep(1000);
  assert.equal((await standby.kill('SIGTERM')).code, 0, standby.stderr);
  const late = await db.pool.query('SELECT id FROM occurrences WHERE epoch = 1 AND materialised_at >= $1', [
    newTermAt,
  ]);
  assert.equal(late.rowCount, 0, 'a write under epoch 1 landed after epoch 2 began');
  const ledger = await assertLedgerConsistent(db.pool, 1000);
  const { rows: epochs } = await db.pool.query<{ epoch: number }>(
    'SELECT DISTINCT epoch FROM occurrences ORDER BY 1',
  );
  assert.deepEqual(
    epochs.map((r) => r.epoch),
    [1, 2],
  );
  process.stdout.write(
    `  partition: ${ledger.occurrences} occurrences, no gaps, no duplicates, in-flight write fenced\n`,
  );
});
