/**
 * `tidemark dev` has no supervisor: a scheduler that loses its lease ends its term and a fresh
 * instance contends as a standby, taking the lease back once the thief's term has expired.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { RestartingScheduler } from '../../src/scheduler/restarting.ts';
import { createTestDatabase } from '../support/db.ts';
import { sleep } from './processes.ts';

async function waitUntil(what: string, check: () => boolean | Promise<boolean>, ms = 15_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

test('a lost lease ends the term and a new instance contends and leads again', async () => {
  const db = await createTestDatabase();
  const lost: string[] = [];
  const scheduler = new RestartingScheduler({
    pool: db.pool,
    log: pino({ level: 'silent' }),
    tickMs: 50,
    renewEveryMs: 100,
    leaseTtlMs: 1_000,
    onLost: (reason) => lost.push(reason),
  });
  try {
    await scheduler.start();
    const first = scheduler.current;
    await waitUntil('first term', () => first.isLeader);
    const before = await db.pool.query<{ epoch: string }>(
      `SELECT epoch FROM leases WHERE name = 'scheduler'`,
    );
    // Another holder takes the lease (as after a long pause of this process) for 500 ms.
    await db.pool.query(
      `UPDATE leases SET holder = 'thief', epoch = epoch + 1,
              expires_at = clock_timestamp() + interval '500 milliseconds' WHERE name = 'scheduler'`,
    );
    await waitUntil('the lost term', () => scheduler.restarts === 1);
    assert.equal(first.isLeader, false);
    assert.match(lost[0] ?? '', /lease lost/);
    const second = scheduler.current;
    assert.notEqual(second, first);
    assert.notEqual(second.holder, first.holder);
    await waitUntil('the new instance to lead', () => second.isLeader);
    const { rows } = await db.pool.query<{ holder: string; epoch: string }>(
      `SELECT holder, epoch FROM leases WHERE name = 'scheduler'`,
    );
    assert.equal(rows[0]?.holder, second.holder);
    assert.equal(Number(rows[0]?.epoch), Number(before.rows[0]?.epoch) + 2);
    assert.equal(scheduler.metrics.snapshot().role, 'leader');
  } finally {
    await scheduler.stop();
  }
  assert.equal(scheduler.current.isLeader, false);
  const { rows } = await db.pool.query<{ holder: string | null }>(
    `SELECT holder FROM leases WHERE name = 'scheduler'`,
  );
  assert.equal(rows[0]?.holder, null, 'stop released the lease');
});
