import assert from 'node:assert/strict';
import { test } from 'node:test';
import { jobInsertMany } from '../../src/store/job-insert.ts';
import { jobClaimBatch, type JobClaimParams } from '../../src/store/jobs.ts';
import type { PoolClient } from '../../src/store/pool.ts';
import { jobInsertOf } from '../../src/contract/job.ts';
import { createTestDatabase } from '../support/db.ts';

const db = await createTestDatabase();

/** Sequential scans of the open jobs' partition this transaction has made so far. */
async function seqScans(tx: PoolClient): Promise<number> {
  const { rows } = await tx.query<{ n: number }>(
    `SELECT pg_stat_get_xact_numscans('jobs_open'::regclass)::int AS n`,
  );
  return rows[0]?.n ?? -1;
}

test('a burst after an idle spell is claimed through the indexes, not with a plan made on the empty table', async () => {
  // The table empty and analysed as empty, as in a new cluster or after a quiet night.
  await db.pool.query('VACUUM ANALYZE jobs');
  const claim: JobClaimParams = {
    queue: 'burst',
    limit: 1000,
    owner: 'w1',
    leaseMs: 60_000,
    tenantCursor: '',
    limited: false,
  };
  const tx = await db.pool.connect();
  try {
    await tx.query('BEGIN');
    // An idle worker's polls on one connection: more than the five runs after which PostgreSQL may
    // cache a named statement's generic plan, which for an empty table reads it with seq scans.
    for (let i = 0; i < 8; i++) assert.deepEqual(await jobClaimBatch(tx, { ...claim, poll: true }), []);
    await jobInsertMany(
      tx,
      Array.from({ length: 50_000 }, () => jobInsertOf({ queue: 'burst', kind: 'k' }, 'default')),
    );
    // The burst's wake-up: the claim that follows it is planned for the table as it is now.
    const before = await seqScans(tx);
    assert.equal((await jobClaimBatch(tx, claim)).length, 1000);
    assert.equal(await seqScans(tx), before, 'the claim did not scan the whole jobs table');
    await tx.query('ROLLBACK');
  } finally {
    tx.release();
  }
});

test("a burst's claim finds the rows it locked by their TIDs, not by reading every available job again", async () => {
  // Statistics taken while the queue was idle (every job running): the available jobs look like none.
  await jobInsertMany(
    db.pool,
    Array.from({ length: 20_000 }, () => jobInsertOf({ queue: 'idle', kind: 'k' }, 'default')),
  );
  await db.pool.query(
    `UPDATE jobs SET state = 'running', attempt = 1, lease_owner = 'w0', lease_expires_at = now() + interval '1 hour'
      WHERE queue = 'idle'`,
  );
  await db.pool.query('ANALYZE jobs');
  const tx = await db.pool.connect();
  try {
    await tx.query('BEGIN');
    await jobInsertMany(
      tx,
      Array.from({ length: 5_000 }, () => jobInsertOf({ queue: 'burst-tid', kind: 'k' }, 'default')),
    );
    const read = async (): Promise<number> => {
      const { rows } = await tx.query<{ n: number }>(
        `SELECT sum(pg_stat_get_xact_tuples_returned(i.indexrelid))::int AS n
           FROM pg_index i WHERE i.indrelid = 'jobs_open'::regclass`,
      );
      return rows[0]?.n ?? -1;
    };
    const before = await read();
    const claim = {
      queue: 'burst-tid',
      limit: 1000,
      owner: 'w1',
      leaseMs: 60_000,
      tenantCursor: '',
      limited: false,
    };
    assert.equal((await jobClaimBatch(tx, claim)).length, 1000);
    // The head of the line, 1,000 entries and a few for the tenants; scanned again to find the rows
    // to update, every one of the 5,000 would be read once more.
    const entries = (await read()) - before;
    assert.ok(entries < 1_500, `index entries read by the claim: ${entries}`);
    await tx.query('ROLLBACK');
  } finally {
    tx.release();
  }
});
