/**
 * New jobs lie together beside a full history (migration 0030): enqueued after 30,000 finished jobs
 * filled their pages, each keeping less free space than a new job plus a tenth of a page, 1,000 new
 * ones take a few dozen pages of the table, not one page each of the leftover space at the end of
 * every old page, which is what a claim of 1,000 then had to read.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { JobClient } from '../../src/worker/job-client.ts';
import { createTestDatabase } from '../support/db.ts';

const db = await createTestDatabase();
const jobs = new JobClient(db.pool);

test('jobs enqueued beside a full history of finished jobs take few pages, not one page each', async () => {
  // Finished rows as they are kept, a little larger than a new job's: each full page keeps a few
  // hundred bytes, room for one new job row.
  await db.pool.query(
    `INSERT INTO jobs (queue, kind, payload, state, idempotency_key, key_generated, attempt, lease_owner,
                       created_at, started_at, finished_at)
     SELECT 'history', 'report', '{"report": "daily", "format": "pdf"}', 'succeeded',
            'occurrence:' || gen_random_uuid() || ':' || g, true, 1, 'host-1:1234:abcd',
            now() - interval '1 day', now() - interval '1 day', now() - interval '1 day'
     FROM generate_series(1, 30000) g`,
  );
  // What autovacuum does after such a load: the free space of every page goes into the free space map.
  await db.pool.query('VACUUM jobs');
  const { rows: history } = await db.pool.query<{ pages: number }>(
    `SELECT count(DISTINCT (ctid::text::point)[0])::int AS pages FROM jobs`,
  );
  const added = await jobs.enqueueMany(Array.from({ length: 1000 }, () => ({ queue: 'new', kind: 'noop' })));
  assert.equal(added.length, 1000);
  const { rows } = await db.pool.query<{ pages: number }>(
    `SELECT count(DISTINCT (ctid::text::point)[0])::int AS pages FROM jobs WHERE queue = 'new'`,
  );
  const pages = rows[0]?.pages ?? 0;
  // At most 40 rows fit a page; allow for a partly used last page of the history and the free space
  // map's rounding.
  assert.ok(pages <= 60, `1,000 new jobs on ${pages} pages (the history has ${history[0]?.pages} pages)`);
});
