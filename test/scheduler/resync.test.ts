/**
 * LISTEN/NOTIFY is the fast path for edits; the periodic resync is the one that must not miss. A
 * schedule written with the notify trigger switched off (as if the notification were lost) must
 * still reach the leader's index and fire.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FakeClock } from '../../src/clock.ts';
import { createTestDatabase } from '../support/db.ts';
import type { Pool } from '../../src/store/pool.ts';
import { sleep } from './processes.ts';
import { fakeClockScheduler } from './helpers.ts';

const T0 = new Date(Math.floor(Date.now() / 60_000) * 60_000 - 120_000);

test('a schedule whose notification was lost is picked up by the resync and fires', async () => {
  const db = await createTestDatabase();
  const clock = new FakeClock(T0);
  const scheduler = fakeClockScheduler(db.pool, clock, {
    resyncMs: 300,
  });
  try {
    await scheduler.start();
    while (!scheduler.isLeader) await sleep(20);
    await sleep(100);
    await insertSilently(db.pool);
    clock.advance(10_000);
    assert.equal(await occurrencesOnceAny(db.pool), 1, 'the silently inserted schedule fired once');
  } finally {
    await scheduler.stop();
  }
});

test('the resync gets past a page of schedules that share one updated_at (a bulk insert)', async () => {
  const db = await createTestDatabase();
  const clock = new FakeClock(T0);
  // More rows than a resync page, from one statement, so one updated_at; far from due.
  await db.pool.query(
    `INSERT INTO schedules (tenant_id, name, spec, queue, kind, next_fire_at, anchor_at)
     SELECT 'default', 'bulk' || g, 'every 1h', 'q', 'k', $1, $2 FROM generate_series(1, 2500) g`,
    [new Date(T0.getTime() + 3_600_000), new Date(0)],
  );
  const scheduler = fakeClockScheduler(db.pool, clock, { resyncMs: 300 });
  try {
    await scheduler.start();
    while (!scheduler.isLeader) await sleep(20);
    await sleep(100);
    await insertSilently(db.pool);
    // The resync runs by the injected clock: past its period, then page after page of the bulk rows,
    // one a tick, until the silent one.
    clock.advance(10_000);
    assert.equal(await occurrencesOnceAny(db.pool), 1, 'the silently inserted schedule fired once');
  } finally {
    await scheduler.stop();
  }
});

/** The occurrences written, once there are any, or 0 after 10 s. */
async function occurrencesOnceAny(pool: Pool): Promise<number> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { rows } = await pool.query<{ n: number }>('SELECT count(*)::int AS n FROM occurrences');
    const n = rows[0]?.n ?? 0;
    if (n > 0 || Date.now() > deadline) return n;
    await sleep(20);
  }
}

/** A schedule due 10 s after T0, inserted with triggers off: no NOTIFY reaches the leader. */
async function insertSilently(pool: Pool): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('BEGIN');
    await client.query('SET LOCAL session_replication_role = replica');
    await client.query(
      `INSERT INTO schedules (tenant_id, name, spec, queue, kind, next_fire_at, anchor_at)
       VALUES ('default', 'silent', 'every 10s', 'q', 'k', $1, $2)`,
      [new Date(T0.getTime() + 10_000), new Date(0)],
    );
    await client.query('COMMIT');
  } finally {
    client.release();
  }
}
