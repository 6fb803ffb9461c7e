/**
 * A job's attempts and effects go with it on every delete. Retention's batch deletes and counts them
 * itself and marks its statement so the jobs_delete trigger leaves them to it (migration 0034); the
 * mark must reach no other statement, even one later in the same transaction.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { leaseAcquire } from '../../src/store/leases.ts';
import { withTransaction } from '../../src/store/pool.ts';
import { jobPruneBatch, type RetentionPolicy } from '../../src/store/retention.ts';
import { count, DAY_MS, insertJobs } from '../maintenance/support.ts';
import { createTestDatabase } from '../support/db.ts';

const db = await createTestDatabase();
const NOW = new Date();
const ago = (ms: number): Date => new Date(NOW.getTime() - ms);
const POLICY: RetentionPolicy = {
  d: { succeeded: 7 * 86_400, cancelled: 30 * 86_400, dead: 30 * 86_400, occurrences: 30 * 86_400 },
  q: {},
  t: {},
};

async function children(ids: number[]): Promise<{ attempts: number; effects: number }> {
  return {
    attempts: await count(db.pool, 'SELECT count(*) FROM job_attempts WHERE job_id = ANY ($1)', [ids]),
    effects: await count(db.pool, 'SELECT count(*) FROM job_effects WHERE job_id = ANY ($1)', [ids]),
  };
}

test('a retention batch counts the attempts and effects it deletes; a delete after it in the same transaction still takes its own', async () => {
  const [due, other] = await insertJobs(db.pool, [
    { state: 'succeeded', at: ago(8 * DAY_MS), attempts: 2, effects: 1 },
    // Not due: the batch keeps it, the plain delete below takes it.
    { state: 'succeeded', at: ago(DAY_MS), attempts: 3, effects: 2 },
  ]);
  assert.ok(due !== undefined && other !== undefined);
  const term = await leaseAcquire(db.pool, 'maintenance-children', 'h1', 60_000);
  assert.ok(term !== null);
  const fence = { lease: 'maintenance-children', holder: 'h1', epoch: term.epoch };

  await withTransaction(db.pool, async (tx) => {
    const r = await jobPruneBatch(tx, fence, NOW, POLICY, 'id', due - 1, 2, 0);
    assert.deepEqual([r.deleted, r.attempts, r.effects], [1, 2, 1]);
    await tx.query('DELETE FROM jobs WHERE id = $1', [other]);
  });
  assert.deepEqual(await children([due]), { attempts: 0, effects: 0 });
  assert.deepEqual(await children([other]), { attempts: 0, effects: 0 });
});

test('a delete of jobs outside retention takes their attempts and effects', async () => {
  const ids = await insertJobs(db.pool, [
    { state: 'dead', at: ago(DAY_MS), attempts: 4, effects: 1 },
    { state: 'succeeded', at: ago(DAY_MS), attempts: 1 },
  ]);
  assert.deepEqual(await children(ids), { attempts: 5, effects: 1 });
  await db.pool.query('DELETE FROM jobs WHERE id = ANY ($1)', [ids]);
  assert.deepEqual(await children(ids), { attempts: 0, effects: 0 });
});
