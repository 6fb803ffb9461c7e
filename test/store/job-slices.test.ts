/**
 * Jobs live in three partitions (migrations 0030, 0031): open ones in jobs_open, dead and cancelled
 * ones in jobs_ended, succeeded ones in jobs_done's slices by id, which the maintenance role attaches ahead of the ids. Asserted on where the rows
 * are (tableoid), not on timings.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import pg from 'pg';
import { pino } from 'pino';
import { Client } from '../../src/client.ts';
import { Maintenance } from '../../src/maintenance/maintenance.ts';
import { jobSliceEnsure, jobSliceIdsLeft, jobSliceList } from '../../src/store/job-slices.ts';
import { jobCancel, jobClaimBatch, jobCompleteMany } from '../../src/store/jobs.ts';
import { JobClient } from '../../src/worker/job-client.ts';
import { createTestDatabase } from '../support/db.ts';

const db = await createTestDatabase();
const jobs = new JobClient(db.pool);
const log = pino({ level: 'silent' });

async function partitionOf(id: number): Promise<string | undefined> {
  const { rows } = await db.pool.query<{ part: string }>(
    'SELECT tableoid::regclass::text AS part FROM jobs WHERE id = $1',
    [id],
  );
  return rows[0]?.part;
}

async function runOne(queue: string): Promise<number> {
  const [job] = await jobs.enqueueMany([{ queue, kind: 'k' }]);
  if (job === undefined) throw new Error('nothing enqueued');
  const [claimed] = await jobClaimBatch(db.pool, {
    queue,
    limit: 1,
    owner: 'w1',
    leaseMs: 60_000,
    tenantCursor: '',
    limited: false,
  });
  assert.equal(claimed?.id, job.id);
  await jobCompleteMany(db.pool, 'w1', [{ id: job.id, attempt: 1 }]);
  return job.id;
}

test('an open job is in jobs_open; succeeded, it moves to the slice of its id; dead or cancelled, to jobs_ended', async () => {
  const [job] = await jobs.enqueueMany([{ queue: 'where', kind: 'k' }]);
  assert.ok(job !== undefined);
  assert.equal(await partitionOf(job.id), 'jobs_open');
  await jobCancel(db.pool, job.id);
  assert.equal(await partitionOf(job.id), 'jobs_ended');
  const done = await runOne('where');
  assert.equal(await partitionOf(done), 'jobs_done_0');
});

test('the maintenance role attaches the next slice before the ids reach it, and ids past every slice go to the default', async () => {
  const size = 1_000;
  const [first] = await jobSliceList(db.pool);
  assert.ok(first?.to !== null && first?.to !== undefined);
  const end = first.to;
  // Ids drawn up to 400 short of the first slice's end: more than half a slice of 1,000 is left.
  await db.pool.query(`SELECT setval('jobs_id_seq', $1)`, [end - 600]);
  const m = new Maintenance({ pool: db.pool, log, sliceIds: size, retention: { enabled: false } });
  try {
    await m.runPass();
    assert.deepEqual(
      (await jobSliceList(db.pool)).map((s) => s.name),
      ['jobs_done_0', 'jobs_done_default'],
      'half a slice ahead: nothing attached',
    );
    await db.pool.query(`SELECT setval('jobs_id_seq', $1)`, [end - 400]);
    await m.runPass();
    assert.deepEqual(await jobSliceList(db.pool), [
      { name: 'jobs_done_0', from: null, to: end },
      { name: `jobs_done_${end}`, from: end, to: end + size },
      { name: 'jobs_done_default', from: null, to: null },
    ]);
    // A job drawn in the new slice's range finishes into it.
    await db.pool.query(`SELECT setval('jobs_id_seq', $1)`, [end + 10]);
    assert.equal(await partitionOf(await runOne('sliced')), `jobs_done_${end}`);

    // Ids outran the slices (the role stopped): the jobs finish into the default partition, and
    // the next slice starts after the highest of them.
    await db.pool.query(`SELECT setval('jobs_id_seq', $1)`, [end + size + 50]);
    assert.equal(await jobSliceIdsLeft(db.pool), -50, 'the ids drawn are past every slice');
    const stray = await runOne('sliced');
    assert.equal(await partitionOf(stray), 'jobs_done_default');
    await m.runPass();
    const last = (await jobSliceList(db.pool)).at(-2);
    assert.ok(
      last?.from !== null && last?.from !== undefined && last.from > stray,
      `${JSON.stringify(last)}`,
    );
    assert.ok((await jobSliceIdsLeft(db.pool)) > 0);
    assert.equal(await partitionOf(stray), 'jobs_done_default', 'a stray job stays where it is');
  } finally {
    await m.stop();
  }
});

/** The indexes of each of `tables`, by table, named by what they index (their definition past ON). */
async function indexesOf(tables: string[]): Promise<Map<string, string[]>> {
  const { rows } = await db.pool.query<{ tbl: string; def: string }>(
    `SELECT tablename AS tbl, regexp_replace(indexdef, '^.* USING ', '') AS def
       FROM pg_indexes WHERE tablename = ANY ($1) ORDER BY def`,
    [tables],
  );
  const by = new Map<string, string[]>(tables.map((t) => [t, []]));
  for (const r of rows) by.get(r.tbl)?.push(r.def);
  return by;
}

test('a slice of succeeded jobs carries only the indexes succeeded jobs are read by (migration 0042)', async () => {
  const slices = (await jobSliceList(db.pool)).map((s) => s.name);
  // The first slice (migration 0030), the one the role attached above, and the default.
  assert.ok(slices.length >= 3, slices.join());
  const by = await indexesOf([...slices, 'jobs_open', 'jobs_ended']);
  const done = [
    "btree (finished_at) WHERE (state = ANY (ARRAY['succeeded'::text, 'dead'::text, 'cancelled'::text]))",
    'btree (id, state)',
  ];
  for (const s of slices) assert.deepEqual(by.get(s), done, s);
  const open = by.get('jobs_open') ?? [];
  for (const state of ["'available'", "'running'", "'scheduled'", 'schedule_id IS NOT NULL']) {
    assert.ok(
      open.some((d) => d.includes(state)),
      `jobs_open indexes ${state}: ${open.join('; ')}`,
    );
  }
  assert.ok(!open.some((d) => d.includes("'dead'::text)") || d.includes("'cancelled'::text)")));
  const ended = by.get('jobs_ended') ?? [];
  assert.equal(ended.filter((d) => d.includes("(state = 'dead'::text)")).length, 2);
  assert.equal(ended.filter((d) => d.includes("(state = 'cancelled'::text)")).length, 1);
  assert.ok(!ended.some((d) => d.includes("'available'") || d.includes("'running'")));
});

test('a fence that no longer holds the lease attaches nothing', async () => {
  const before = await jobSliceList(db.pool);
  const end = Math.max(...before.map((s) => s.to ?? 0));
  await db.pool.query(`SELECT setval('jobs_id_seq', $1)`, [end]);
  const r = await jobSliceEnsure(db.pool, { lease: 'maintenance', holder: 'nobody', epoch: 999 }, 2);
  assert.deepEqual(r, { attached: null, reason: 'fenced' });
  assert.deepEqual(await jobSliceList(db.pool), before);
});

/**
 * Runs `waiter` while another transaction holds job `id` moving to `state` (jobs_done once it
 * commits): `waiter` reaches the row, waits for its lock, and then meets the row moved.
 */
async function whileMoving<T>(id: number, state: string, waiter: () => Promise<T>): Promise<T> {
  const mover = await db.pool.connect();
  try {
    await mover.query('BEGIN');
    await mover.query(`UPDATE jobs SET state = $2, finished_at = now() WHERE id = $1`, [id, state]);
    const waiting = waiter();
    await waitForLockWait();
    await mover.query('COMMIT');
    return await waiting;
  } finally {
    mover.release();
  }
}

test('a statement that waited on a job another transaction finished runs again and sees it finished', async () => {
  const [job, other] = await jobs.enqueueMany([
    { queue: 'race', kind: 'k' },
    { queue: 'race', kind: 'k' },
  ]);
  assert.ok(job !== undefined && other !== undefined);
  // A transaction (the cancel's).
  const r = await whileMoving(job.id, 'succeeded', () => jobCancel(db.pool, job.id));
  assert.equal(r?.previous, 'succeeded');
  assert.equal(r?.job.state, 'succeeded', 'a finished job is left as it is');
  // A statement on the pool outside a transaction.
  const update = await whileMoving(other.id, 'cancelled', () =>
    db.pool.query(`UPDATE jobs SET priority = 5 WHERE id = $1 AND state = 'available'`, [other.id]),
  );
  assert.equal(update.rowCount, 0);
});

test("an application's own pool handed to the Client runs a statement again when a job row moved under it", async () => {
  const own = new pg.Pool({ connectionString: db.url, max: 2 });
  // pg-pool's end() resolves once it has asked its connections to close, not once they have: the
  // file's database drop can still end one, and its error goes to the pool, which must listen.
  own.on('error', () => undefined);
  try {
    const client = new Client({ pool: own });
    const [job] = await client.jobs.enqueueMany([{ queue: 'race-own', kind: 'k' }]);
    assert.ok(job !== undefined);
    const update = await whileMoving(job.id, 'cancelled', () =>
      own.query(`UPDATE jobs SET priority = 5 WHERE id = $1 AND state = 'available'`, [job.id]),
    );
    assert.equal(update.rowCount, 0);
  } finally {
    await own.end();
  }
});

/** Until some backend of this database waits for a lock (the statement under test has reached the row). */
async function waitForLockWait(): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const { rows } = await db.pool.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`,
    );
    if ((rows[0]?.n ?? 0) > 0) return;
    if (Date.now() > deadline) throw new Error('no statement waited for the lock');
    await new Promise((r) => setTimeout(r, 20));
  }
}
