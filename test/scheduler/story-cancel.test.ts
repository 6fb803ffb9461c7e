/**
 * Failure story 5: cancel a schedule whose entry is already in a timing-wheel bucket (and, in the
 * second run, in the heap). Paused, deleted and re-timed schedules must never fire from the entry
 * they left behind; untouched ones fire. The in-memory half of this (a stale entry surfacing from a
 * bucket is discarded) is tested on the structures in due-index.test.ts; this is the process.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Client } from '../../src/index.ts';
import { createTestDatabase } from '../support/db.ts';
import { insertSchedules } from './helpers.ts';
import { nextWholeSecond, sleep, startScheduler } from './processes.ts';

/** Time the edits need before the fire time, however slowly the machine runs them. */
const EDIT_MARGIN_MS = 3000;

for (const dueIndex of ['wheel', 'heap'] as const) {
  test(`pause, delete or re-time a schedule already in the ${dueIndex}: it never fires`, async () => {
    // The story needs the entries loaded and the edits made before the fire time. A loaded machine
    // can take most of the lead just starting the scheduler; then the set-up starts again with a
    // longer lead, since a late start is no part of what is tested.
    let setUp: Awaited<ReturnType<typeof loadedScheduler>> | null = null;
    for (const leadMs of [8000, 16_000, 32_000]) {
      setUp = await loadedScheduler(dueIndex, leadMs);
      if (setUp !== null) break;
    }
    assert.ok(setUp !== null, 'the scheduler never started leading within 32 s');
    const { db, client, scheduler, ids, fireAt } = setUp;
    const paused = ids.slice(0, 10);
    const deleted = ids.slice(10, 20);
    const retimed = ids.slice(20, 30);
    const kept = ids.slice(30);
    const later = new Date(fireAt.getTime() + 3_600_000).toISOString();
    await Promise.all([
      ...paused.map((id) => client.schedules.pause(id)),
      ...deleted.map((id) => client.schedules.delete(id)),
      ...retimed.map((id) => client.schedules.update(id, { spec: `at ${later}` })),
    ]);
    assert.ok(Date.now() < fireAt.getTime(), 'the edits happened before the fire time');
    await sleep(fireAt.getTime() - Date.now() + 1500);
    assert.equal((await scheduler.kill('SIGTERM')).code, 0, scheduler.stderr);

    const { rows } = await db.pool.query<{ schedule_id: string; fire_at: Date }>(
      'SELECT schedule_id, fire_at FROM occurrences',
    );
    assert.deepEqual(
      rows.map((r) => r.schedule_id).sort(),
      [...kept].sort(),
      'only untouched schedules fired',
    );
    const jobs = await db.pool.query<{ schedule_id: string }>('SELECT schedule_id FROM jobs');
    assert.deepEqual(jobs.rows.map((r) => r.schedule_id).sort(), [...kept].sort());
    const retimedRows = await db.pool.query<{ next_fire_at: Date }>(
      'SELECT next_fire_at FROM schedules WHERE id = ANY($1::uuid[])',
      [retimed],
    );
    for (const r of retimedRows.rows) assert.equal(r.next_fire_at.toISOString(), later);
  });
}

async function loadedScheduler(dueIndex: 'wheel' | 'heap', leadMs: number) {
  const db = await createTestDatabase();
  const client = new Client({ pool: db.pool });
  const fireAt = nextWholeSecond(leadMs);
  const ids = await insertSchedules(db.pool, 40, { spec: `at ${fireAt.toISOString()}`, nextFireAt: fireAt });
  const scheduler = startScheduler(db.url, ['--due-index', dueIndex]);
  await scheduler.waitFor(/leading epoch=1/);
  await sleep(300); // loaded: every entry sits in the index now
  if (Date.now() < fireAt.getTime() - EDIT_MARGIN_MS) return { db, client, scheduler, ids, fireAt };
  await scheduler.kill('SIGKILL');
  return null;
}
