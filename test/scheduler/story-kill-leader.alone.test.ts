/**
 * Failure story 1: three schedulers, the leader is SIGKILLed in the middle of a tick. A standby
 * must take over within TTL + tick of the leader's last renewal, and across the whole run no
 * occurrence may be missing (misfire policy `all`: the takeover gap is made up) or duplicated.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createTestDatabase } from '../support/db.ts';
import type { TidemarkProcess } from '../support/processes.ts';
import { assertLedgerConsistent, insertSchedules } from './helpers.ts';
import { FAST, nextWholeSecond, sleep, startScheduler } from './processes.ts';

const SCHEDULES = 2000;

test('SIGKILL the leader mid-tick: a standby takes over within TTL + tick, nothing missing, nothing twice', async () => {
  const db = await createTestDatabase();
  await insertSchedules(db.pool, SCHEDULES, {
    spec: 'every 1s',
    nextFireAt: nextWholeSecond(2000),
    misfirePolicy: 'all',
  });
  // One writer, 1,000 a batch: a tick's two batches go one after the other, so "between them" is a
  // window to hit.
  const args = ['--writers', '1', '--batch-size', '1000'];
  const procs = [startScheduler(db.url, args), startScheduler(db.url, args), startScheduler(db.url, args)];
  const leader = await Promise.any(procs.map(async (p) => (await p.waitFor(/leading epoch=1/), p)));
  const standbys = procs.filter((p) => p !== leader);
  await sleep(2500);

  // Mid-tick, provably: each second 2,000 occurrences fall due and the leader writes them in two
  // statements of 1,000. Watch the ledger and kill it when the first is in and the second is not.
  let killedAt: Date | undefined;
  // Watched by time, not by a count of polls: on a loaded machine the leader may start a second's
  // writes well after that second, and the watch must still be there when it does.
  for (let attempt = 0; attempt < 15 && killedAt === undefined; attempt++) {
    const second = new Date(Math.ceil(Date.now() / 1000) * 1000);
    await sleep(second.getTime() - Date.now());
    const watchUntil = second.getTime() + 3000;
    while (Date.now() < watchUntil) {
      const { rows } = await db.pool.query<{ n: number; at: Date }>(
        'SELECT count(*)::int AS n, clock_timestamp() AS at FROM occurrences WHERE fire_at = $1',
        [second],
      );
      const n = rows[0]?.n ?? 0;
      if (n > 0 && n < SCHEDULES) {
        leader.child.kill('SIGKILL');
        killedAt = rows[0]!.at;
        process.stdout.write(
          `  killed with ${n} of ${SCHEDULES} occurrences of ${second.toISOString()} written\n`,
        );
        break;
      }
      if (n === SCHEDULES) break;
    }
  }
  assert.ok(killedAt !== undefined, 'never caught the leader between two batches of a tick');
  assert.equal((await leader.exited).signal, 'SIGKILL');

  const next = await Promise.any(standbys.map(async (p) => (await p.waitFor(/leading epoch=2/, 20_000), p)));
  const { rows: lease } = await db.pool.query<{ acquired_at: Date; epoch: number }>(
    "SELECT acquired_at, epoch FROM leases WHERE name = 'scheduler'",
  );
  const takeoverMs = lease[0]!.acquired_at.getTime() - killedAt.getTime();
  process.stdout.write(
    `  takeover: ${takeoverMs} ms after SIGKILL (TTL ${FAST.ttlMs} ms + tick ${FAST.tickMs} ms)\n`,
  );
  // Bound: the killed term had at most TTL left, plus one standby poll (a tick). A second of slack
  // for a loaded machine; the number itself is printed above.
  assert.ok(takeoverMs <= FAST.ttlMs + FAST.tickMs + 1000, `takeover took ${takeoverMs} ms`);

  await sleep(2500);
  // The standby first: stopped first, the leader hands its lease back and the standby would lead
  // (epoch 3) for as long as it takes the loop to reach it.
  const survivors: TidemarkProcess[] = [...standbys.filter((p) => p !== next), next];
  for (const p of survivors) assert.equal((await p.kill('SIGTERM')).code, 0, p.stderr);
  assert.match(next.stdout, /stopped occurrences=\d+/);

  const ledger = await assertLedgerConsistent(db.pool, 1000);
  // Every schedule fired on both sides of the takeover.
  const { rows } = await db.pool.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM (
       SELECT schedule_id FROM occurrences GROUP BY schedule_id
       HAVING min(fire_at) < $1 AND max(fire_at) > $1::timestamptz + interval '3 seconds') s`,
    [killedAt],
  );
  assert.equal(rows[0]?.n, SCHEDULES);
  const { rows: epochs } = await db.pool.query<{ epoch: number }>(
    'SELECT DISTINCT epoch FROM occurrences ORDER BY 1',
  );
  assert.deepEqual(
    epochs.map((r) => r.epoch),
    [1, 2],
  );
  process.stdout.write(
    `  ledger: ${ledger.occurrences} occurrences, ${ledger.jobs} jobs, no gaps, no duplicates\n`,
  );
});
