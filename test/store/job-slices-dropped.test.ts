/**
 * Slices of succeeded jobs that retention has emptied are dropped by the maintenance role, and the
 * newest-first reads that walk the slices a range at a time (jobSliceWindows) return every job once,
 * in order, across slices, the gaps dropped ones leave and the default partition.
 */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { pino } from 'pino';
import { Maintenance } from '../../src/maintenance/maintenance.ts';
import { jobCountByState } from '../../src/store/job-counts.ts';
import { jobSearch, type JobSearchFilter } from '../../src/store/job-search.ts';
import { jobSliceList } from '../../src/store/job-slices.ts';
import { historyOldestRows } from '../../src/store/stats.ts';
import type { JobState } from '../../src/store/jobs.ts';
import { JobClient } from '../../src/worker/job-client.ts';
import { createTestDatabase } from '../support/db.ts';
import { attachSlices } from '../support/slices.ts';
import { startWorker, waitUntil } from '../worker/support.ts';

const db = await createTestDatabase();
const log = pino({ level: 'silent' });
const SIZE = 100;

/** Jobs with ids from `from`, one per state given, inserted as they would be after running. */
async function jobsAt(from: number, states: readonly JobState[], kind = 'k'): Promise<number[]> {
  await db.pool.query(`SELECT setval('jobs_id_seq', $1, false)`, [from]);
  const { rows } = await db.pool.query<{ id: number }>(
    `INSERT INTO jobs (queue, kind, state, idempotency_key, key_generated, attempt, started_at, finished_at)
     SELECT 'q', $2, s, 'key-' || $1::bigint || '-' || o, true, 1, now(),
            CASE WHEN s IN ('succeeded', 'dead', 'cancelled') THEN now() END
       FROM unnest($3::text[]) WITH ORDINALITY u (s, o)
     RETURNING id`,
    [from, kind, states],
  );
  return rows.map((r) => r.id);
}

async function partitionOf(id: number): Promise<string | undefined> {
  const { rows } = await db.pool.query<{ part: string }>(
    'SELECT tableoid::regclass::text AS part FROM jobs WHERE id = $1',
    [id],
  );
  return rows[0]?.part;
}

async function sliceNames(): Promise<string[]> {
  return (await jobSliceList(db.pool)).map((s) => s.name);
}

const m = new Maintenance({ pool: db.pool, log, sliceIds: SIZE });
const [first] = await jobSliceList(db.pool);
const END = first?.to ?? 0;

test('an emptied slice is dropped; one with a job left, one with an open job in its range, and the newest stay', async (t) => {
  t.after(() => m.stop());
  await attachSlices(db.pool, SIZE, 5);
  const at = (i: number): number => END + i * SIZE;
  assert.deepEqual(await sliceNames(), [
    'jobs_done_0',
    ...[0, 1, 2, 3, 4].map((i) => `jobs_done_${at(i)}`),
    'jobs_done_default',
  ]);
  // Slice 0: its succeeded jobs pruned (by hand here) and vacuumed away; its dead job is in jobs_ended.
  const [pruned, dead] = await jobsAt(at(0) + 1, ['succeeded', 'dead']);
  assert.equal(await partitionOf(dead ?? 0), 'jobs_ended');
  await db.pool.query('DELETE FROM jobs WHERE id = $1', [pruned]);
  // Slice 1 keeps a succeeded job; slice 2 has none but an open job whose id it covers.
  const [kept] = await jobsAt(at(1) + 1, ['succeeded']);
  const [open] = await jobsAt(at(2) + 1, ['available']);
  await db.pool.query(`SELECT setval('jobs_id_seq', $1)`, [at(4) + 10]);
  await db.pool.query(`VACUUM jobs_done_${at(0)}`);

  const pass = await m.runPass();
  assert.equal(pass.held, true);
  assert.deepEqual(await sliceNames(), [
    `jobs_done_${at(1)}`,
    `jobs_done_${at(2)}`,
    `jobs_done_${at(4)}`,
    'jobs_done_default',
  ]);
  assert.equal(await partitionOf(kept ?? 0), `jobs_done_${at(1)}`);
  assert.equal(await partitionOf(dead ?? 0), 'jobs_ended', 'the dead job outlives its slice');
  // The slices that were behind the newest two note finishes; a dropped one leaves no row behind.
  const { rows: past } = await db.pool.query<{ name: string }>(
    'SELECT name FROM job_slices_past ORDER BY from_id',
  );
  assert.deepEqual(
    past.map((r) => r.name),
    [`jobs_done_${at(1)}`, `jobs_done_${at(2)}`],
  );
  // The open job finishes into its own slice, which waited for it.
  await db.pool.query(`UPDATE jobs SET state = 'succeeded', finished_at = now() WHERE id = $1`, [open]);
  assert.equal(await partitionOf(open ?? 0), `jobs_done_${at(2)}`);
});

test('newest-first pages and counts read every job once across slices, dropped gaps and the default partition', async () => {
  const names = await sliceNames();
  const ranges = (await jobSliceList(db.pool)).filter((s) => s.to !== null);
  const mixed: JobState[] = [
    'succeeded',
    'dead',
    'succeeded',
    'available',
    'cancelled',
    'succeeded',
    'failed',
  ];
  for (const s of ranges) await jobsAt((s.from ?? 1) + 20, mixed);
  // A gap where slice 3 was dropped: nothing there now, nothing lost. Past the last slice: the default.
  const last = ranges.at(-1)?.to ?? 0;
  const strays = await jobsAt(last + 5, ['succeeded', 'succeeded', 'available'], 'stray');
  assert.equal(await partitionOf(strays[0] ?? 0), 'jobs_done_default');
  await jobsAt(END + 3 * SIZE + 50, ['available'], 'in-gap');
  assert.deepEqual(await sliceNames(), names, 'no slice attached or dropped under the reads');
  await db.pool.query('ANALYZE jobs');

  const filters: Omit<JobSearchFilter, 'limit'>[] = [
    {},
    { state: 'succeeded' },
    { state: 'dead' },
    { kind: 'stray' },
    { state: 'succeeded', kind: 'stray' },
    { queue: 'q', payload: {} },
  ];
  for (const f of filters) {
    const { rows } = await db.pool.query<{ id: number }>(
      `SELECT id FROM jobs WHERE ($1::text IS NULL OR state = $1) AND ($2::text IS NULL OR kind = $2)
        ORDER BY id DESC`,
      [f.state ?? null, f.kind ?? null],
    );
    const want = rows.map((r) => r.id);
    for (const limit of [1, 4, 200]) {
      const got: number[] = [];
      let beforeId: number | undefined;
      for (let pages = 0; pages < 100; pages++) {
        const page = await jobSearch(db.pool, {
          ...f,
          limit,
          ...(beforeId === undefined ? {} : { beforeId }),
        });
        assert.equal(page.cutShort, false);
        got.push(...page.rows.map((r) => r.id));
        if (page.next === null) break;
        beforeId = page.next;
      }
      assert.deepEqual(got, want, `${JSON.stringify(f)}, pages of ${limit}`);
    }
  }
  const { counts, exact } = await jobCountByState(db.pool, { cap: 1_000 });
  const { rows } = await db.pool.query<{ state: JobState; n: number }>(
    `SELECT state, count(*)::int AS n FROM jobs GROUP BY state`,
  );
  for (const r of rows) assert.equal(counts[r.state], r.n, r.state);
  assert.equal(exact.succeeded, true);
  const capped = await jobCountByState(db.pool, { cap: 3 });
  assert.deepEqual([capped.counts.succeeded, capped.exact.succeeded], [3, false]);
});

test('a slice dropped while a worker finishes jobs into the next one: every job succeeds once, none lost', async () => {
  const own = await createTestDatabase();
  // Slices of 10,000: the 2,000 jobs below all fall in the third.
  const size = 10_000;
  const end = await attachSlices(own.pool, size, 3);
  // The first two slices empty and behind the ids drawn: they may go while jobs finish into the third.
  await own.pool.query(`SELECT setval('jobs_id_seq', $1)`, [end + 2 * size]);
  const jobs = new JobClient(own.pool);
  const total = 2_000;
  const ids: number[] = [];
  for (let i = 0; i < total; i += 500) {
    const batch = Array.from({ length: Math.min(500, total - i) }, () => ({ queue: 'q', kind: 'k' }));
    ids.push(...(await jobs.enqueueMany(batch)).map((j) => j.id));
  }
  assert.ok((ids[0] ?? 0) > end + 2 * size && (ids.at(-1) ?? Infinity) < end + 3 * size);
  const runs = new Map<number, number>();
  const worker = await startWorker(
    own,
    {
      k: (ctx) => {
        runs.set(ctx.jobId, (runs.get(ctx.jobId) ?? 0) + 1);
        return Promise.resolve();
      },
    },
    { queues: [{ name: 'q', concurrency: 50 }] },
  );
  const dropper = new Maintenance({ pool: own.pool, log, sliceIds: size });
  try {
    const dropped = [`jobs_done_${end}`, `jobs_done_${end + size}`, 'jobs_done_0'];
    await waitUntil(
      'every job finished and the emptied slices dropped',
      async () => {
        await dropper.runPass();
        const { rows } = await own.pool.query<{ n: number }>(
          `SELECT count(*)::int AS n FROM jobs WHERE id = ANY ($1) AND state = 'succeeded'`,
          [ids],
        );
        const names = (await jobSliceList(own.pool)).map((s) => s.name);
        return rows[0]?.n === total && dropped.every((d) => !names.includes(d));
      },
      30_000,
    );
  } finally {
    await dropper.stop();
    await worker.stop();
  }
  assert.equal(runs.size, total);
  assert.ok(
    [...runs.values()].every((n) => n === 1),
    'no job ran twice',
  );
  const { rows } = await own.pool.query<{ part: string; n: number }>(
    `SELECT tableoid::regclass::text AS part, count(*)::int AS n FROM jobs WHERE id = ANY ($1) GROUP BY 1`,
    [ids],
  );
  assert.deepEqual(rows, [{ part: `jobs_done_${end + 2 * size}`, n: total }]);
});

test('the walk by id prunes slice by slice, past an empty slice, and stops at the young ones', async () => {
  const own = await createTestDatabase();
  const end = await attachSlices(own.pool, SIZE, 4);
  const at = (i: number): number => end + i * SIZE;
  // Finished 10 days ago in slices 0 and 2, nothing in slice 1, finished now in slice 3.
  const insert = async (from: number, n: number, finished: string): Promise<number[]> => {
    await own.pool.query(`SELECT setval('jobs_id_seq', $1, false)`, [from]);
    const { rows } = await own.pool.query<{ id: number }>(
      `INSERT INTO jobs (queue, kind, state, idempotency_key, key_generated, attempt, created_at, started_at, finished_at)
       SELECT 'q', 'k', 'succeeded', 'walk-' || $1::bigint || '-' || g, true, 1, ${finished}, ${finished}, ${finished}
         FROM generate_series(1, $2::int) g RETURNING id`,
      [from, n],
    );
    return rows.map((r) => r.id);
  };
  const old = "now() - interval '10 days'";
  const due = [...(await insert(at(0) + 1, 30, old)), ...(await insert(at(2) + 1, 30, old))];
  const young = await insert(at(3) + 1, 30, 'now()');
  const m = new Maintenance({ pool: own.pool, log, sliceIds: SIZE, batchSize: 10, dutyCycle: 1 });
  try {
    const pass = await m.runPass();
    assert.equal(pass.deleted.jobs, due.length);
  } finally {
    await m.stop();
  }
  const { rows } = await own.pool.query<{ id: number }>('SELECT id FROM jobs ORDER BY id');
  assert.deepEqual(
    rows.map((r) => r.id),
    young,
  );
});

test("the jobs' oldest row comes from the oldest slice holding one, past emptied and dropped slices", async () => {
  const own = await createTestDatabase();
  const end = await attachSlices(own.pool, SIZE, 3);
  /** A succeeded job with id `id`, made `hoursAgo` hours ago. */
  const made = async (id: number, hoursAgo: number, state = 'succeeded'): Promise<void> => {
    await own.pool.query(
      `INSERT INTO jobs (id, queue, kind, state, idempotency_key, key_generated, created_at, finished_at)
       VALUES ($1, 'q', 'k', $3, 'key-' || $1::bigint, true, now() - make_interval(hours => $2),
               CASE WHEN $3 = 'succeeded' THEN now() END)`,
      [id, hoursAgo, state],
    );
  };
  const oldestHours = async (): Promise<number | undefined> => {
    const row = (await historyOldestRows(own.pool)).find((r) => r.table === 'jobs');
    return row?.ageSeconds === null || row === undefined ? undefined : Math.round(row.ageSeconds / 3600);
  };
  assert.equal(await oldestHours(), undefined, 'no jobs: no age');
  await made(end + 10, 50);
  await made(end + SIZE + 10, 40);
  await made(end + 2 * SIZE + 10, 30);
  await made(end + 3 * SIZE + 10, 20); // past every slice: the default partition
  await made(end + 3 * SIZE + 20, 60, 'available');
  assert.equal(await oldestHours(), 60, 'an open job older than every finished one');
  await own.pool.query(`DELETE FROM jobs WHERE state = 'available'`);
  assert.equal(await oldestHours(), 50);
  // The oldest slice emptied: the next one answers. Then dropped under the kept slice list: no error.
  await own.pool.query('DELETE FROM jobs WHERE id = $1', [end + 10]);
  assert.equal(await oldestHours(), 40);
  await own.pool.query(`ALTER TABLE jobs_done DETACH PARTITION jobs_done_${end}`);
  await own.pool.query(`DROP TABLE jobs_done_${end}`);
  assert.equal(await oldestHours(), 40);
  await own.pool.query('DELETE FROM jobs WHERE id <= $1', [end + 2 * SIZE + 10]);
  assert.equal(await oldestHours(), 20, 'every slice empty: the default partition');
  // A slice attached after the list was read, holding the only job left: the walk reads the list again.
  await own.pool.query('DELETE FROM jobs');
  await own.pool.query(`SELECT setval('jobs_id_seq', $1)`, [end + 4 * SIZE]);
  const later = new Maintenance({ pool: own.pool, log, sliceIds: SIZE, retention: { enabled: false } });
  await later.runPass();
  await later.stop();
  const newest = (await jobSliceList(own.pool)).filter((s) => s.to !== null).at(-1);
  await made((newest?.from ?? 0) + 1, 10);
  const { rows: parts } = await own.pool.query<{ p: string }>(
    `SELECT tableoid::regclass::text AS p FROM jobs`,
  );
  assert.deepEqual(
    parts.map((r) => r.p),
    [newest?.name],
  );
  assert.equal(await oldestHours(), 10);
});
