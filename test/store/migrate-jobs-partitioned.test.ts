/**
 * Upgrading a database that holds jobs to the partitioned jobs table (migrations 0030 and 0031): every row
 * keeps its columns and lands in its partition, keys given stay unique, ids carry on from where
 * the old sequence was, and the triggers still count the dead letter and delete with a job.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, cp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { test } from 'node:test';
import { migrate } from '../../src/store/migrate.ts';
import { JobClient } from '../../src/worker/job-client.ts';
import { createEmptyDatabase } from '../support/db.ts';

const MIGRATIONS_DIR = fileURLToPath(new URL('../../src/store/migrations/', import.meta.url));

test('a database with jobs in every state upgrades to open and finished partitions, nothing lost', async () => {
  const db = await createEmptyDatabase();
  const before = await mkdtemp(join(tmpdir(), 'tidemark-migrations-'));
  for (const file of await readdir(MIGRATIONS_DIR)) {
    if (file < '0030') await cp(join(MIGRATIONS_DIR, file), join(before, file));
  }
  await migrate(db.pool, before);
  await db.pool.query(
    `INSERT INTO jobs (queue, kind, state, idempotency_key, key_generated, attempt, lease_owner, lease_expires_at,
                       started_at, finished_at, payload)
     SELECT 'up', 'k', s, 'key-' || s, s = 'available', 1,
            CASE WHEN s = 'running' THEN 'w1' END, CASE WHEN s = 'running' THEN now() + interval '1 hour' END,
            CASE WHEN s <> 'available' THEN now() END,
            CASE WHEN s IN ('succeeded', 'dead', 'cancelled') THEN now() END,
            jsonb_build_object('state', s)
       FROM unnest(ARRAY['scheduled', 'available', 'running', 'failed', 'succeeded', 'dead', 'cancelled']) s`,
  );
  await db.pool.query(
    `INSERT INTO job_attempts (job_id, attempt, worker, started_at, finished_at, outcome, error)
     SELECT id, 1, 'w1', now(), now(), 'failed', 'boom' FROM jobs WHERE state = 'dead'`,
  );
  const snapshot = async () =>
    (await db.pool.query('SELECT * FROM jobs ORDER BY id')).rows.map((r: Record<string, unknown>) => ({
      ...r,
    }));
  const rows = await snapshot();
  const { rows: seq } = await db.pool.query<{ next: number }>(`SELECT nextval('jobs_id_seq') AS next`);

  await migrate(db.pool);
  assert.deepEqual(await snapshot(), rows, 'every row and column as it was');
  const { rows: parts } = await db.pool.query<{ state: string; part: string }>(
    `SELECT state, tableoid::regclass::text AS part FROM jobs ORDER BY id`,
  );
  assert.deepEqual(
    parts.map((p) => `${p.state} ${p.part}`),
    [
      'scheduled jobs_open',
      'available jobs_open',
      'running jobs_open',
      'failed jobs_open',
      'succeeded jobs_done_0',
      'dead jobs_ended',
      'cancelled jobs_ended',
    ],
  );
  const { rows: attempts } = await db.pool.query<{ error: string }>(
    `SELECT a.error FROM job_attempts a JOIN jobs j ON j.id = a.job_id WHERE j.state = 'dead'`,
  );
  assert.deepEqual(attempts, [{ error: 'boom' }], "the dead job's attempt moved with it");
  const jobs = new JobClient(db.pool);
  const [next] = await jobs.enqueueMany([{ queue: 'up', kind: 'k' }]);
  assert.ok(next !== undefined && next.id > (seq[0]?.next ?? Infinity), 'ids carry on past the old sequence');
  // Keys given before the upgrade still hold, finished or not; a generated one was never a given key.
  for (const state of ['failed', 'succeeded', 'dead']) {
    const again = await jobs.enqueue({ queue: 'up', kind: 'k', idempotencyKey: `key-${state}` });
    assert.equal(again.created, false, state);
  }
  // The delete trigger frees a pruned job's key, and the dead letter's count follows.
  await db.pool.query(`DELETE FROM jobs WHERE state = 'dead'`);
  const { rows: counts } = await db.pool.query<{ state: string; n: number }>(
    `SELECT state, n::int FROM job_ended_counts WHERE queue = 'up' ORDER BY state`,
  );
  assert.deepEqual(counts, [
    { state: 'cancelled', n: 1 },
    { state: 'dead', n: 0 },
  ]);
  assert.equal((await jobs.enqueue({ queue: 'up', kind: 'k', idempotencyKey: 'key-dead' })).created, true);
});
