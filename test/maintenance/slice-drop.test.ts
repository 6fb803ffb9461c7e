/**
 * A slice of succeeded jobs whose every job is past its retention is dropped whole, with its jobs'
 * attempts, effects and keys, while the dead and cancelled jobs whose ids fall in it keep theirs; one
 * whose newest job comes due within a day keeps its due jobs until then; a slice with a job due
 * later than that, one with an open job in its range, the newest slice, and every slice under an
 * override that keeps succeeded jobs longer go row by row; a stale fence drops nothing; a detach
 * waits for no other slice's lock and takes jobs_done in short tries; an emptied slice goes though
 * another is held.
 */
import assert from 'node:assert/strict';
import { performance } from 'node:perf_hooks';
import { test } from 'node:test';
import { FakeClock } from '../../src/clock.ts';
import { createLogger } from '../../src/log.ts';
import { Maintenance, type MaintenanceOptions, type PruneBatch } from '../../src/maintenance/maintenance.ts';
import type { RetentionConfig } from '../../src/maintenance/retention-config.ts';
import { jobSliceChildrenPrune, jobSliceDropDue, jobSliceDue } from '../../src/store/job-slice-drop.ts';
import {
  jobSliceDropEmpty,
  jobSliceList,
  type BoundedSlice,
  type SliceDropResult,
} from '../../src/store/job-slices.ts';
import { leaseAcquire } from '../../src/store/leases.ts';
import type { Fence } from '../../src/store/occurrences.ts';
import type { Pool } from '../../src/store/pool.ts';
import { createTestDatabase } from '../support/db.ts';
import { attachSlices } from '../support/slices.ts';
import { count, DAY_MS, insertJobs, restsBetween, whileHeld, type JobSpec } from './support.ts';

const log = createLogger('test');
log.level = 'silent';
const SIZE = 100;
const T = new Date(Math.floor(Date.now() / 1000) * 1000);
const ago = (ms: number): Date => new Date(T.getTime() - ms);

interface Setup {
  pool: Pool;
  /** The first id of each of the four slices attached after jobs_done_0. */
  at: number[];
  slices: () => Promise<string[]>;
  /** Jobs from id `from` on, one per spec. */
  jobsAt: (from: number, specs: JobSpec[]) => Promise<number[]>;
  /** A role at clock T, a duty cycle of 1 and SIZE ids a slice; `options` on top. */
  maintenance: (retention?: RetentionConfig, options?: Partial<MaintenanceOptions>) => Maintenance;
}

async function setup(): Promise<Setup> {
  const db = await createTestDatabase();
  const end = await attachSlices(db.pool, SIZE, 4);
  const at = [0, 1, 2, 3].map((i) => end + i * SIZE);
  return {
    pool: db.pool,
    at,
    slices: async () => (await jobSliceList(db.pool)).map((s) => s.name),
    jobsAt: async (from, specs) => {
      await db.pool.query(`SELECT setval('jobs_id_seq', $1, false)`, [from]);
      return insertJobs(db.pool, specs);
    },
    maintenance: (retention = {}, options = {}) =>
      new Maintenance({
        pool: db.pool,
        log,
        retention,
        clock: new FakeClock(T),
        sliceIds: SIZE,
        dutyCycle: 1,
        ...options,
      }),
  };
}

/** Gives each job a key of its own in job_keys, as an enqueue with an idempotency key does. */
async function keyed(pool: Pool, ids: number[]): Promise<void> {
  await pool.query(
    `UPDATE jobs SET idempotency_key = 'given-' || id, key_generated = false WHERE id = ANY ($1)`,
    [ids],
  );
  await pool.query(
    `INSERT INTO job_keys (queue, key, job_id) SELECT queue, 'given-' || id, id FROM jobs WHERE id = ANY ($1)`,
    [ids],
  );
}

const old = (n: number, extra: Partial<JobSpec> = {}): JobSpec[] =>
  Array.from({ length: n }, () => ({
    state: 'succeeded',
    at: ago(8 * DAY_MS),
    attempts: 1,
    effects: 1,
    ...extra,
  }));

test('a slice whose every job is due goes whole with its jobs’ children; the others go row by row', async () => {
  const s = await setup();
  const [a, b, c, d] = s.at as [number, number, number, number];
  // Slice a: all due, and a dead job in its range (jobs_ended) that keeps its attempt, effect and key.
  // The dead job's id falls between theirs: one batch's range of ids holds all of them.
  const dropped = await s.jobsAt(a + 1, old(10));
  const [dead] = await s.jobsAt(a + 11, [{ state: 'dead', at: ago(8 * DAY_MS), attempts: 1, effects: 1 }]);
  dropped.push(...(await s.jobsAt(a + 12, old(10))));
  // Slice b: all due but one finished a day ago.
  const walked = await s.jobsAt(b + 1, old(20));
  const [young] = await s.jobsAt(b + 50, [{ state: 'succeeded', at: ago(DAY_MS) }]);
  // Slice c: all due, but an open job's id falls in it: it could still finish into the slice.
  const waiting = await s.jobsAt(c + 1, old(5));
  const [open] = await s.jobsAt(c + 50, [{ state: 'available', at: ago(DAY_MS) }]);
  // Slice d, the newest: the ids drawn have not passed it.
  const newest = await s.jobsAt(d + 1, old(5));
  await keyed(s.pool, [...dropped, dead ?? 0, ...walked]);
  const all = [...dropped, ...walked, ...waiting, ...newest];

  const m = s.maintenance();
  const pass = await m.runPass();
  await m.stop();
  assert.equal(pass.held, true);
  // jobs_done_0, empty and behind the ids, is due as well.
  assert.deepEqual(await s.slices(), [
    `jobs_done_${b}`,
    `jobs_done_${c}`,
    `jobs_done_${d}`,
    'jobs_done_default',
  ]);
  const left = await s.pool.query<{ id: number }>('SELECT id FROM jobs WHERE id = ANY ($1) ORDER BY id', [
    [...all, dead, young, open],
  ]);
  assert.deepEqual(
    left.rows.map((r) => r.id),
    [dead, young, open],
    'every due job went, by the drop or the walk; the newest slice is walked too',
  );
  assert.equal(await count(s.pool, `SELECT count(*) FROM pg_class WHERE relname = 'jobs_done_${a}'`), 0);
  assert.equal(await count(s.pool, 'SELECT count(*) FROM partitions_detached'), 0);
  assert.equal(pass.deleted.jobs, all.length);
  assert.equal(pass.deleted.job_attempts, all.length);
  assert.equal(pass.deleted.job_effects, all.length);
  assert.equal(await count(s.pool, 'SELECT count(*) FROM job_attempts WHERE job_id = ANY ($1)', [all]), 0);
  assert.equal(await count(s.pool, 'SELECT count(*) FROM job_effects WHERE job_id = ANY ($1)', [all]), 0);
  assert.equal(await count(s.pool, 'SELECT count(*) FROM job_keys WHERE job_id = ANY ($1)', [all]), 0);
  assert.equal(await count(s.pool, 'SELECT count(*) FROM job_attempts WHERE job_id = $1', [dead]), 1);
  assert.equal(await count(s.pool, 'SELECT count(*) FROM job_keys WHERE job_id = $1', [dead]), 1);
  assert.equal(await count(s.pool, 'SELECT count(*) FROM job_effects WHERE job_id = $1', [dead]), 1);
  assert.equal(m.metrics.snapshot().pruned.jobs, all.length);
});

test('a slice whose newest job comes due within a day keeps its due jobs until it goes whole', async () => {
  const s = await setup();
  const [a] = s.at as [number];
  const due = await s.jobsAt(a + 1, old(10));
  const [soon] = await s.jobsAt(a + 50, [{ state: 'succeeded', at: ago(7 * DAY_MS - 3_600_000) }]);
  await s.pool.query(`SELECT setval('jobs_id_seq', $1)`, [a + 3 * SIZE]);
  const ids = [...due, soon ?? 0];
  const first = s.maintenance();
  const waited = await first.runPass();
  await first.stop();
  assert.equal(waited.deleted.jobs, 0, 'due an hour from now: the due jobs wait for the slice');
  assert.equal(await count(s.pool, 'SELECT count(*) FROM jobs WHERE id = ANY ($1)', [ids]), ids.length);
  const later = new Maintenance({
    pool: s.pool,
    log,
    clock: new FakeClock(new Date(T.getTime() + 3_600_000 + 1_000)),
    sliceIds: SIZE,
    dutyCycle: 1,
  });
  const pass = await later.runPass();
  await later.stop();
  assert.equal(pass.deleted.jobs, ids.length);
  assert.ok(!(await s.slices()).includes(`jobs_done_${a}`));
});

test('an override keeping succeeded jobs longer, or forever, leaves every slice to the walk', async () => {
  for (const keep of ['10d', 'forever']) {
    const s = await setup();
    const [a] = s.at as [number];
    const gone = await s.jobsAt(a + 1, old(10));
    const kept = await s.jobsAt(a + 20, old(2, { queue: 'audit' }));
    const m = s.maintenance({ queues: { audit: { succeeded: keep } } });
    const pass = await m.runPass();
    await m.stop();
    assert.ok((await s.slices()).includes(`jobs_done_${a}`), keep);
    assert.equal(pass.deleted.jobs, gone.length, keep);
    assert.equal(
      await count(s.pool, 'SELECT count(*) FROM jobs WHERE id = ANY ($1)', [kept]),
      kept.length,
      keep,
    );
  }
});

test('a drop that finds jobs_done busy goes on the next pass without deleting the children again', async () => {
  const s = await setup();
  const [a] = s.at as [number];
  const ids = await s.jobsAt(a + 1, old(12));
  await s.pool.query(`SELECT setval('jobs_id_seq', $1)`, [a + 3 * SIZE]);
  // Slice a first in the walk: jobs_done_0, empty, would be dropped (or found busy) before it.
  await s.pool.query('ALTER TABLE jobs_done DETACH PARTITION jobs_done_0');
  await s.pool.query('DROP TABLE jobs_done_0');
  const batches: { sliceJobs?: number; wholeSlice?: boolean; deleted: number }[] = [];
  const m = new Maintenance({
    pool: s.pool,
    log,
    clock: new FakeClock(T),
    sliceIds: SIZE,
    dutyCycle: 1,
    batchSize: 5,
    onBatch: (b) => batches.push(b),
  });
  const holder = await s.pool.connect();
  try {
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE jobs_done IN ACCESS SHARE MODE');
    const busy = await m.runPass();
    assert.equal(busy.deleted.jobs, 0);
    await holder.query('COMMIT');
  } finally {
    holder.release();
  }
  assert.ok((await s.slices()).includes(`jobs_done_${a}`), 'busy: the slice stays');
  assert.equal(await count(s.pool, 'SELECT count(*) FROM job_attempts WHERE job_id = ANY ($1)', [ids]), 0);
  // Statements that deleted children of slice a's jobs (the empty slices after it have none).
  const children = (): number => batches.filter((b) => (b.sliceJobs ?? 0) > 0).length;
  const first = children();
  const pass = await m.runPass();
  await m.stop();
  assert.equal(pass.deleted.jobs, ids.length);
  assert.ok(!(await s.slices()).includes(`jobs_done_${a}`));
  assert.equal(children(), first, 'no children walk again');
  assert.deepEqual(
    batches.filter((b) => b.wholeSlice === true).map((b) => b.deleted),
    [ids.length],
  );
});

/**
 * Slice a due, with 12 jobs in four groups of three spread over its ids; slice b after it closed
 * and due `dueInMs` after T. The first slice, empty, is dropped so that slice a is the first walked.
 */
async function dueBeforeNext(s: Setup, dueInMs: number): Promise<number[]> {
  const [a, b] = s.at as [number, number];
  const ids: number[] = [];
  for (const from of [a + 1, a + 26, a + 51, a + 76]) ids.push(...(await s.jobsAt(from, old(3))));
  await s.jobsAt(b + 1, [{ state: 'succeeded', at: new Date(T.getTime() - 7 * DAY_MS + dueInMs) }]);
  await s.pool.query(`SELECT setval('jobs_id_seq', $1)`, [a + 3 * SIZE]);
  await s.pool.query('ALTER TABLE jobs_done DETACH PARTITION jobs_done_0');
  await s.pool.query('DROP TABLE jobs_done_0');
  return ids;
}

/**
 * One pass of a role with `options` (batches of 3, clock T) over dueBeforeNext's slices, the next
 * one due in 8 s: the five statements deleting slice a's children (four of three jobs,
 * then the one finding its end; the empty slice after b, closed and due, follows with one of none),
 * and when the pass began.
 */
async function childrenPass(
  s: Setup,
  options: Partial<MaintenanceOptions>,
): Promise<{ batches: PruneBatch[]; startedMs: number }> {
  const ids = await dueBeforeNext(s, 8_000);
  const batches: PruneBatch[] = [];
  const m = s.maintenance(
    {},
    {
      batchSize: 3,
      ...options,
      onBatch: (b) => {
        if (b.sliceJobs !== undefined && batches.length < 5) batches.push(b);
      },
    },
  );
  const startedMs = performance.now();
  const pass = await m.runPass();
  await m.stop();
  assert.equal(pass.deleted.jobs, ids.length);
  assert.ok(!(await s.slices()).includes(`jobs_done_${s.at[0]}`));
  assert.deepEqual(
    batches.map((b) => b.sliceJobs),
    [3, 3, 3, 3, 0],
  );
  return { batches, startedMs };
}

test("a due slice's children go evenly over three quarters of the time until the next slice is due, resting between batches", async () => {
  const { batches, startedMs } = await childrenPass(await setup(), {});
  // Each cycle is its part of the ids left times the time left of the 6 s planned: ~0.2 s for the
  // first batch's 3 ids, then ~1.5 s for each 25. Unpaced at a duty cycle of 1 they follow each
  // other at once (the next test).
  restsBetween(batches)
    .slice(1)
    .forEach((rest, i) => assert.ok(rest >= 500, `batch ${i + 3} started ${rest} ms after`));
  const endedMs = batches.at(-1)?.endedMs ?? Infinity;
  assert.ok(endedMs - startedMs < 8_000, `done ${endedMs - startedMs} ms after the pass began`);
});

test('with spreadSlices off, the same children go at the duty cycle though the next slice is 8 s away', async () => {
  const { batches } = await childrenPass(await setup(), { spreadSlices: false });
  // Paced (the test above) the rests add up to ~4.5 s; at a duty cycle of 1 there are none.
  const rests = restsBetween(batches).reduce((a, b) => a + b, 0);
  assert.ok(rests < 1_000, `rests of ${rests} ms`);
});

test("a pass's time for a slice's children up, the next pass goes on from where it stopped", async () => {
  const s = await setup();
  const ids = await dueBeforeNext(s, 3_600_000);
  const batches: PruneBatch[] = [];
  const m = s.maintenance({}, { batchSize: 3, sliceSumPassMs: 1, onBatch: (b) => batches.push(b) });
  const passes: number[] = [];
  while (passes.length < 10 && (await s.slices()).includes(`jobs_done_${s.at[0]}`)) {
    passes.push((await m.runPass()).deleted.jobs);
  }
  await m.stop();
  // A batch or two a pass (its rest cut to the pass's time), none read twice, then the drop.
  assert.ok(passes.length >= 3, `dropped in pass ${passes.length}`);
  assert.deepEqual(passes, [...passes.slice(0, -1).map(() => 0), ids.length]);
  assert.deepEqual(
    batches.filter((b) => b.sliceJobs !== undefined).map((b) => b.sliceJobs),
    [3, 3, 3, 3, 0],
  );
  assert.equal(await count(s.pool, 'SELECT count(*) FROM job_attempts WHERE job_id = ANY ($1)', [ids]), 0);
});

test('a role that takes over mid-slice goes on after the last id done, and counts the slice once', async () => {
  const s = await setup();
  const ids = await dueBeforeNext(s, 3_600_000);
  const sliceJobs: number[] = [];
  const role = (): Maintenance =>
    s.maintenance(
      {},
      {
        batchSize: 3,
        sliceSumPassMs: 1,
        onBatch: (b) => b.sliceJobs !== undefined && sliceJobs.push(b.sliceJobs),
      },
    );
  const first = role();
  assert.equal((await first.runPass()).deleted.jobs, 0);
  await first.stop();
  const before = sliceJobs.length;
  assert.ok(before >= 1 && before < 4, `${before} batches before the stop`);
  // Each pass a new role, as after a restart or a failover.
  const dropped: number[] = [];
  for (let i = 0; i < 10 && (await s.slices()).includes(`jobs_done_${s.at[0]}`); i++) {
    const next = role();
    dropped.push((await next.runPass()).deleted.jobs);
    await next.stop();
  }
  assert.deepEqual(sliceJobs, [3, 3, 3, 3, 0], 'no job read twice');
  assert.equal(dropped.at(-1), ids.length, "the drop counts the slice's jobs, those the first role read too");
  assert.equal(
    await count(s.pool, 'SELECT count(*) FROM job_slice_walks'),
    0,
    'the walk is forgotten with the slice',
  );
});

test('a slice left detached is dropped by the next pass, holding no lock of jobs_done while it waits', async () => {
  const s = await setup();
  // As a role stopped between a slice's detach and its drop leaves it.
  await s.pool.query('CREATE TABLE jobs_done_left (LIKE jobs_done)');
  await s.pool.query(`INSERT INTO partitions_detached (name) VALUES ('jobs_done_left')`);
  const reader = await s.pool.connect();
  const completer = await s.pool.connect();
  try {
    await reader.query('BEGIN');
    await reader.query('LOCK TABLE jobs_done_left IN ACCESS SHARE MODE');
    const m = s.maintenance({ enabled: false });
    const pass = m.runPass();
    // The pass's drop waits for the reader's lock of the detached table...
    const deadline = Date.now() + 10_000;
    const waiting = `SELECT count(*) FROM pg_locks
                      WHERE NOT granted AND relation = 'jobs_done_left'::regclass
                        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`;
    while ((await count(s.pool, waiting)) === 0) {
      assert.ok(Date.now() < deadline, 'the drop never waited');
      await new Promise((r) => setTimeout(r, 20));
    }
    // ...while what a completion takes of jobs_done, and more, is free.
    await completer.query('BEGIN');
    await completer.query(`SET LOCAL lock_timeout = '1s'`);
    await completer.query('LOCK TABLE jobs_done IN ACCESS EXCLUSIVE MODE');
    await completer.query('COMMIT');
    await reader.query('COMMIT');
    assert.equal((await pass).held, true);
    await m.stop();
  } finally {
    reader.release();
    completer.release();
  }
  assert.equal(await count(s.pool, `SELECT count(*) FROM pg_class WHERE relname = 'jobs_done_left'`), 0);
  assert.equal(await count(s.pool, 'SELECT count(*) FROM partitions_detached'), 0);
});

/** A fence of the maintenance lease, taken by this test as its holder. */
async function maintenanceFence(pool: Pool): Promise<Fence> {
  const term = await leaseAcquire(pool, 'maintenance', 'test', 60_000);
  assert.ok(term !== null);
  return { lease: 'maintenance', holder: 'test', epoch: term.epoch };
}

/** A due slice a (its jobs' children gone) and a fence of the maintenance lease, for jobSliceDropDue. */
async function dueSlice(s: Setup): Promise<{ slice: BoundedSlice; fence: Fence }> {
  const [a] = s.at as [number];
  await s.jobsAt(a + 1, old(3));
  await s.pool.query(`SELECT setval('jobs_id_seq', $1)`, [a + 3 * SIZE]);
  const slice = (await jobSliceList(s.pool)).find((x): x is BoundedSlice => x.from === a);
  assert.ok(slice !== undefined);
  const fence = await maintenanceFence(s.pool);
  assert.equal((await jobSliceChildrenPrune(s.pool, fence, slice, 0, 100)).fenced, true);
  return { slice, fence };
}

test("a slice's detach waits for no other slice's lock, as autovacuum holds one for seconds", async () => {
  const s = await setup();
  const { slice, fence } = await dueSlice(s);
  const other = `jobs_done_${s.at[1] ?? 0}`;
  await whileHeld(s.pool, `LOCK TABLE ${other} IN SHARE UPDATE EXCLUSIVE MODE`, async () => {
    assert.equal(await jobSliceDropDue(s.pool, fence, slice, T, 7 * 86_400), 'dropped');
  });
  assert.ok(!(await s.slices()).includes(slice.name));
  assert.ok((await s.slices()).includes(other));
  assert.equal(await count(s.pool, 'SELECT count(*) FROM partitions_detached'), 0);
});

test('an emptied slice is dropped though a slice still being pruned is held, as autovacuum holds it', async () => {
  const s = await setup();
  const [a, b] = s.at as [number, number];
  // Slice a never took a job; b holds three past retention, deleted row by row.
  await s.jobsAt(b + 1, old(3));
  await s.pool.query(`SELECT setval('jobs_id_seq', $1)`, [a + 3 * SIZE]);
  const fence = await maintenanceFence(s.pool);
  const pruned = `jobs_done_${b}`;
  let r: SliceDropResult | undefined;
  await whileHeld(s.pool, `LOCK TABLE ${pruned} IN SHARE UPDATE EXCLUSIVE MODE`, async () => {
    r = await jobSliceDropEmpty(s.pool, fence);
  });
  assert.equal(r?.reason, null);
  assert.ok(r?.dropped.some((x) => x.name === `jobs_done_${a}`));
  const left = await s.slices();
  assert.ok(!left.includes(`jobs_done_${a}`));
  assert.ok(left.includes(pruned));
  assert.equal(await count(s.pool, 'SELECT count(*) FROM partitions_detached'), 0);
});

test('a drop that finds jobs_done held tries again in short tries, and is busy once they are spent', async () => {
  const s = await setup();
  const { slice, fence } = await dueSlice(s);
  const waiting = `SELECT count(*) FROM pg_locks
                    WHERE NOT granted AND relation = 'jobs_done'::regclass
                      AND database = (SELECT oid FROM pg_database WHERE datname = current_database())`;
  const until = async (want: (n: number) => boolean, what: string): Promise<void> => {
    const deadline = Date.now() + 10_000;
    while (!want(await count(s.pool, waiting))) {
      assert.ok(Date.now() < deadline, what);
      await new Promise((r) => setTimeout(r, 5));
    }
  };
  // As a completion writing into jobs_done holds it.
  const completing = 'LOCK TABLE ONLY jobs_done IN ROW EXCLUSIVE MODE';
  // Held through every try: busy, the slice attached and nothing noted to drop.
  await whileHeld(s.pool, completing, async () => {
    assert.equal(await jobSliceDropDue(s.pool, fence, slice, T, 7 * 86_400, 20), 'busy');
  });
  assert.ok((await s.slices()).includes(slice.name));
  assert.equal(await count(s.pool, 'SELECT count(*) FROM partitions_detached'), 0);
  // Let go after the first try gave up: a later try takes it.
  let drop: Promise<string> = Promise.resolve('');
  await whileHeld(s.pool, completing, async () => {
    drop = jobSliceDropDue(s.pool, fence, slice, T, 7 * 86_400, 200);
    await until((n) => n > 0, 'the first try never waited');
    await until((n) => n === 0, 'the first try never gave up');
  });
  assert.equal(await drop, 'dropped');
  assert.ok(!(await s.slices()).includes(slice.name));
});

test('a stale fence deletes no child and drops no slice', async () => {
  const s = await setup();
  const [a] = s.at as [number];
  const ids = await s.jobsAt(a + 1, old(3));
  await s.pool.query(`SELECT setval('jobs_id_seq', $1)`, [a + 3 * SIZE]);
  const slice = (await jobSliceList(s.pool)).find((x): x is BoundedSlice => x.from === a);
  assert.ok(slice !== undefined && slice.to !== null);
  const stale = { lease: 'maintenance', holder: 'nobody', epoch: 99 };
  const children = await jobSliceChildrenPrune(s.pool, stale, slice, 0, 100);
  assert.deepEqual([children.fenced, children.jobs, children.attempts], [false, 0, 0]);
  assert.equal(await jobSliceDropDue(s.pool, stale, slice, T, 7 * 86_400), 'fenced');
  assert.ok((await s.slices()).includes(slice.name));
  assert.equal(await count(s.pool, 'SELECT count(*) FROM job_attempts WHERE job_id = ANY ($1)', [ids]), 3);
});

test("a batch of a slice's children reads the jobs' ids from its primary key alone and their keys by job id", async () => {
  const s = await setup();
  const [a] = s.at as [number];
  const ids = await s.jobsAt(a + 1, old(50));
  await keyed(s.pool, ids.slice(0, 20));
  await s.pool.query(`SELECT setval('jobs_id_seq', $1)`, [a + 3 * SIZE]);
  const slice = (await jobSliceList(s.pool)).find((x): x is BoundedSlice => x.from === a);
  assert.ok(slice !== undefined);
  // All visible, as a slice retention has come to is: its primary key then answers without its rows.
  await s.pool.query(`VACUUM (ANALYZE) "${slice.name}", job_keys`);
  const fence = { lease: 'slice-children', holder: 'h', epoch: 1 };
  await s.pool.query(
    `INSERT INTO leases (name, holder, epoch, expires_at) VALUES ($1, $2, $3, now() + interval '1 minute')`,
    [fence.lease, fence.holder, fence.epoch],
  );
  const tx = await s.pool.connect();
  try {
    await tx.query('BEGIN');
    // Planned as over a slice of millions of rows, where no plan reads a table whole.
    await tx.query('SET LOCAL enable_seqscan = off');
    // Counted as a difference: a backend's counters may still hold its earlier transactions' scans.
    const counters = async (): Promise<number[][]> => {
      const { rows } = await tx.query<{ seq: number; fetched: number }>(
        `SELECT seq_scan::int AS seq, idx_tup_fetch::int AS fetched FROM pg_stat_xact_user_tables
          WHERE relname IN ($1, 'job_keys') ORDER BY relname = 'job_keys'`,
        [slice.name],
      );
      return rows.map((r) => [r.seq, r.fetched]);
    };
    const before = await counters();
    const done = await jobSliceChildrenPrune(tx, fence, slice, 0, 1000);
    const read = (await counters()).map((r, i) => r.map((n, j) => n - (before[i]?.[j] ?? 0)));
    await tx.query('COMMIT');
    assert.deepEqual([done.jobs, done.attempts, done.effects], [50, 50, 50]);
    assert.deepEqual(
      read,
      [
        [0, 0],
        [0, 20],
      ],
      "scans and rows fetched of the slice and of job_keys: the slice's rows are not read; the keys are found by job id",
    );
  } finally {
    tx.release();
  }
  assert.equal(await count(s.pool, 'SELECT count(*) FROM job_keys WHERE job_id = ANY ($1)', [ids]), 0);
});

test("whether a slice is due is read from its finished_at index, not from the slice's rows", async () => {
  const s = await setup();
  const [a] = s.at as [number];
  await s.jobsAt(a + 1, old(50));
  await s.pool.query(`SELECT setval('jobs_id_seq', $1)`, [a + 3 * SIZE]);
  const slice = (await jobSliceList(s.pool)).find((x): x is BoundedSlice => x.from === a);
  assert.ok(slice !== undefined);
  await s.pool.query(`VACUUM (ANALYZE) "${slice.name}"`);
  const tx = await s.pool.connect();
  try {
    await tx.query('BEGIN');
    // Planned as over a slice of millions of rows, where no plan reads a table whole.
    await tx.query('SET LOCAL enable_seqscan = off');
    const seqScans = async (): Promise<number> => {
      const { rows } = await tx.query<{ seq: number }>(
        `SELECT seq_scan::int AS seq FROM pg_stat_xact_user_tables WHERE relname = $1`,
        [slice.name],
      );
      return rows[0]?.seq ?? 0;
    };
    const before = await seqScans();
    const due = await jobSliceDue(tx, slice, T, 7 * 86_400);
    const read = (await seqScans()) - before;
    await tx.query('COMMIT');
    assert.equal(due.closed, true);
    assert.ok(Math.abs(due.dueInS - -86_400) < 1, `due a day ago, got ${due.dueInS} s`);
    assert.equal(read, 0, 'the slice was read whole');
  } finally {
    tx.release();
  }
});
