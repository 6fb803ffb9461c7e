/**
 * The claims and the end of an attempt never plan against the slices of finished jobs: each names the
 * state it reads, so PostgreSQL prunes jobs to jobs_open when it plans, and a cached generic plan
 * locks and opens no slice. Without it every claim locked each of the ~35 slices a week at the source
 * document's rate keeps, with their indexes. Checked by the locks each statement's transaction holds,
 * run six times on one connection so the sixth is the cached generic plan.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  jobClaimBatch,
  jobClaimById,
  jobCompleteOutsideWorkflows,
  jobFailMany,
} from '../../src/store/jobs.ts';
import type { PoolClient } from '../../src/store/pool.ts';
import { JobClient } from '../../src/worker/job-client.ts';
import { createTestDatabase } from '../support/db.ts';
import { attachSlices } from '../support/slices.ts';

const db = await createTestDatabase();
const SIZE = 100;
await attachSlices(db.pool, SIZE, 5);
const jobs = new JobClient(db.pool);

/** The slices of finished jobs this connection's transaction holds a lock on. */
async function slicesLocked(tx: PoolClient): Promise<string[]> {
  const { rows } = await tx.query<{ name: string }>(
    `SELECT c.relname AS name FROM pg_locks l JOIN pg_class c ON c.oid = l.relation
      WHERE l.pid = pg_backend_pid() AND c.relname LIKE 'jobs_done\\_%' AND c.relkind = 'r'
      ORDER BY 1`,
  );
  return rows.map((r) => r.name);
}

/** Runs `step` six times, each in a transaction rolled back, and returns the slices the last one locked. */
async function lockedBy(step: (tx: PoolClient, id: number) => Promise<unknown>): Promise<string[]> {
  const tx = await db.pool.connect();
  try {
    let locked: string[] = [];
    for (let i = 0; i < 6; i++) {
      const { id } = await jobs.enqueue({ queue: 'locks', kind: 'k' });
      await tx.query('BEGIN');
      await step(tx, id);
      locked = await slicesLocked(tx);
      await tx.query('ROLLBACK');
      await db.pool.query('DELETE FROM jobs WHERE id = $1', [id]);
    }
    return locked;
  } finally {
    tx.release();
  }
}

const claim = (tx: PoolClient, id: number) =>
  jobClaimById(tx, { id, queue: 'locks', owner: 'w1', leaseMs: 30_000 });

test('a claim by id locks no slice of finished jobs', async () => {
  assert.deepEqual(await lockedBy(claim), []);
});

test('a batch claim, planned on its run or from the poll’s cached plan, locks no slice of finished jobs', async () => {
  for (const poll of [false, true]) {
    const locked = await lockedBy(async (tx, id) => {
      const claimed = await jobClaimBatch(tx, {
        queue: 'locks',
        limit: 10,
        owner: 'w1',
        leaseMs: 30_000,
        tenantCursor: '',
        poll,
        limited: false,
      });
      assert.deepEqual(
        claimed.map((j) => j.id),
        [id],
      );
    });
    assert.deepEqual(locked, [], `poll ${poll}`);
  }
});

test('a failed attempt that will be retried locks no slice of finished jobs', async () => {
  const locked = await lockedBy(async (tx, id) => {
    const [claimed] = await claim(tx, id);
    assert.ok(claimed !== undefined);
    const [failed] = await jobFailMany(tx, 'w1', [
      { id, attempt: claimed.attempt, outcome: 'failed', error: 'boom', retryable: true },
    ]);
    assert.equal(failed?.state, 'failed');
  });
  assert.deepEqual(locked, []);
});

test('a success locks only the slice its job moves into', async () => {
  const locked = await lockedBy(async (tx, id) => {
    const [claimed] = await claim(tx, id);
    assert.ok(claimed !== undefined);
    assert.deepEqual(await jobCompleteOutsideWorkflows(tx, 'w1', [{ id, attempt: claimed.attempt }]), [id]);
  });
  assert.ok(locked.length <= 1, `locked ${locked.join(', ')}`);
});
