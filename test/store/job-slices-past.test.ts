/**
 * Slices of succeeded jobs behind the newest two (migration 0044): the maintenance role has each
 * note when a job finishes into it, and the per-minute reads of finished jobs and of the backlog
 * (which reads the jobs finished in its window too) read such a slice only when a job finished into
 * it since the window started. Asserted on the counts the reads return and on the scans they made
 * of each slice (pg_stat_xact_user_tables), not on timings.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { Maintenance } from '../../src/maintenance/maintenance.ts';
import { historyBacklogPerMinute, historyThroughputPerMinute } from '../../src/store/history.ts';
import { jobSliceList } from '../../src/store/job-slices.ts';
import { jobClaimBatch, jobCompleteMany } from '../../src/store/jobs.ts';
import { withTransaction, type Queryable } from '../../src/store/pool.ts';
import { JobClient } from '../../src/worker/job-client.ts';
import { createTestDatabase } from '../support/db.ts';

const db = await createTestDatabase();
const jobs = new JobClient(db.pool);
const log = pino({ level: 'silent' });
const SIZE = 1_000;

async function enqueue(queue: string): Promise<number> {
  const [job] = await jobs.enqueueMany([{ queue, kind: 'k' }]);
  if (job === undefined) throw new Error('nothing enqueued');
  return job.id;
}

async function finish(queue: string, id: number): Promise<void> {
  const claimed = await jobClaimBatch(db.pool, {
    queue,
    limit: 1,
    owner: 'w1',
    leaseMs: 60_000,
    tenantCursor: '',
    limited: false,
  });
  assert.deepEqual(
    claimed.map((c) => c.id),
    [id],
  );
  await jobCompleteMany(db.pool, 'w1', [{ id, attempt: 1 }]);
}

/** Scans of `slice` the backend's counters hold: this transaction's, and maybe earlier unflushed ones. */
async function scansOf(tx: Queryable, slice: string): Promise<number> {
  const { rows } = await tx.query<{ scans: number }>(
    `SELECT (coalesce(seq_scan, 0) + coalesce(idx_scan, 0))::int AS scans
       FROM pg_stat_xact_user_tables WHERE relname = $1`,
    [slice],
  );
  return rows[0]?.scans ?? 0;
}

interface Read {
  succeeded: number;
  /** Scans of the slice by the read of finished jobs per minute. */
  scans: number;
  /** Scans of the slice by the read of the backlog per minute, which reads the jobs finished too. */
  backlogScans: number;
}

/** Jobs finished in the last `ms` by the charts' reads, and the scans those made of `slice`. */
async function readLast(ms: number, slice: string): Promise<Read> {
  return withTransaction(db.pool, async (tx) => {
    const { rows: clock } = await tx.query<{ now: Date }>('SELECT now()');
    const now = clock[0]?.now.getTime() ?? 0;
    const range = { from: new Date(now - ms), to: new Date(now + 60_000) };
    // Counted as differences: a backend's counters may still hold its earlier transactions' scans
    // (the maintenance pass's, on the same pool), which PostgreSQL flushes at most once a second.
    const before = await scansOf(tx, slice);
    const minutes = await historyThroughputPerMinute(tx, range);
    const between = await scansOf(tx, slice);
    await historyBacklogPerMinute(tx, range);
    const backlogScans = (await scansOf(tx, slice)) - between;
    return { succeeded: minutes.reduce((n, m) => n + m.succeeded, 0), scans: between - before, backlogScans };
  });
}

/** Jobs made first, with ids in the first slice, that run only after the ids moved two slices on. */
const late = await enqueue('late');
const later = await enqueue('later');
const HOUR = 3_600_000;

test('a slice behind the newest two is read for recent finishes only once a job finished into it', async () => {
  const [first] = await jobSliceList(db.pool);
  assert.equal(first?.name, 'jobs_done_0');
  const end = first.to ?? 0;
  const m = new Maintenance({ pool: db.pool, log, sliceIds: SIZE, retention: { enabled: false } });
  try {
    await db.pool.query(`SELECT setval('jobs_id_seq', $1)`, [end - 400]);
    await m.runPass();
    const { rows: none } = await db.pool.query('SELECT name FROM job_slices_past');
    assert.deepEqual(none, [], 'two slices: both are the newest');
    await db.pool.query(`SELECT setval('jobs_id_seq', $1)`, [end + SIZE - 400]);
    await m.runPass();
  } finally {
    await m.stop();
  }
  assert.deepEqual(
    (await jobSliceList(db.pool)).map((s) => s.name),
    ['jobs_done_0', `jobs_done_${end}`, `jobs_done_${end + SIZE}`, 'jobs_done_default'],
  );
  const { rows: past } = await db.pool.query<{ name: string; from_id: string; to_id: number }>(
    'SELECT name, from_id::text, to_id FROM job_slices_past',
  );
  assert.deepEqual(past, [{ name: 'jobs_done_0', from_id: '-9223372036854775808', to_id: end }]);

  // A job finishing now goes to the slice of the ids drawn now.
  await finish('now', await enqueue('now'));
  // The first slice noted nothing for two hours: a read of the last hour leaves it alone.
  await db.pool.query(`UPDATE job_slices_past SET finished_at = now() - interval '2 hours'`);
  assert.deepEqual(await readLast(HOUR, 'jobs_done_0'), { succeeded: 1, scans: 0, backlogScans: 0 });

  // The late job finishes into the first slice, which notes it, and the read counts it.
  await finish('late', late);
  const { rows: where } = await db.pool.query<{ part: string; noted: boolean }>(
    `SELECT j.tableoid::regclass::text AS part, p.finished_at >= j.finished_at AS noted
       FROM jobs j, job_slices_past p WHERE j.id = $1`,
    [late],
  );
  assert.deepEqual(where, [{ part: 'jobs_done_0', noted: true }]);
  const read = await readLast(HOUR, 'jobs_done_0');
  assert.equal(read.succeeded, 2);
  assert.ok(read.scans > 0 && read.backlogScans > 0, 'the first slice was read');
});

test('a slice notes a finish once a minute at most, and a read reaches a minute back for it', async () => {
  await db.pool.query(`UPDATE job_slices_past SET finished_at = now() - interval '50 seconds'`);
  await finish('later', later);
  const { rows } = await db.pool.query<{ age: number }>(
    `SELECT extract(epoch FROM now() - finished_at)::int AS age FROM job_slices_past`,
  );
  assert.ok((rows[0]?.age ?? 0) >= 50, 'noted 50 s ago: left as it is');
  // A read of the last 30 s still reads the slice, which noted a finish 50 s ago.
  const read = await readLast(30_000, 'jobs_done_0');
  assert.equal(read.succeeded, 3, 'every job this file finished, the later one with them');
  assert.ok(read.scans > 0);
});
