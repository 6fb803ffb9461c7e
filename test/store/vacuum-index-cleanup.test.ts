/**
 * Retention deletes history from the front of each table, and vacuum skips the indexes when under
 * 2 % of the heap's pages hold dead rows (migrations 0033, 0037). Asserted on the pages a read of the first
 * row touches after a vacuum (EXPLAIN BUFFERS), which the machine's load does not change.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { Maintenance } from '../../src/maintenance/maintenance.ts';
import { FakeClock } from '../../src/clock.ts';
import { jobSliceList } from '../../src/store/job-slices.ts';
import { occurrenceSliceList } from '../../src/store/occurrence-slices.ts';
import { createTestDatabase } from '../support/db.ts';

const db = await createTestDatabase();
const log = pino({ level: 'silent' });

/** Pages touched by reading the first row of `table` by id, as the oldest-row read does. */
async function firstRowPages(table: string): Promise<number> {
  const { rows } = await db.pool.query<{ 'QUERY PLAN': { Plan: Record<string, number> }[] }>(
    `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) SELECT created_at FROM ${table} ORDER BY id LIMIT 1`,
  );
  const plan = rows[0]?.['QUERY PLAN'][0]?.Plan;
  return (plan?.['Shared Hit Blocks'] ?? 0) + (plan?.['Shared Read Blocks'] ?? 0);
}

test('after the oldest succeeded jobs are deleted, a vacuum clears their index entries however few they are', async () => {
  await db.pool.query(
    `INSERT INTO jobs (queue, kind, state, idempotency_key, started_at, finished_at, lease_owner, payload)
     SELECT 'q', 'k', 'succeeded', 'k' || g, now(), now(), 'w', jsonb_build_object('note', repeat('x', 100))
       FROM generate_series(1, 40000) g`,
  );
  await db.pool.query('VACUUM ANALYZE jobs_done_0');
  // The first 600 of 40,000 rows of one size: dead rows on 1.5 % of the pages, under the 2 % below
  // which vacuum would skip the indexes.
  const deleted = await db.pool.query(
    `DELETE FROM jobs WHERE id IN (SELECT id FROM jobs_done_0 ORDER BY id LIMIT 600)`,
  );
  assert.equal(deleted.rowCount, 600);
  await db.pool.query('VACUUM jobs_done_0');
  // The index's root and first leaf and one heap page; with the 600 dead entries left, 25 pages.
  const pages = await firstRowPages('jobs_done_0');
  assert.ok(pages <= 5, `the first row's read touched ${pages} pages`);
});

test('every slice of succeeded jobs and of the occurrence ledger, the ones the maintenance role attaches included, has index cleanup on', async () => {
  const [first] = await jobSliceList(db.pool);
  assert.ok(first?.to !== null && first?.to !== undefined);
  await db.pool.query(`SELECT setval('jobs_id_seq', $1)`, [first.to - 400]);
  // Ten days on, the role attaches slices of the ledger too.
  const m = new Maintenance({
    pool: db.pool,
    log,
    sliceIds: 1_000,
    retention: { enabled: false },
    clock: new FakeClock(new Date(Date.now() + 10 * 86_400_000)),
  });
  try {
    await m.runPass();
  } finally {
    await m.stop();
  }
  const slices = (await jobSliceList(db.pool)).map((s) => s.name);
  assert.ok(slices.includes(`jobs_done_${first.to}`), slices.join(', '));
  const ledger = await occurrenceSliceList(db.pool);
  assert.ok(ledger.some((s) => s.to.getTime() > Date.now() + 11 * 86_400_000));
  const { rows } = await db.pool.query<{ name: string; options: string[] | null }>(
    `SELECT c.relname AS name, c.reloptions AS options FROM pg_class c
      WHERE c.oid = ANY (ARRAY(SELECT inhrelid FROM pg_inherits
                                WHERE inhparent IN ('jobs_done'::regclass, 'occurrences'::regclass))
                         || ARRAY['job_attempts'::regclass]::oid[])
      ORDER BY 1`,
  );
  // The ledger's default partition among them.
  assert.equal(rows.length, slices.length + ledger.length + 2);
  for (const r of rows)
    assert.ok(r.options?.includes('vacuum_index_cleanup=on'), `${r.name}: ${JSON.stringify(r.options)}`);
});
