/**
 * Planning ahead (planAheadMs): a schedule due within it is planned before its fire time, and the
 * plan is used at the fire time only while it still holds. An edit in between, whether the leader
 * heard of it or not, never lets the old plan write and never loses the edited schedule's fire time.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../src/clock.ts';
import { Client } from '../../src/index.ts';
import { withTransaction } from '../../src/store/pool.ts';
import { createTestDatabase } from '../support/db.ts';
import { fakeClockScheduler } from './helpers.ts';
import { sleep } from './processes.ts';

// Two minutes back, so every fire time of the test is in the database's past (jobs start available).
const T0 = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 120_000);
const at = (s: number): string => new Date(T0.getTime() + s * 1000).toISOString();

test('a schedule edited after it was planned ahead fires on its new version, heard of or not', async () => {
  const db = await createTestDatabase();
  const clock = new FakeClock(T0);
  const client = new Client({ pool: db.pool, clock });
  const make = (name: string): Promise<{ id: string }> =>
    client.schedules.create({ name, spec: 'every 10s', target: { queue: 'q', kind: 'k' }, anchor: T0 });
  await make('kept');
  const edited = await make('edited');
  const unheard = await make('unheard');
  const paused = await make('paused');
  const scheduler = fakeClockScheduler(db.pool, clock);
  const ledger = async (): Promise<string[]> => {
    const { rows } = await db.pool.query<{ name: string; fire_at: Date; schedule_version: number }>(
      `SELECT s.name, o.fire_at, o.schedule_version FROM occurrences o JOIN schedules s ON s.id = o.schedule_id
        ORDER BY o.fire_at, s.name`,
    );
    return rows.map((r) => `${r.name} ${r.fire_at.toISOString()} v${r.schedule_version}`);
  };
  const settle = async (n: number): Promise<void> => {
    for (let i = 0; i < 100 && (await ledger()).length < n; i++) await sleep(50);
  };
  try {
    await scheduler.start();
    while (!scheduler.isLeader) await sleep(20);
    // One second before the first fire time (T0 + 10 s), within planAheadMs: all four are planned.
    clock.advance(9_000);
    await sleep(300);
    await client.schedules.update(edited.id, { spec: 'every 15s' });
    await client.schedules.pause(paused.id);
    // An edit the leader never hears of (triggers off in this transaction, so no NOTIFY) that moves
    // the next fire time on by one: only the write's version check can catch it.
    await withTransaction(db.pool, async (tx) => {
      await tx.query('SET LOCAL session_replication_role = replica');
      await tx.query('UPDATE schedules SET version = version + 1, next_fire_at = $2 WHERE id = $1', [
        unheard.id,
        at(20),
      ]);
    });
    await sleep(300);
    clock.advance(1_000);
    await settle(1);
    await sleep(300);
    clock.advance(5_000);
    await settle(2);
    await sleep(300);
    clock.advance(5_000);
    await settle(4);
    await sleep(300);
  } finally {
    await scheduler.stop();
  }
  assert.deepEqual(await ledger(), [
    `kept ${at(10)} v1`,
    `edited ${at(15)} v2`,
    `kept ${at(20)} v1`,
    `unheard ${at(20)} v2`,
  ]);
  assert.ok(scheduler.metrics.snapshot().plannedAhead >= 1, 'kept was written with the plan made ahead');
});
