/** occurrenceMaterialise: the fenced, idempotent write every occurrence goes through. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { leaseAcquire, leaseGet, leaseRelease, leaseRenew } from '../../src/store/leases.ts';
import { occurrenceMaterialise, type OccurrenceInput } from '../../src/store/occurrences.ts';
import { createTestDatabase } from '../support/db.ts';
import { insertSchedules } from './helpers.ts';

const db = await createTestDatabase();
const FIRE = new Date('2030-01-01T00:00:00.000Z');

function item(scheduleId: string, fireAt = FIRE, version = 1): OccurrenceInput {
  return {
    scheduleId,
    version,
    fireAt,
    state: 'enqueued',
    reason: null,
    runAt: fireAt,
    idempotencyKey: `occurrence:${scheduleId}:${fireAt.toISOString()}`,
    source: 'schedule',
    cancelPrevious: false,
  };
}

test('the lease: one holder at a time, epoch rises on every change of holder, release frees it at once', async () => {
  const a = await leaseAcquire(db.pool, 'l1', 'a', 60_000);
  assert.equal(a?.epoch, 1);
  assert.equal(await leaseAcquire(db.pool, 'l1', 'b', 60_000), null, 'held by a');
  assert.equal((await leaseRenew(db.pool, 'l1', 'a', 1, 60_000))?.epoch, 1);
  assert.equal(
    await leaseRenew(db.pool, 'l1', 'b', 1, 60_000),
    null,
    'b cannot renew a term it does not hold',
  );
  assert.equal(await leaseRelease(db.pool, 'l1', 'a', 1), true);
  const b = await leaseAcquire(db.pool, 'l1', 'b', 60_000);
  assert.equal(b?.epoch, 2);
  assert.equal(await leaseRenew(db.pool, 'l1', 'a', 1, 60_000), null, 'a old term is gone');
  // Expiry is judged by the database's clock: a 1 ms term is over by the next statement.
  await leaseAcquire(db.pool, 'l2', 'a', 1);
  await new Promise((r) => setTimeout(r, 5));
  assert.equal((await leaseAcquire(db.pool, 'l2', 'b', 60_000))?.epoch, 2);
  assert.equal((await leaseGet(db.pool, 'l2'))?.holder, 'b');
});

test('a write under a deposed epoch writes nothing: no occurrence, no job, no advance', async () => {
  const [id] = await insertSchedules(db.pool, 1, { spec: '* * * * *', nextFireAt: FIRE, prefix: 'fence' });
  assert.ok(id !== undefined);
  const old = await leaseAcquire(db.pool, 'fence', 'old', 1);
  await new Promise((r) => setTimeout(r, 5));
  const current = await leaseAcquire(db.pool, 'fence', 'new', 60_000);
  assert.ok(old !== null && current !== null && current.epoch === old.epoch + 1);

  const advance = {
    scheduleId: id,
    version: 1,
    nextFireAt: new Date(FIRE.getTime() + 60_000),
    lastFireAt: FIRE,
  };
  const stale = await occurrenceMaterialise(
    db.pool,
    { lease: 'fence', holder: 'old', epoch: old.epoch },
    [item(id)],
    [advance],
  );
  assert.deepEqual([stale.fenced, stale.inserted, stale.jobs, stale.advanced], [false, 0, 0, 0]);
  const counts = await db.pool.query<{ o: number; j: number; next: Date }>(
    `SELECT (SELECT count(*) FROM occurrences WHERE schedule_id = $1)::int AS o,
            (SELECT count(*) FROM jobs WHERE schedule_id = $1)::int AS j,
            (SELECT next_fire_at FROM schedules WHERE id = $1) AS next`,
    [id],
  );
  assert.deepEqual(counts.rows[0], { o: 0, j: 0, next: FIRE });

  const ok = await occurrenceMaterialise(
    db.pool,
    { lease: 'fence', holder: 'new', epoch: current.epoch },
    [item(id)],
    [advance],
  );
  assert.deepEqual([ok.fenced, ok.inserted, ok.jobs, ok.advanced], [true, 1, 1, 1]);
  const row = await db.pool.query<{ epoch: number; job_id: number; state: string }>(
    'SELECT epoch, job_id, state FROM occurrences WHERE schedule_id = $1',
    [id],
  );
  assert.equal(row.rows[0]?.epoch, current.epoch);
  assert.equal(row.rows[0]?.job_id, ok.jobIds[0]);
});

test('a second write of the same occurrence is a counted conflict; stale versions and paused schedules write nothing', async () => {
  const [a, b, c] = await insertSchedules(db.pool, 3, { spec: '* * * * *', nextFireAt: FIRE, prefix: 'dup' });
  assert.ok(a !== undefined && b !== undefined && c !== undefined);
  const first = await occurrenceMaterialise(db.pool, null, [item(a), item(b)], []);
  assert.deepEqual([first.current, first.inserted, first.jobs], [2, 2, 2]);
  const again = await occurrenceMaterialise(db.pool, null, [item(a), item(b)], []);
  assert.deepEqual([again.current, again.inserted, again.jobs], [2, 0, 0], 'both conflict, no job inserted');

  await db.pool.query('UPDATE schedules SET paused = true, version = version + 1 WHERE id = $1', [c]);
  const paused = await occurrenceMaterialise(db.pool, null, [item(c, FIRE, 1), item(c, FIRE, 2)], []);
  assert.deepEqual([paused.current, paused.inserted], [0, 0], 'old version is stale, new version is paused');

  const jobs = await db.pool.query('SELECT 1 FROM jobs WHERE schedule_id = ANY($1::uuid[])', [[a, b, c]]);
  assert.equal(jobs.rowCount, 2);
});

test('a fenced write in flight lets its own renewals through but holds a takeover until it commits', async () => {
  const [id] = await insertSchedules(db.pool, 1, { spec: '* * * * *', nextFireAt: FIRE, prefix: 'lock' });
  assert.ok(id !== undefined);
  const term = await leaseAcquire(db.pool, 'lock', 'leader', 60_000);
  assert.ok(term !== null);
  const writer = await db.pool.connect();
  const other = await db.pool.connect();
  try {
    await writer.query('BEGIN');
    const written = await occurrenceMaterialise(
      writer,
      { lease: 'lock', holder: 'leader', epoch: term.epoch },
      [item(id)],
      [],
    );
    assert.equal(written.inserted, 1);
    // The write is open and holds its lock. A renewal must not wait for it (lock_timeout makes a
    // wait an error rather than a hang).
    await other.query("SET lock_timeout = '2s'");
    assert.equal((await leaseRenew(other, 'lock', 'leader', term.epoch, 60_000))?.epoch, term.epoch);
    // Expire the term, as if the leader had stalled; a standby's takeover now has to wait.
    await other.query(
      "UPDATE leases SET expires_at = clock_timestamp() - interval '1 second' WHERE name = 'lock'",
    );
    await other.query("SET lock_timeout = '300ms'");
    await assert.rejects(leaseAcquire(other, 'lock', 'standby', 60_000), /lock timeout/);
    await other.query("SET lock_timeout = '5s'");
    const takeover = leaseAcquire(other, 'lock', 'standby', 60_000);
    await writer.query('COMMIT');
    assert.equal((await takeover)?.epoch, term.epoch + 1);
  } finally {
    await other.query('RESET lock_timeout');
    writer.release();
    other.release();
  }
});
