/**
 * The hot paths with a realistic history in place, against the same paths on a database without it,
 * and against the same history while the maintenance role prunes it.
 *
 * The history is BENCH_HISTORY_JOBS finished jobs (default 10,000,000) with their attempts and
 * occurrences, written by generate_series in the database, not through the API, spread evenly over
 * BENCH_HISTORY_DAYS days up to now (default 8). The source document's 500 jobs a second would make
 * 43 million a day, more than this machine has disk for in a week, so the week is scaled down in
 * rate, not in time: ten million over eight days is 14.5 jobs a second, and default retention
 * (succeeded 7 days) finds the oldest day's successes due, as a live system finds one day's worth
 * each day. The succeeded jobs lie in slices of the ids the history draws in 5.6 hours, as a live
 * system's do at 500 jobs a second (SLICE_IDS), ~35 over the 8 days. Three databases' worth of
 * columns:
 *
 * - base: the newest BASE_JOBS of the same history and nothing older, so every list returns the
 *   same full page (an empty database returns no rows at all, and that measures nothing);
 * - history: the whole history, retention off;
 * - week: the same database while the maintenance role prunes it as in a week at the source's
 *   rate: its clock for retention (WeekClock) starts where the oldest slice of succeeded jobs comes
 *   due whole and runs 35 times as fast as real time while the role runs, so rows come due at 500
 *   jobs a second, with their occurrences (kept 7 days here, not 30, since the history holds 8) and
 *   attempts. The role drops that slice, its attempts first, and sums and drops the ledger's days
 *   as they come due, all at the duty cycle (the cap, where a live role spreads them: its pace is
 *   planned in real time, which this clock outruns); the next slice of jobs is 5.6 hours of that
 *   clock on, past the measurements' hour, so the later measurements meet only the rows due one
 *   by one, as a live role's between slices;
 * - pruning: the same database while the role catches up a backlog at its default retention and
 *   pacing, occurrences kept 7 days as in the week (the oldest day: ~4 slices of jobs and one of the
 *   ledger dropped whole, then a pass whenever one is due), as after downtime or a retention
 *   change. It deletes the rows the week's clock would reach later, so its trials run after all the
 *   others.
 *
 * Measured alternately trial by trial, the order rotating: drain 50,000 no-op jobs with one worker
 * (concurrency 2,000), ROUNDS times a trial on each database and on the twin below in its turn (the
 * catch-up's column once a trial); enqueue → handler start latency, 5,000 jobs at 200/s, p50 and
 * p99 over every trial's jobs pooled, each column alone and base and history again in one run (a
 * worker on each, their jobs sent in turn), then base and a twin loaded alike the same way, which
 * shows how far that ratio moves by noise alone, and base and the week (the history with the week's
 * role pruning it): the targets read from the runs shared, not from columns seconds apart; a
 * 5,000-occurrence burst (fire time → all written, one leader), in turns as the drain; 15,000 jobs
 * at 200/s on the history with the week's pruning (from when its oldest slice comes due), and in
 * the catch-up's trials with the catch-up's, switched on and off every 2 s (paired), comparing the
 * jobs sent in each kind of window: the same run with and without pruning, as the week's target
 * reads. The statements behind the API's list endpoints and the dashboard's overview and history
 * (its last three hours rolled up per minute, as a running maintenance role leaves them) run first,
 * before any measurement adds jobs to the newest slices, on base and history alternately, run by
 * run (median of QUERY_RUNS each), and each reports the pages it touched, which the machine's load
 * does not change. Then the maintenance role runs until a pass deletes less than a batch, and the
 * bench reports the disk use left; then again with a day more due (retention 6 days), and reports
 * the rate it sustained alone. Last, enqueue → start in runs of 15,000 jobs while the oldest day's
 * slice of the occurrence ledger is summed into the rollups in steps switched on and off every
 * second, then dropped: the jobs sent with the steps on against those sent with them off; after
 * each such run, a control run in the same windows with nothing switched.
 *
 * BENCH_HISTORY_TRIALS sets the trials (default 3), BENCH_HISTORY_ONLY the measurements (default
 * `drain,latency,burst,queries,pruning,paired,ledger`; without `pruning` neither the two pruning
 * columns nor the steady state run; without `drain`, `latency` and `burst` no twin).
 * BENCH_HISTORY_KEEP=1 (with DATABASE_URL) keeps the databases (base, its twin, history), named by
 * BENCH_DB_PREFIX and the job count, and uses them again on the next run instead of loading:
 * pruning and the ledger row delete from the kept history, so a run that measures them wants a
 * fresh one, and the per-minute history rows' last hour moves on past the loaded jobs, which leaves
 * base less and less to read.
 */
import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { pino } from 'pino';
import type { Clock } from '../src/clock.ts';
import { createLogger } from '../src/log.ts';
import { MAINTENANCE_DEFAULTS, Maintenance } from '../src/maintenance/maintenance.ts';
import { SLICE_PACE_BUDGET_SHARE, sliceCatchUpShare, slicePaceDuty } from '../src/maintenance/slice-pace.ts';
import { RETENTION_DEFAULTS, type RetentionConfig } from '../src/maintenance/retention-config.ts';
import { Scheduler } from '../src/scheduler/scheduler.ts';
import {
  historyBacklogPerMinute,
  historyLagPerMinute,
  historyThroughputPerMinute,
} from '../src/store/history.ts';
import { jobCountByState } from '../src/store/job-counts.ts';
import { jobSliceDue } from '../src/store/job-slice-drop.ts';
import {
  JOB_SLICE_IDS,
  jobSliceAttach,
  jobSliceList,
  jobSlicesPastMark,
  type BoundedSlice,
} from '../src/store/job-slices.ts';
import { jobSearch } from '../src/store/job-search.ts';
import { leaseAcquire, leaseRelease } from '../src/store/leases.ts';
import {
  occurrenceSliceAttach,
  occurrenceSliceDropDue,
  occurrenceSliceSumStep,
  occurrenceSliceList,
  OCCURRENCE_SUM_STEP_ROWS,
  OCCURRENCE_SUM_STEP_ROWS_SPARED,
} from '../src/store/occurrence-slices.ts';
import { occurrenceLatenessBySchedule, occurrenceLatenessPerMinute } from '../src/store/occurrence-rollup.ts';
import { occurrenceListBySchedule } from '../src/store/occurrences.ts';
import { historyOldestRows, jobCountOpenByQueueState, scheduleLagSeconds } from '../src/store/stats.ts';
import { withTransaction, type Queryable } from '../src/store/pool.ts';
import { workflowSearch } from '../src/store/workflow-search.ts';
import { JobClient } from '../src/worker/job-client.ts';
import { Worker } from '../src/worker/worker.ts';
import { benchDatabase, type BenchDatabase } from './db.ts';
import {
  LATENCY_RATE,
  latencyInterleaved,
  latencySamples,
  type Around,
  type LatencySample,
} from './latency.ts';
import { median, percentile, type Bench, type BenchRow } from './table.ts';

const N = Number(process.env.BENCH_HISTORY_JOBS ?? 10_000_000);
const DAYS = Number(process.env.BENCH_HISTORY_DAYS ?? 8);
const TRIALS = Number(process.env.BENCH_HISTORY_TRIALS ?? 3);
const KEEP = process.env.BENCH_HISTORY_KEEP === '1';
/** Which measurements to run (comma-separated: drain, latency, burst, queries, pruning, paired, ledger); default all. */
const ONLY = new Set(
  (process.env.BENCH_HISTORY_ONLY ?? 'drain,latency,burst,queries,pruning,paired,ledger').split(','),
);
/**
 * The base database's jobs, the newest of the history: enough for full pages everywhere (200 dead
 * jobs at 0.5 % dead, 100 occurrences of each of the SCHEDULES schedules).
 */
const BASE_JOBS = 100_000;
const DRAIN = 50_000;
const BURST = 5_000;
/**
 * Drains and bursts of each column a trial, the columns (and the twin) in turn: a drain lasts about a
 * second, and over 3 of them base read 33,686-58,499 jobs/s in one run. 4: with base, history, the
 * week and the twin, one round per row of a balanced order (balancedOrder), each trial a whole one.
 */
const ROUNDS = 4;

/**
 * The order of `n` turns in round `k`, balanced for what a turn leaves the one after it (the dead
 * rows the week's role leaves autovacuum, a checkpoint): over n rounds (2n when n is odd) each turn
 * comes right after each other turn equally often (a Williams design). A rotation always puts the
 * same turn after another: there the twin, a copy of base, always came right after the week, and its
 * bursts read 1.48× base's.
 */
function balancedOrder(n: number, k: number): number[] {
  // 0, 1, n-1, 2, n-2, …: its differences take every value mod n once.
  const first = Array.from({ length: n }, (_, i) => (i === 0 ? 0 : i % 2 === 1 ? (i + 1) / 2 : n - i / 2));
  const row = first.map((x) => (x + k) % n);
  return n % 2 === 1 && k % (2 * n) >= n ? row.reverse() : row;
}
/**
 * Runs of each statement on each database per trial (QUERY_BUDGET_MS allowing): at 60, a statement
 * of one page on each read 0.13 against 0.19 ms, a round trip's jitter.
 */
const QUERY_RUNS = 400;
const QUERY_BUDGET_MS = 5_000;
/** Rows per loading statement: each is one transaction, and progress is printed after each. */
const LOAD_CHUNK = 500_000;
const SCHEDULES = 1_000;
const DAY_MS = 86_400_000;
/**
 * Ids per slice of succeeded jobs in the loaded history and for every maintenance role here: as many
 * as the history draws in the time a production slice fills at the source's 500 jobs a second
 * (JOB_SLICE_IDS / 500 s, 5.6 h), so the history spans as many slices as a live system's, ~35 over
 * 8 days.
 */
const SLICE_IDS = Math.max(2, Math.round((JOB_SLICE_IDS / 500) * (N / (DAYS * 86_400))));

const log = pino({ level: process.env.TIDEMARK_LOG_LEVEL ?? 'warn' }, pino.destination(2));
const say = (text: string): void => void process.stderr.write(`bench history: ${text}\n`);

/**
 * Jobs as the scheduler makes them, spread evenly over `spanMs` up to `newest`: 99 % succeeded (a
 * tenth of them after one failed attempt, a job_attempts row), 0.5 % dead after four attempts, 0.5 %
 * cancelled; one occurrence each, across SCHEDULES every-minute schedules.
 */
export async function loadHistory(
  db: BenchDatabase,
  n: number,
  spanMs: number,
  newest: Date,
): Promise<{ seconds: number; bytes: number; split: string }> {
  const t0 = performance.now();
  const stepMs = spanMs / n;
  for (let from = 1; from <= n; from += LOAD_CHUNK) {
    const to = Math.min(n, from + LOAD_CHUNK - 1);
    await db.pool.query(
      `WITH s AS (SELECT array_agg(id ORDER BY id) AS ids FROM schedules WHERE name LIKE 'history-%'),
       j AS (
         INSERT INTO jobs (queue, kind, tenant_id, payload, state, run_at, attempt, max_attempts, idempotency_key,
                           key_generated, lease_owner, schedule_id, created_at, started_at, finished_at, last_error)
         SELECT 'hist-' || (g % 20), 'report', CASE WHEN g % 10 = 0 THEN 'acme' ELSE 'default' END,
                '{"report": "daily", "format": "pdf"}',
                CASE WHEN g % 200 = 0 THEN 'dead' WHEN g % 200 = 1 THEN 'cancelled' ELSE 'succeeded' END,
                x.t, CASE WHEN g % 200 = 0 THEN 4 WHEN g % 10 = 2 THEN 2 ELSE 1 END, 4,
                'occurrence:' || (s.ids)[1 + g % ${SCHEDULES}] || ':' || to_char(x.t, 'YYYY-MM-DD"T"HH24:MI:SS.US'),
                true, 'host-1:1234:abcd', (s.ids)[1 + g % ${SCHEDULES}], x.t, x.t + interval '5 ms',
                x.t + interval '2 s', CASE WHEN g % 200 = 0 THEN 'Error: upstream returned 503' END
           FROM generate_series($1::int, $2::int) g CROSS JOIN s
           CROSS JOIN LATERAL (SELECT $3::timestamptz - (${n} - g) * $4::float8 * interval '1 ms' AS t) x
         RETURNING id, schedule_id, created_at, attempt, state
       ), o AS (
         INSERT INTO occurrences (schedule_id, fire_at, state, materialised_at, epoch, job_id, source, schedule_version)
         SELECT schedule_id, created_at, 'enqueued', created_at + interval '40 ms', 1, id, 'schedule', 1 FROM j
       )
       INSERT INTO job_attempts (job_id, attempt, worker, started_at, finished_at, outcome, error)
       SELECT j.id, a, 'host-1:1234:abcd', j.created_at, j.created_at + interval '1 s', 'failed', 'Error: timeout'
         FROM j CROSS JOIN LATERAL generate_series(1, j.attempt - CASE WHEN j.state = 'dead' THEN 0 ELSE 1 END) a`,
      [from, to, newest, stepMs],
    );
    if (n > LOAD_CHUNK) say(`loaded ${to.toLocaleString('en')} of ${n.toLocaleString('en')} jobs`);
  }
  await db.pool.query('VACUUM ANALYZE jobs, job_attempts, occurrences');
  const seconds = (performance.now() - t0) / 1000;
  const { rows } = await db.pool.query<{ name: string; bytes: number }>(
    `SELECT c::text AS name, sum(pg_total_relation_size(l.relid))::float8 AS bytes
       FROM unnest(ARRAY['jobs', 'job_attempts', 'occurrences']::regclass[]) c
       CROSS JOIN LATERAL (SELECT relid FROM pg_partition_tree(c) WHERE isleaf
                           UNION ALL SELECT c WHERE NOT EXISTS (SELECT FROM pg_partition_tree(c))) l
      GROUP BY c`,
  );
  const bytes = rows.reduce((sum, r) => sum + r.bytes, 0);
  const split = rows.map((r) => `${r.name} ${Math.round(r.bytes / n)}`).join(', ');
  return { seconds, bytes, split };
}

/**
 * Replaces the occurrence ledger's slices of a new database with one per UTC day from the day of
 * `from` to two days after `to`, as a role running through the history would have attached them.
 */
export async function sliceLedger(db: BenchDatabase, from: Date, to: Date): Promise<void> {
  await withTransaction(db.pool, async (tx) => {
    for (const s of await occurrenceSliceList(tx)) {
      await tx.query(`ALTER TABLE occurrences DETACH PARTITION "${s.name}"`);
      await tx.query(`DROP TABLE "${s.name}"`);
    }
    const first = Math.floor(from.getTime() / DAY_MS);
    for (let d = first; d <= Math.floor(to.getTime() / DAY_MS) + 2; d++) {
      const start = new Date(d * DAY_MS);
      await occurrenceSliceAttach(tx, {
        name: `occurrences_${start.toISOString().slice(0, 10).replace(/-/g, '')}t000000`,
        from: d === first ? null : start,
        to: new Date((d + 1) * DAY_MS),
      });
    }
  });
}

/** Replaces the empty first slice of a new database with slices of SLICE_IDS ids past `n`. */
async function sliceHistory(db: BenchDatabase, n: number): Promise<void> {
  await withTransaction(db.pool, async (tx) => {
    await tx.query('ALTER TABLE jobs_done DETACH PARTITION jobs_done_0');
    await tx.query('DROP TABLE jobs_done_0');
    for (let from = 0; from <= n; from += SLICE_IDS) {
      await jobSliceAttach(tx, {
        name: `jobs_done_${from}`,
        from: from === 0 ? null : from,
        to: from + SLICE_IDS,
      });
    }
  });
}

/**
 * The slices behind the newest two note finishes into them (store/job-slices.ts), each since a
 * role running through the history would have started it: when the ids drawn reached the middle of
 * the slice after it, which attached the next. Loaded after the jobs, whose rows would otherwise
 * each fire the trigger.
 */
async function slicesPastNoted(db: BenchDatabase): Promise<void> {
  const bounded = (await jobSliceList(db.pool)).filter((s): s is BoundedSlice => s.to !== null);
  const past = bounded.slice(0, -2);
  await withTransaction(db.pool, (tx) => jobSlicesPastMark(tx, past));
  for (const s of past) {
    await db.pool.query(
      `UPDATE job_slices_past SET finished_at = coalesce(
         (SELECT max(finished_at) FROM jobs WHERE state = 'succeeded' AND id >= $2 AND id < $3), finished_at)
       WHERE name = $1`,
      [s.name, s.to, s.to + Math.floor(SLICE_IDS / 2)],
    );
  }
}

type Column = 'base' | 'history' | 'week' | 'pruning';
const COLUMNS: readonly Column[] = ['base', 'history', 'week', 'pruning'];

/** The source document's rate: jobs (and occurrences) a second. */
const SOURCE_JOBS_S = 500;
/**
 * Jobs a latency trial sends to each database. A p99 of 1,000 is their 10th slowest: base against
 * its twin, two databases loaded alike, read 1.30x and 1.44x p99 over runs of 3,000 jobs each.
 */
const LATENCY_N = 5_000;
/**
 * The ledger rows' windows, steps on for one, off for the next (and their control's). Short, so
 * that a slow spell of the machine's own (a checkpoint, autovacuum) lasting a few seconds falls in
 * both kinds of window rather than in one: with 2 s windows the control read 0.85-1.23 by run,
 * wider than the 10 % the on/off targets allow. The steps' rests go on across on windows.
 */
const PAIR_WINDOW_MS = 1_000;
/**
 * The windows of a role switched on and off (paired): a role is started for each on window, and
 * pruning at its cap a 40 ms statement rests 1.3 s, so a window of 1 s held the role's first
 * statement and little of its pace.
 */
const ROLE_WINDOW_MS = 2_000;
/**
 * Jobs a trial of the on/off measurements sends: 75 s at LATENCY_RATE, ~37 windows of each kind at
 * 1 s. At 4,000 a trial, a side's p99 was its 20th slowest job, and the control read 0.55-1.82 by
 * run.
 */
const PAIR_JOBS = 15_000;

interface Loaded {
  seconds: number;
  bytes: number;
  split: string;
}

interface Db {
  db: BenchDatabase;
  jobs: JobClient;
  scheduleId: string;
  /** The newest loaded job: every job a measurement adds has a larger id. */
  maxId: number;
  loaded: Loaded | null;
}

/**
 * The charts' rollups a maintenance role running through the loaded history holds
 * (store/history-rollup.ts): the minutes of the last two days (what maintenance.ts keeps) up to three
 * hours ago, from where the role's first pass below rolls on. Summed here from the loaded rows in
 * one statement each, as the rolls would have; the backlog at each minute's end is left 0, as the
 * loaded jobs start when they come due.
 */
async function rollupsKept(db: BenchDatabase): Promise<void> {
  const { rows } = await db.pool.query<{ from: Date; to: Date }>(
    `SELECT date_trunc('minute', now() - interval '2 days') AS from, date_trunc('minute', now() - interval '3 hours') AS to`,
  );
  const { from, to } = rows[0] ?? { from: new Date(), to: new Date() };
  await db.pool.query(
    `INSERT INTO history_minutes (minute, queue, tenant_id, succeeded, failed, waiting)
     SELECT minute, queue, tenant_id, sum(succeeded), sum(failed), 0 FROM (
       SELECT date_trunc('minute', finished_at) AS minute, queue, tenant_id, count(*) AS succeeded, 0 AS failed
         FROM jobs WHERE state = 'succeeded' AND finished_at >= $1 AND finished_at < $2 GROUP BY 1, 2, 3
       UNION ALL
       SELECT date_trunc('minute', a.finished_at), j.queue, j.tenant_id, 0, count(*)
         FROM job_attempts a JOIN jobs j ON j.id = a.job_id
        WHERE a.finished_at >= $1 AND a.finished_at < $2 AND a.outcome = 'failed' GROUP BY 1, 2, 3
     ) m GROUP BY 1, 2, 3`,
    [from, to],
  );
  await db.pool.query(
    `INSERT INTO lag_minutes (minute, tenant_id, scheduled, p50_s, p99_s, triggered, skipped, missed, late,
                             lag_sum_s, lag_max_s)
     SELECT date_trunc('minute', o.fire_at), CASE WHEN grouping(s.tenant_id) = 1 THEN '' ELSE s.tenant_id END,
            count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY l.s), percentile_cont(0.99) WITHIN GROUP (ORDER BY l.s),
            0, 0, 0, count(*) FILTER (WHERE l.s > 2), sum(l.s), max(l.s)
       FROM occurrences o JOIN schedules s ON s.id = o.schedule_id
      CROSS JOIN LATERAL (SELECT greatest(0, extract(epoch FROM o.materialised_at - o.fire_at))::float8 AS s) l
      WHERE o.fire_at >= $1 AND o.fire_at < $2
      GROUP BY GROUPING SETS ((date_trunc('minute', o.fire_at), s.tenant_id), (date_trunc('minute', o.fire_at)))`,
    [from, to],
  );
  await db.pool.query(
    `UPDATE history_rolled SET jobs_since = $1, jobs_upto = $2, lag_since = $1, lag_upto = $2, back_to = $1`,
    [from, to],
  );
  await db.pool.query('ANALYZE history_minutes, lag_minutes');
  const { rows: kept } = await db.pool.query<{ h: number; l: number }>(
    `SELECT (SELECT count(*) FROM history_minutes)::int AS h, (SELECT count(*) FROM lag_minutes)::int AS l`,
  );
  say(`rollups kept: ${kept[0]?.h ?? 0} rows of history_minutes, ${kept[0]?.l ?? 0} of lag_minutes`);
}

/**
 * `twin`: a second base, loaded the same way, for the drain, latency and burst rows' controls
 * (A/A).
 */
async function prepare(kind: 'base' | 'twin' | 'history'): Promise<Db> {
  const n = kind === 'history' ? N : Math.min(BASE_JOBS, N);
  const db = await benchDatabase(KEEP ? { keep: `hist_${N}_${DAYS}d_${kind}` } : {});
  let loaded: Loaded | null = null;
  if (db.created) {
    await db.pool.query(
      `INSERT INTO schedules (tenant_id, name, spec, queue, kind, next_fire_at)
       SELECT 'default', 'history-' || g, '* * * * *', 'hist-' || (g % 20), 'report', NULL FROM generate_series(1, $1) g`,
      [SCHEDULES],
    );
    await sliceHistory(db, n);
    const newest = new Date();
    const spanMs = (DAYS * DAY_MS * n) / N;
    await sliceLedger(db, new Date(newest.getTime() - spanMs), newest);
    loaded = await loadHistory(db, n, spanMs, newest);
    await slicesPastNoted(db);
    await rollupsKept(db);
    await db.pool.query(`COMMENT ON DATABASE ${db.name} IS 'tidemark bench history: loaded'`);
  } else {
    const { rows } = await db.pool.query<{ c: string | null }>(
      `SELECT shobj_description(oid, 'pg_database') AS c FROM pg_database WHERE datname = current_database()`,
    );
    if (rows[0]?.c !== 'tidemark bench history: loaded') {
      throw new Error(`${db.name} exists but its load did not finish: drop it and run again`);
    }
    say(`${db.name}: kept from an earlier run`);
  }
  // The pass a running maintenance role makes: it attaches the slice that jobs finishing from now
  // on move into once the ids drawn near the last slice's end (store/job-slices.ts).
  const slicer = new Maintenance({ pool: db.pool, log, sliceIds: SLICE_IDS, retention: { enabled: false } });
  await slicer.runPass();
  await slicer.stop();
  const { rows } = await db.pool.query<{ id: string; max: number }>(
    `SELECT (SELECT id FROM schedules WHERE name = 'history-1') AS id,
            (SELECT max(id) FROM jobs WHERE queue LIKE 'hist-%') AS max`,
  );
  return {
    db,
    jobs: new JobClient(db.pool),
    scheduleId: rows[0]?.id ?? '',
    maxId: rows[0]?.max ?? 0,
    loaded,
  };
}

/** Empties a measurement's queue (its jobs are all newer than the history) and vacuums, so no autovacuum runs inside the next measurement. */
async function fresh(d: Db, queue: string): Promise<void> {
  await d.db.pool.query('DELETE FROM jobs WHERE id > $1 AND queue = $2', [d.maxId, queue]);
  await d.db.pool.query('VACUUM ANALYZE jobs');
}

interface Pruned {
  rows: number;
  seconds: number;
  /** Duration of each jobs batch statement (1,000 jobs read, their attempts deleted with them). */
  batchMs: number[];
  /** When each statement of every table ran (performance.now()), and what it deleted. */
  spans: { from: number; to: number; kind: string }[];
  /** Measurements during which pruning found nothing to delete. */
  idle: number;
}

/** How a measurement's maintenance role prunes: default retention and pacing unless given. */
interface Role {
  retention?: RetentionConfig;
  clock?: WeekClock;
}

/** How long withPruning waits for a role's first batch before it counts the role as idle. */
const FIRST_BATCH_WAIT_MS = 5_000;

/**
 * Runs `during` with the maintenance role pruning beside it. `during` starts once the first batch
 * has ended (at most FIRST_BATCH_WAIT_MS after the role's start) and is given the time that batch
 * started.
 */
async function withPruning<T>(
  d: Db,
  pruned: Pruned,
  during: (firstBatchMs: number) => Promise<T>,
  role: Role = {},
): Promise<T> {
  let firstBatchMs: number | null = null;
  let first: () => void = () => undefined;
  const started = new Promise<boolean>((r) => (first = () => r(true)));
  let rows = 0;
  const m = new Maintenance({
    pool: d.db.pool,
    log,
    sliceIds: SLICE_IDS,
    // Due slices at the duty cycle, as when behind: these rows measure pruning at its cap (and the
    // week's clock runs faster than the real time a spread is planned in).
    spreadSlices: false,
    ...(role.retention === undefined ? {} : { retention: role.retention }),
    ...(role.clock === undefined ? {} : { clock: role.clock }),
    onBatch: (b) => {
      // A slice of jobs dropped whole counts its jobs as its children's statements delete theirs.
      if (b.wholeSlice !== true || b.table !== 'jobs') rows += b.deleted + (b.sliceJobs ?? 0);
      if (b.table === 'jobs' && b.wholeSlice !== true) pruned.batchMs.push(b.endedMs - b.startedMs);
      const kind =
        b.wholeSlice === true
          ? `${b.table} slice`
          : b.sliceJobs !== undefined
            ? `${b.table} of a slice`
            : b.table;
      pruned.spans.push({ from: b.startedMs, to: b.endedMs, kind });
      firstBatchMs ??= b.startedMs;
      first();
    },
  });
  role.clock?.run(true);
  m.start();
  const working = await Promise.race([started, sleep(FIRST_BATCH_WAIT_MS).then(() => false)]);
  if (!working) pruned.idle++;
  const t0 = performance.now();
  try {
    return await during(firstBatchMs ?? t0);
  } finally {
    const seconds = (performance.now() - t0) / 1000;
    await m.stop();
    role.clock?.run(false);
    pruned.rows += rows;
    pruned.seconds += seconds;
  }
}

async function drain(d: Db): Promise<number> {
  await fresh(d, 'drain');
  for (let i = 0; i < DRAIN; i += 10_000) {
    await d.jobs.enqueueMany(Array.from({ length: 10_000 }, () => ({ queue: 'drain', kind: 'noop' })));
  }
  await d.db.pool.query('VACUUM ANALYZE jobs');
  let done = 0;
  let finish: () => void = () => undefined;
  const finished = new Promise<void>((resolve) => (finish = resolve));
  const worker = new Worker({
    pool: d.db.pool,
    connectionString: d.db.url,
    handlers: {
      noop: () => {
        if (++done === DRAIN) finish();
        return Promise.resolve();
      },
    },
    queues: [{ name: 'drain', concurrency: 2000 }],
    log: createLogger('bench-worker'),
  });
  const t0 = performance.now();
  await worker.start();
  await finished;
  await worker.stop();
  return DRAIN / ((performance.now() - t0) / 1000);
}

interface Percentiles {
  p50: number;
  p99: number;
}

const percentiles = (samples: LatencySample[]): Percentiles => {
  const ms = samples.map((x) => x.ms);
  return { p50: median(ms), p99: percentile(ms, 99) };
};

/** Enqueue → start of each job, in ms; each job's sample is added to `kept` when given. */
async function latency(d: Db, around: Around, kept?: LatencySample[]): Promise<number[]> {
  await fresh(d, 'latency');
  const samples = await latencySamples(d.db, d.jobs, LATENCY_N, around);
  kept?.push(...samples);
  return samples.map((x) => x.ms);
}

/** Enqueue → start on each of `ds` in one run, job by job in turn (latencyInterleaved). */
async function latencyTogether(
  ds: Db[],
  around: Around = (measure) => measure(),
): Promise<LatencySample[][]> {
  for (const d of ds) await fresh(d, 'latency');
  return latencyInterleaved(
    ds.map((d) => ({ db: d.db, jobs: d.jobs })),
    LATENCY_N,
    around,
  );
}

/**
 * Enqueue → start in one run with a role's pruning switched on and off in alternating windows,
 * starting with pruning on when `onFirst`: a job counts as beside pruning when its enqueue began in
 * a window the role pruned in (from its first batch until its stop returned); those sent while the
 * role took its lease count as neither. Both halves meet the machine's load as it comes, where the
 * columns are measured seconds apart: their p99 moved ±40 % between runs of the same code, more
 * than the 10 % the week's target allows.
 */
async function latencyPaired(
  d: Db,
  role: Role,
  pruned: Pruned,
  onFirst: boolean,
): Promise<{ on: LatencySample[]; off: number[] }> {
  await fresh(d, 'latency');
  return latencyInWindows(d, onFirst, async (on) => {
    if (!on) {
      await sleep(ROLE_WINDOW_MS);
      return null;
    }
    let from: number | null = null;
    await withPruning(
      d,
      pruned,
      async (firstBatchMs) => {
        from = firstBatchMs;
        await sleep(Math.max(0, ROLE_WINDOW_MS - (performance.now() - firstBatchMs)));
      },
      role,
    );
    return from;
  });
}

/**
 * PAIR_JOBS jobs' enqueue → start while `window` runs windows alternately on and off (on first when
 * `onFirst`) until they are all sent; a window returns when it began to count (null: when it was
 * called). Returns the jobs sent in each kind of window; none sent between windows.
 */
async function latencyInWindows(
  d: Db,
  onFirst: boolean,
  window: (on: boolean) => Promise<number | null>,
): Promise<{ on: LatencySample[]; off: number[] }> {
  const windows: { from: number; to: number; on: boolean }[] = [];
  let measuring = true;
  const alternate = async (): Promise<void> => {
    for (let on = onFirst; measuring; on = !on) {
      const called = performance.now();
      const from = (await window(on)) ?? called;
      windows.push({ from, to: performance.now(), on });
    }
  };
  const samples = await latencySamples(d.db, d.jobs, PAIR_JOBS, async (measure) => {
    const switching = alternate();
    try {
      return await measure();
    } finally {
      measuring = false;
      await switching;
    }
  });
  const on: LatencySample[] = [];
  const off: number[] = [];
  for (const s of samples) {
    const w = windows.find((w) => s.sentMs >= w.from && s.sentMs < w.to);
    if (w?.on === true) on.push(s);
    else if (w !== undefined) off.push(s.ms);
  }
  return { on, off };
}

/**
 * The share of `samples` whose time from enqueue to start overlapped a pruning statement: of the
 * slowest 1 % against all, to tell whether the statements themselves make the tail.
 */
function overlapShares(samples: LatencySample[], spans: Pruned['spans']): { tail: number; all: number } {
  const overlaps = (s: LatencySample): boolean =>
    spans.some((p) => p.from < s.sentMs + s.ms && p.to > s.sentMs);
  const share = (xs: LatencySample[]): number => xs.filter(overlaps).length / Math.max(xs.length, 1);
  const sorted = [...samples].sort((a, b) => b.ms - a.ms);
  return { tail: share(sorted.slice(0, Math.ceil(sorted.length / 100))), all: share(samples) };
}

/**
 * How the ledger row paces the steps while on, as the role paces a day's slice (maintenance/
 * slice-pace.ts), each step's rows read as fire time at the source document's rate: `day` with a day
 * until the next is due, what a live system that keeps up meets every day; `behind` with the next
 * due already (BEHIND_DUE), as after a day's downtime.
 */
type LedgerPace = 'behind' | 'day';

/** Slices of the ledger due in the `behind` pace: the oldest and the next, as after a day's downtime. */
const BEHIND_DUE = 2;

/**
 * Enqueue → start in one run of PAIR_JOBS jobs while the oldest slice of the ledger is summed into
 * the rollups step by step (store/occurrence-slices.ts), the steps switched on and off in
 * alternating windows of PAIR_WINDOW_MS, paced by `pace` while on (a rest that outlasts an on
 * window goes on in the next), as the paired measurement does for the catch-up: jobs sent in an on
 * window against those sent in an off one. With `drop`, once the run has ended the rest of the
 * slice is summed unpaced and the slice dropped (its drop timed alone); without, the next run goes
 * on with the slice.
 */
async function latencyBesideLedgerSteps(
  d: Db,
  onFirst: boolean,
  pace: LedgerPace,
  drop: boolean,
): Promise<{
  on: number[];
  off: number[];
  rows: number;
  steps: number;
  busyMs: number;
  longestMs: number;
  /** Time in on windows, and the steps' time in them. */
  onMs: number;
  pacedMs: number;
  dropMs: number | null;
}> {
  await fresh(d, 'latency');
  const holder = `bench-${process.pid}`;
  const term = await leaseAcquire(d.db.pool, 'bench-ledger', holder, 600_000);
  if (term === null) throw new Error('bench-ledger lease is held');
  const fence = { lease: 'bench-ledger', holder, epoch: term.epoch };
  const [oldest] = await occurrenceSliceList(d.db.pool);
  if (oldest === undefined) throw new Error('the ledger has no slice');
  const sum = { rows: 0, steps: 0, busyMs: 0, longestMs: 0, onMs: 0, summed: false };
  const cap = MAINTENANCE_DEFAULTS.dutyCycle;
  // As the role: short steps while the pace is below the cap.
  let spared = true;
  // Every slice older than a day is due at a retention of one day. Returns the time the step and
  // its rest take.
  const step = async (): Promise<number> => {
    const t0 = performance.now();
    const stepRows = spared ? OCCURRENCE_SUM_STEP_ROWS_SPARED : OCCURRENCE_SUM_STEP_ROWS;
    const r = await occurrenceSliceSumStep(d.db.pool, fence, oldest, null, 86_400, stepRows);
    const ms = performance.now() - t0;
    if (r.rows === null) throw new Error(`the ledger's oldest slice was not summed: ${JSON.stringify(r)}`);
    sum.rows += r.rows;
    sum.steps++;
    sum.busyMs += ms;
    sum.longestMs = Math.max(sum.longestMs, ms);
    sum.summed = r.summed;
    // On plan, the time to the deadline is the budget share of the fire time left before the step;
    // behind, that of a catch-up.
    const done = r.rows / SOURCE_JOBS_S;
    const left = Math.max(0, 86_400 - sum.rows / SOURCE_JOBS_S);
    const share = pace === 'behind' ? sliceCatchUpShare(BEHIND_DUE) : SLICE_PACE_BUDGET_SHARE;
    const duty = slicePaceDuty({ ms, done, left }, share * (done + left), cap);
    spared = duty < cap;
    return ms / duty;
  };
  try {
    // The rest owed after the last step: it runs in on windows only, on from where the last one's
    // ended, so a cycle longer than a window spans windows as the role's spans the day.
    let restMs = 0;
    const { on, off } = await latencyInWindows(d, onFirst, async (on) => {
      const from = performance.now();
      const left = (): number => Math.max(0, PAIR_WINDOW_MS - (performance.now() - from));
      while (on && !sum.summed && left() > 0) {
        const t0 = performance.now();
        if (restMs <= 0) restMs = (await step()) - (performance.now() - t0);
        else {
          await sleep(Math.min(left(), restMs));
          restMs -= performance.now() - t0;
        }
      }
      await sleep(left());
      if (on) sum.onMs += performance.now() - from;
      return from;
    });
    const pacedMs = sum.busyMs;
    if (!drop) return { on: on.map((x) => x.ms), off, ...sum, pacedMs, dropMs: null };
    while (!sum.summed) await step();
    const t0 = performance.now();
    const r = await occurrenceSliceDropDue(d.db.pool, fence, oldest, null, 86_400);
    const dropMs = performance.now() - t0;
    if (!r.dropped) throw new Error(`the ledger's oldest slice was not dropped: ${JSON.stringify(r)}`);
    return { on: on.map((x) => x.ms), off, ...sum, pacedMs, dropMs };
  } finally {
    await leaseRelease(d.db.pool, 'bench-ledger', holder, term.epoch);
  }
}

/**
 * The control of the on/off rows: PAIR_JOBS jobs in windows alternating exactly as theirs, with
 * nothing switched on in either. What its p99 on ÷ off reads is the measurement's own spread.
 */
async function latencyInShamWindows(d: Db, onFirst: boolean): Promise<{ on: number[]; off: number[] }> {
  await fresh(d, 'latency');
  const { on, off } = await latencyInWindows(d, onFirst, async () => {
    await sleep(PAIR_WINDOW_MS);
    return null;
  });
  return { on: on.map((x) => x.ms), off };
}

/** 5,000 one-off schedules due at one instant: fire time → the last occurrence written (ms). */
async function burst(d: Db, trial: number, around: (measure: () => Promise<number>) => Promise<number>) {
  const db = d.db;
  let led: () => void = () => undefined;
  const leading = new Promise<void>((done) => (led = done));
  const scheduler = new Scheduler({ pool: db.pool, log, tickMs: 100, onLead: () => led() });
  await scheduler.start();
  await leading;
  try {
    return await around(async () => {
      const fireAt = new Date(Math.ceil((Date.now() + 3000) / 1000) * 1000);
      await db.pool.query(
        `INSERT INTO schedules (tenant_id, name, spec, queue, kind, next_fire_at)
         SELECT 'default', 'burst-' || $3 || '-' || g, 'at ' || $1, 'burst', 'k', $2 FROM generate_series(1, ${BURST}) g`,
        [fireAt.toISOString(), fireAt, trial],
      );
      const deadline = Date.now() + 60_000;
      for (;;) {
        // Each burst schedule's occurrence by its key (occurrences_scheduled_key): joined by
        // schedule alone, the poll was a parallel scan of the whole ledger every 100 ms, ten
        // million rows beside the history, on the cores the scheduler was measured on.
        const { rows } = await db.pool.query<{ n: number; ms: number | null }>(
          `SELECT count(o.at)::int AS n, (extract(epoch FROM max(o.at) - $1::timestamptz) * 1000)::float8 AS ms
             FROM schedules s
             LEFT JOIN LATERAL (SELECT materialised_at AS at FROM occurrences
                                 WHERE schedule_id = s.id AND fire_at = $1 AND source = 'schedule' LIMIT 1) o ON true
            WHERE s.name LIKE 'burst-' || $2 || '-%'`,
          [fireAt, trial],
        );
        const r = rows[0];
        if (r !== undefined && r.n === BURST) return r.ms ?? Number.NaN;
        if (Date.now() > deadline) return Number.NaN;
        await sleep(100);
      }
    });
  } finally {
    await scheduler.stop();
    await db.pool.query(`DELETE FROM schedules WHERE name LIKE 'burst-%'`);
    await db.pool.query(`DELETE FROM jobs WHERE id > $1 AND queue = 'burst'`, [d.maxId]);
    // As fresh does for jobs: without it the next burst's due scan meets every earlier burst's
    // schedules as dead entries (140,000 on a kept history, 80,000 on its base, with autovacuum off).
    await db.pool.query('VACUUM ANALYZE schedules');
  }
}

const lastHour = () => ({ from: new Date(Date.now() - 3_600_000), to: new Date() });
const lastDays = (n: number) => ({ from: new Date(Date.now() - n * 86_400_000), to: new Date() });

/**
 * The statements the API's list routes and the dashboard's overview run, and what each is for. A
 * third element false: no target, a read of more rows on the history than on base (base holds the
 * newest ~2 hours, so a read of the last hour asks both for the same rows).
 */
function queries(d: Db, q: Queryable = d.db.pool): [string, () => Promise<unknown>, boolean?][] {
  return [
    ['GET /v1/jobs (first page, newest)', () => jobSearch(q, { limit: 100 })],
    ['GET /v1/jobs?state=succeeded', () => jobSearch(q, { state: 'succeeded', limit: 100 })],
    ['GET /v1/jobs?state=running', () => jobSearch(q, { state: 'running', limit: 100 })],
    ['GET /v1/jobs?tenantId=acme', () => jobSearch(q, { tenantId: 'acme', limit: 100 })],
    ['GET /v1/dead-letter', () => jobSearch(q, { state: 'dead', limit: 200 })],
    ['GET /v1/job-counts', () => jobCountByState(q, { cap: 10_000 })],
    ['GET /v1/schedules/{id}/occurrences', () => occurrenceListBySchedule(q, d.scheduleId, null, 100)],
    ['GET /v1/workflows', () => workflowSearch(q, { limit: 50 })],
    [
      'GET /v1/schedules/{id}/lateness (per day, last hour)',
      () => occurrenceLatenessBySchedule(q, d.scheduleId, { ...lastHour(), limit: 100 }),
    ],
    [
      'the same over 30 days: every row of the schedule in the ledger (history 8 days, base ~2 hours)',
      () => occurrenceLatenessBySchedule(q, d.scheduleId, { ...lastDays(30), limit: 100 }),
      false,
    ],
    [
      'GET /v1/lateness (per minute, last hour)',
      () => occurrenceLatenessPerMinute(q, { ...lastHour(), limit: 1_440 }),
    ],
    ['GET /v1/history: lateness per minute, last hour', () => historyLagPerMinute(q, lastHour())],
    ['GET /v1/history: finished per minute, last hour', () => historyThroughputPerMinute(q, lastHour())],
    ['GET /v1/history: backlog per minute, last hour', () => historyBacklogPerMinute(q, lastHour())],
    ['overview: job counts per queue and state', () => jobCountOpenByQueueState(q)],
    ['overview: schedule lag', () => scheduleLagSeconds(q)],
    ['overview: oldest row per table', () => historyOldestRows(q)],
  ];
}

/**
 * Milliseconds per run of one statement on each database, run alternately (base, history, base, …,
 * who goes first rotating), QUERY_RUNS times or as many as fit in QUERY_BUDGET_MS (at least 3),
 * after one warm-up each: the medians are taken under the same load.
 */
async function queryMs(runs: (() => Promise<unknown>)[]): Promise<number[]> {
  for (const run of runs) await run();
  const times: number[][] = runs.map(() => []);
  const t1 = performance.now();
  for (let i = 0; i < QUERY_RUNS && (i < 3 || performance.now() - t1 < QUERY_BUDGET_MS); i++) {
    for (let k = 0; k < runs.length; k++) {
      const j = (i + k) % runs.length;
      const t0 = performance.now();
      await runs[j]?.();
      times[j]?.push(performance.now() - t0);
    }
  }
  return times.map(median);
}

interface PlanNode {
  'Shared Hit Blocks': number;
  'Shared Read Blocks': number;
}

/**
 * Pages (shared buffers hit or read) each statement touches, by EXPLAIN (ANALYZE, BUFFERS) of what
 * it sends: a count the machine's load does not change, beside the times it does. Each statement
 * then runs again, uncounted, for its rows: a read that goes on by what it found (the windows of a
 * list, the slices of a count) takes the same steps as a real call.
 */
async function queryPages(d: Db): Promise<number[]> {
  let pages = 0;
  const explain: Queryable = {
    query: (async (q: string | { text: string; values?: unknown[] }, v?: unknown[]) => {
      const text = typeof q === 'string' ? q : q.text;
      const values = typeof q === 'string' ? v : q.values;
      const { rows } = await d.db.pool.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }>(
        `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) ${text}`,
        values,
      );
      const plan = rows[0]?.['QUERY PLAN'][0]?.Plan;
      pages += (plan?.['Shared Hit Blocks'] ?? 0) + (plan?.['Shared Read Blocks'] ?? 0);
      return d.db.pool.query(text, values);
    }) as Queryable['query'],
  };
  const out: number[] = [];
  for (const [, run] of queries(d, explain)) {
    await run();
    pages = 0;
    await run();
    out.push(pages);
  }
  return out;
}

const TABLES = ['jobs', 'job_attempts', 'occurrences'];

/** Bytes on disk per table (heap, indexes, TOAST), and what share of the heap is free for reuse. */
async function diskUse(d: Db): Promise<{ table: string; bytes: number; freePct: number | null }[]> {
  const stat = await d.db.pool
    .query('CREATE EXTENSION IF NOT EXISTS pgstattuple')
    .then(() => true)
    .catch(() => false);
  const { rows } = await d.db.pool.query<{ table: string; bytes: number; free: number | null }>(
    // A partitioned table (jobs) by its leaf partitions; pg_partition_tree has no row for a plain one.
    `SELECT c::text AS table, sum(pg_total_relation_size(l.relid))::float8 AS bytes,
            ${stat ? '100 * sum((a).approx_free_space) / nullif(sum((a).table_len), 0)' : 'NULL'}::float8 AS free
       FROM unnest($1::regclass[]) c
       CROSS JOIN LATERAL (SELECT relid FROM pg_partition_tree(c) WHERE isleaf
                           UNION ALL SELECT c WHERE NOT EXISTS (SELECT FROM pg_partition_tree(c))) l
       CROSS JOIN LATERAL (SELECT ${stat ? 'pgstattuple_approx(l.relid)' : 'NULL'} AS a) x
      GROUP BY c`,
    [TABLES],
  );
  return rows.map((r) => ({ table: r.table, bytes: r.bytes, freePct: r.free }));
}

/**
 * "Now" for the week's maintenance role: from the moment the oldest job left comes due, running
 * SOURCE_JOBS_S / (the history's jobs a second) times as fast as real time, and only while the role
 * runs. Rows then come due at the source document's rate while the role prunes, as in a week at that
 * rate, and none pile up between measurements.
 */
class WeekClock implements Clock {
  readonly #from: number;
  readonly #speed: number;
  #ranMs = 0;
  #since: number | null = null;

  constructor(from: Date, speed: number) {
    this.#from = from.getTime();
    this.#speed = speed;
  }

  run(on: boolean): void {
    if (on) this.#since ??= performance.now();
    else if (this.#since !== null) {
      this.#ranMs += performance.now() - this.#since;
      this.#since = null;
    }
  }

  get speed(): number {
    return this.#speed;
  }

  /** Seconds of real time the role has run. */
  get ranS(): number {
    return (this.#ranMs + (this.#since === null ? 0 : performance.now() - this.#since)) / 1000;
  }

  now(): Date {
    return new Date(this.#from + this.ranS * 1000 * this.#speed);
  }

  monotonicMs(): number {
    return performance.now();
  }
}

/**
 * The week's role: occurrences kept 7 days like succeeded jobs (the history holds 8 days, so at the
 * default 30 none would come due, where a live week at the source's rate prunes 500 a second of
 * them), due slices at the cap (withPruning), and a WeekClock from the moment the oldest slice of
 * succeeded jobs comes due whole: the measurements run ~2 minutes, ~1 hour of that clock, and a
 * slice comes due every 5.6 hours of it, so a clock that starts elsewhere may meet none.
 */
async function weekRole(d: Db): Promise<Role & { clock: WeekClock }> {
  const oldest = (await jobSliceList(d.db.pool)).find((s): s is BoundedSlice => s.to !== null && s.to > 1);
  const now = new Date();
  const due =
    oldest === undefined
      ? 0
      : (await jobSliceDue(d.db.pool, oldest, now, RETENTION_DEFAULTS.succeeded)).dueInS;
  const perSecond = N / (DAYS * 86_400);
  return {
    retention: { occurrences: '7d' },
    clock: new WeekClock(new Date(now.getTime() + due * 1000), SOURCE_JOBS_S / perSecond),
  };
}

/**
 * Runs the maintenance role's passes (default batch and duty cycle, `retention`) until one deletes
 * less than a batch: the rate it sustains with nothing else running.
 */
async function pruneToSteadyState(
  d: Db,
  retention: RetentionConfig,
): Promise<{ rows: number; seconds: number; passes: number }> {
  // At the cap, as the catch-up: the rate pruning sustains, not the pace a live role would pick.
  const m = new Maintenance({ pool: d.db.pool, log, sliceIds: SLICE_IDS, spreadSlices: false, retention });
  const t0 = performance.now();
  let rows = 0;
  let passes = 0;
  try {
    for (;;) {
      const pass = await m.runPass();
      passes++;
      const n = Object.values(pass.deleted).reduce((a, b) => a + b, 0);
      rows += n;
      // Less than a batch: what came due while the last pass ran. Rows come due as the history was
      // written (14.5 a second by default), so waiting for a pass that deletes none never ends.
      if (n < MAINTENANCE_DEFAULTS.batchSize || !pass.held) break;
      say(`pass ${passes}: ${n.toLocaleString('en')} rows in ${fmt(pass.durationMs / 1000, 1)} s`);
    }
  } finally {
    await m.stop();
  }
  return { rows, seconds: (performance.now() - t0) / 1000, passes };
}

const fmt = (v: number, digits = 0): string => v.toFixed(digits);
const range = (values: number[], digits = 0): string =>
  `${fmt(Math.min(...values), digits)}–${fmt(Math.max(...values), digits)}`;
const gib = (bytes: number): string => `${fmt(bytes / 2 ** 30, 2)} GiB`;
/** Each trial's value in turn, as `range` cannot show: whether one trial made the spread. */
const byRun = (values: number[], digits = 2): string => values.map((v) => fmt(v, digits)).join(', ');

/**
 * A row for two databases measured in one run (latencyTogether): `a` ÷ `b` over every trial's jobs
 * pooled, and the p99 ratio run by run.
 */
function togetherRow(
  a: LatencySample[][],
  b: LatencySample[][],
  aName: string,
  bName: string,
): Omit<BenchRow, 'name'> {
  const pa = a.flat().map((x) => x.ms);
  const pb = b.flat().map((x) => x.ms);
  const byTrial = byRun(a.map((x, i) => percentiles(x).p99 / percentiles(b[i] ?? []).p99));
  return {
    group: 'history',
    value: `p99 ${fmt(percentile(pa, 99), 2)} ms ${aName}, ${fmt(percentile(pb, 99), 2)} ms ${bName}`,
    note: `p99 ${fmt(percentile(pa, 99) / percentile(pb, 99), 2)}×, p50 ${fmt(percentile(pa, 50), 2)} / ${fmt(percentile(pb, 50), 2)} ms (${fmt(percentile(pa, 50) / percentile(pb, 50), 2)}×), over the ${pa.length.toLocaleString('en')} jobs of ${a.length} runs; p99 ${aName} ÷ ${bName} by run ${byTrial}`,
  };
}

/** A role's latencyPaired runs, pooled: each job by its window, and each run's p99 on ÷ off. */
interface Paired {
  on: LatencySample[];
  off: number[];
  ratios: number[];
  overlaps: { tail: number; all: number }[];
}

const pairedNone = (): Paired => ({ on: [], off: [], ratios: [], overlaps: [] });

function pairedAdd(p: Paired, r: { on: LatencySample[]; off: number[] }, pruned: Pruned): void {
  p.on.push(...r.on);
  p.off.push(...r.off);
  p.ratios.push(
    percentile(
      r.on.map((x) => x.ms),
      99,
    ) / percentile(r.off, 99),
  );
  p.overlaps.push(overlapShares(r.on, pruned.spans));
}

const rate = (p: Pruned): string => `${fmt(p.rows / Math.max(p.seconds, 1e-9))} rows/s`;

/** The row of a role's pruning switched on and off in one run: the issue's "the same run without pruning". */
function pairedRow(label: string, paired: Paired, pruned: Pruned): BenchRow {
  const on = paired.on.map((x) => x.ms);
  const p = (xs: number[], q: number): string => fmt(percentile(xs, q), 2);
  const r = (q: number): string => (percentile(on, q) / percentile(paired.off, q)).toFixed(2);
  const pct = (xs: number[]): string => `${fmt(median(xs) * 100)} %`;
  return {
    group: 'history',
    name: `enqueue → start, ${label} switched on and off every ${fmt(ROLE_WINDOW_MS / 1000)} s in one run`,
    value: `p99 ${p(on, 99)} ms on, ${p(paired.off, 99)} ms off`,
    target: '≤ 1.1× off',
    note: `p99 ${r(99)}×, p50 ${p(on, 50)} / ${p(paired.off, 50)} ms (${r(50)}×); ${paired.on.length.toLocaleString('en')} jobs sent with pruning on, ${paired.off.length.toLocaleString('en')} off, in ${paired.ratios.length} runs of ${PAIR_JOBS.toLocaleString('en')}; p99 on ÷ off by run ${byRun(paired.ratios)}; pruned ${rate(pruned)} while on (no statement in ${pruned.idle} on windows within ${fmt(FIRST_BATCH_WAIT_MS / 1000)} s of the role's start); overlapping a pruning statement: ${pct(paired.overlaps.map((o) => o.tail))} of the slowest 1 % sent with it on, ${pct(paired.overlaps.map((o) => o.all))} of all (medians by run)`,
  };
}

/**
 * A pruning column's jobs in one split: sent while one of its role's statements ran, or not.
 * Counting every job whose wait met a statement instead favours slow jobs, which span more time:
 * that split is in the note. `kind` narrows the statements to one kind. What a job that meets a
 * statement pays, not the run with pruning against the run without: no pacing changes it, only
 * each statement's CPU, so it has no target.
 */
function statementSplitRow(label: string, samples: LatencySample[], spans: Pruned['spans']): BenchRow {
  const sentDuring = (x: LatencySample, kind?: string): boolean =>
    spans.some((p) => (kind === undefined || p.kind === kind) && p.from <= x.sentMs && x.sentMs < p.to);
  const met = (x: LatencySample): boolean => spans.some((p) => p.from < x.sentMs + x.ms && p.to > x.sentMs);
  const split = (f: (x: LatencySample) => boolean): [number[], number[]] => [
    samples.filter(f).map((x) => x.ms),
    samples.filter((x) => !f(x)).map((x) => x.ms),
  ];
  const [during, outside] = split((x) => sentDuring(x));
  const [metDuring, metOutside] = split(met);
  // Which statements the jobs sent during one met: p99 per kind of statement, against outside.
  const kinds = [...new Set(spans.map((p) => p.kind))].sort();
  const byKind = kinds
    .map((kind) => {
      const ms = samples.filter((x) => sentDuring(x, kind)).map((x) => x.ms);
      const took = spans.filter((p) => p.kind === kind).map((p) => p.to - p.from);
      const ratio =
        ms.length === 0 ? 'no p99' : `p99 ${fmt(percentile(ms, 99) / percentile(outside, 99), 2)}×`;
      return `${kind}: ${ms.length} jobs, ${ratio} (statements ${took.length}, median ${fmt(median(took), 1)} ms, longest ${fmt(Math.max(...took), 1)} ms)`;
    })
    .join('; ');
  return {
    group: 'history',
    name: `enqueue → start while ${label}, jobs sent while a pruning statement ran against the rest`,
    value: `p99 ${fmt(percentile(during, 99), 2)} ms during, ${fmt(percentile(outside, 99), 2)} ms outside`,
    target: '',
    note: `p99 ${fmt(percentile(during, 99) / percentile(outside, 99), 2)}×, p50 ${fmt(median(during), 2)} / ${fmt(median(outside), 2)} ms; ${during.length.toLocaleString('en')} jobs sent during a statement, ${outside.length.toLocaleString('en')} outside, in the latency runs of ${TRIALS} trials with the role on; every job whose wait met a statement against the rest: p99 ${fmt(percentile(metDuring, 99) / percentile(metOutside, 99), 2)}× (${metDuring.length.toLocaleString('en')} jobs); by statement: ${byKind}`,
  };
}

const LABEL: Record<Column, string> = {
  base: `base (newest ${BASE_JOBS.toLocaleString('en')} only)`,
  history: 'history',
  week: `history, pruning as the source's week (rows due at ${SOURCE_JOBS_S} jobs/s)`,
  pruning: 'history, catching up a backlog at the default duty cycle',
};

export const bench: Bench = async () => {
  const perSecond = N / (DAYS * 86_400);
  say(
    `${N.toLocaleString('en')} jobs over ${DAYS} days (${fmt(perSecond, 1)} jobs/s, 1/${fmt(500 / perSecond)} of 500/s)…`,
  );
  const base = await prepare('base');
  const full = await prepare('history');
  const twin = ONLY.has('drain') || ONLY.has('latency') || ONLY.has('burst') ? await prepare('twin') : null;
  const dbs: Record<Column, Db> = { base, history: full, week: full, pruning: full };
  const pruningColumn = (c: Column): boolean => c === 'week' || c === 'pruning';
  const columns = COLUMNS.filter((c) => !pruningColumn(c) || ONLY.has('pruning'));
  const rows: BenchRow[] = [];
  try {
    if (full.loaded !== null) {
      rows.push({
        group: 'history',
        name: `load ${N.toLocaleString('en')} jobs + attempts + occurrences`,
        value: `${fmt(full.loaded.seconds)} s`,
        note: `${fmt(N / full.loaded.seconds)} jobs/s by generate_series; ${gib(full.loaded.bytes)} of rows and indexes, ${fmt(full.loaded.bytes / N)} bytes per job (${full.loaded.split})`,
      });
    }
    rows.push({
      group: 'history',
      name: 'scaling',
      value: `${fmt(perSecond, 1)} jobs/s for ${DAYS} days`,
      note: `1/${fmt(500 / perSecond)} of the source's 500 jobs/s, over the whole retention period and a day more; default retention (succeeded 7 d) finds ~${Math.round(((N / DAYS) * (DAYS - 7)) / 1000) * 1000} jobs due`,
    });
    const diskBefore = ONLY.has('pruning') ? await diskUse(full) : [];
    const pruned: Pruned = { rows: 0, seconds: 0, batchMs: [], spans: [], idle: 0 };
    const weekPruned: Pruned = { rows: 0, seconds: 0, batchMs: [], spans: [], idle: 0 };
    const plain: Around = (measure) => measure();
    const week = await weekRole(full);
    // Occurrences kept 7 days, as in the week: the oldest day's slice of the ledger is due.
    const catchUp: Role = { retention: { occurrences: '7d' } };
    const around = (c: Column): Around =>
      c === 'pruning'
        ? (measure) => withPruning(full, pruned, measure, catchUp)
        : c === 'week'
          ? (measure) => withPruning(full, weekPruned, measure, week)
          : plain;
    const drains = { base: [], history: [], week: [], pruning: [] } as Record<Column, number[]>;
    /** The twin's drains, in the columns' rotation: base's ratio to a database like it. */
    const twinDrains: number[] = [];
    // Each trial's enqueue → start times, per column.
    const lats = { base: [], history: [], week: [], pruning: [] } as Record<Column, number[][]>;
    /**
     * Each trial's jobs of base and history sent in one run (latencyTogether), and of base and its
     * twin in another: what the same comparison reads between two databases that differ in nothing.
     */
    const together = { base: [] as LatencySample[][], history: [] as LatencySample[][] };
    /** The same with the week's role pruning the history: the week's latency against base. */
    const weekTogether = { base: [] as LatencySample[][], week: [] as LatencySample[][] };
    const control = { base: [] as LatencySample[][], twin: [] as LatencySample[][] };
    const bursts = { base: [], history: [], week: [], pruning: [] } as Record<Column, number[]>;
    /** The twin's bursts, one a trial in the columns' rotation: base's ratio to a database like it. */
    const twinBursts: number[] = [];
    const paired = pairedNone();
    const weekPaired = pairedNone();
    const weekPairPruned: Pruned = { rows: 0, seconds: 0, batchMs: [], spans: [], idle: 0 };
    const catchUpSamples: LatencySample[] = [];
    const weekSamples: LatencySample[] = [];
    const pairPruned: Pruned = { rows: 0, seconds: 0, batchMs: [], spans: [], idle: 0 };
    const listed = queries(base);
    const names = listed.map(([name]) => name);
    const gated = listed.map(([, , g]) => g !== false);
    const qms = { base: [] as number[][], history: [] as number[][] };
    let burstN = 0;
    // The queries first, on the histories as loaded: the measurements after them add jobs to the
    // newest slices and delete them again, which a live system's slices never see.
    for (let t = 0; t < TRIALS && ONLY.has('queries'); t++) {
      say(`list and overview queries, trial ${t + 1} of ${TRIALS}…`);
      const b = queries(base);
      const h = queries(full);
      const ms: number[][] = [];
      for (let i = 0; i < b.length; i++) {
        ms.push(
          await queryMs([b[i]?.[1] ?? (() => Promise.resolve()), h[i]?.[1] ?? (() => Promise.resolve())]),
        );
      }
      qms.base.push(ms.map((m) => m[0] ?? Number.NaN));
      qms.history.push(ms.map((m) => m[1] ?? Number.NaN));
    }
    const pages = ONLY.has('queries')
      ? { base: await queryPages(base), history: await queryPages(full) }
      : null;
    // Catching up deletes every row due by the real clock, the ones the week's clock reaches later
    // too: its trials come after all the others.
    const rotated = columns.filter((c) => c !== 'pruning');
    for (let t = 0; t < TRIALS; t++) {
      // Rotated, so each column takes each place in the order (the drains and bursts below take
      // balancedOrder's, which also varies what runs right before each).
      const order = rotated.map((_, i) => rotated[(i + t) % rotated.length] ?? 'base');
      // The twin takes its turn among them, so the control is not always a trial's last.
      const turns: (Column | 'twin')[] = twin === null ? rotated : [...rotated, 'twin'];
      const inTurn = async (run: (c: Column | 'twin') => Promise<void>): Promise<void> => {
        for (let r = 0; r < ROUNDS; r++) {
          for (const i of balancedOrder(turns.length, t * ROUNDS + r)) await run(turns[i] ?? 'base');
        }
      };
      if (ONLY.has('drain')) {
        say(`drain, trial ${t + 1} of ${TRIALS}…`);
        await inTurn(async (c) => {
          if (c !== 'twin') drains[c].push(await around(c)(() => drain(dbs[c])));
          else if (twin !== null) twinDrains.push(await drain(twin));
        });
      }
      if (ONLY.has('latency')) {
        say(`latency, trial ${t + 1} of ${TRIALS}…`);
        for (const c of order) {
          lats[c].push(await latency(dbs[c], around(c), c === 'week' ? weekSamples : undefined));
        }
        // And base and history in one run, their jobs in turn: history ÷ base read job by job. The
        // columns above stay alone, so the week and the catch-up compare with history like for like.
        // The pair and its control alternate which goes first, as the columns rotate.
        const pairs = [full, twin].filter((d): d is Db => d !== null);
        for (const other of t % 2 === 0 ? pairs : pairs.reverse()) {
          const [b = [], o = []] = await latencyTogether([base, other]);
          if (other === full) {
            together.base.push(b);
            together.history.push(o);
          } else {
            control.base.push(b);
            control.twin.push(o);
          }
        }
        if (columns.includes('week')) {
          const [b = [], w = []] = await latencyTogether([base, full], around('week'));
          weekTogether.base.push(b);
          weekTogether.week.push(w);
          weekSamples.push(...w);
        }
      }
      if (ONLY.has('paired') && columns.includes('week')) {
        // The week's column and history are measured seconds apart, where the same code's p99 moved
        // 1.03–1.36× between runs; here the role's windows and those without it share the run.
        // Each trial on a week's clock of its own from when the oldest slice left comes due whole:
        // the shared one brings a slice due every 5.6 h of it, and between them the role finds
        // nothing to prune, which would measure an idle role.
        say(`latency with the week's pruning switched on and off, trial ${t + 1} of ${TRIALS}…`);
        const dueWeek = await weekRole(full);
        pairedAdd(
          weekPaired,
          await latencyPaired(full, dueWeek, weekPairPruned, t % 2 === 0),
          weekPairPruned,
        );
      }
      if (ONLY.has('burst')) {
        say(`burst, trial ${t + 1} of ${TRIALS}…`);
        await inTurn(async (c) => {
          if (c !== 'twin') bursts[c].push(await burst(dbs[c], burstN++, around(c)));
          else if (twin !== null) twinBursts.push(await burst(twin, burstN++, plain));
        });
      }
    }
    for (let t = 0; t < TRIALS && columns.includes('pruning'); t++) {
      say(`catching up a backlog, trial ${t + 1} of ${TRIALS}…`);
      if (ONLY.has('drain')) drains.pruning.push(await around('pruning')(() => drain(full)));
      if (ONLY.has('latency')) lats.pruning.push(await latency(full, around('pruning'), catchUpSamples));
      if (ONLY.has('paired')) {
        // Where the week's role (above) has what its clock brings due, this one always finds rows.
        say(`latency with the catch-up's pruning switched on and off, trial ${t + 1} of ${TRIALS}…`);
        pairedAdd(paired, await latencyPaired(full, catchUp, pairPruned, t % 2 === 0), pairPruned);
      }
      if (ONLY.has('burst')) bursts.pruning.push(await burst(full, burstN++, around('pruning')));
    }
    // Targets: history against base, the week against history; catching up has none.
    const target = (c: Column, history: string, week: string): string =>
      c === 'history' ? history : c === 'week' ? week : '';
    const ratio = (c: Column, v: (k: Column) => number): string =>
      c === 'base'
        ? ''
        : `${(v(c) / v('base')).toFixed(2)}× base${pruningColumn(c) ? `, ${(v(c) / v('history')).toFixed(2)}× history` : ''}; `;
    if (ONLY.has('drain')) {
      const m = (c: Column) => median(drains[c]);
      for (const c of columns) {
        rows.push({
          group: 'history',
          name: `drain ${DRAIN.toLocaleString('en')}: ${LABEL[c]}`,
          value: `${fmt(m(c))} jobs/s`,
          target: target(c, '≥ 0.8× base', '≥ 0.9× history'),
          note: `${ratio(c, m)}median of ${drains[c].length}: ${range(drains[c])}`,
        });
      }
      if (twinDrains.length > 0) {
        rows.push({
          group: 'history',
          name: `the same, base's twin (a second base loaded alike): the history row's noise`,
          value: `${fmt(median(twinDrains))} jobs/s`,
          note: `${fmt(median(twinDrains) / m('base'), 2)}× base; median of ${twinDrains.length}: ${range(twinDrains)}`,
        });
      }
    }
    if (ONLY.has('latency')) {
      // Over every trial's jobs pooled: a trial's p99 is its 50th slowest job of 5,000, the
      // pool's its 150th of 15,000.
      const p50 = (c: Column) => percentile(lats[c].flat(), 50);
      const p99 = (c: Column) => percentile(lats[c].flat(), 99);
      for (const c of columns) {
        rows.push({
          group: 'history',
          name: `enqueue → start, ${LATENCY_N.toLocaleString('en')} at ${LATENCY_RATE}/s: ${LABEL[c]}`,
          value: `p50 ${fmt(p50(c), 2)} ms, p99 ${fmt(p99(c), 2)} ms`,
          // Targets are read where the columns share a run (below): measured seconds apart, the
          // week's p99 moved 0.80–1.36× history's between runs of the same code.
          target: '',
          note: `p50 ${ratio(c, p50)}p99 ${ratio(c, p99)}over the ${lats[c].flat().length.toLocaleString('en')} jobs of ${lats[c].length} trials; p99 by trial ${byRun(
            lats[c].map((l) => percentile(l, 99)),
          )} ms`,
        });
      }
      rows.push({
        ...togetherRow(together.history, together.base, 'history', 'base'),
        name: `enqueue → start, ${LATENCY_N.toLocaleString('en')} at ${LATENCY_RATE}/s each on base and history in one run, their jobs in turn`,
        target: '≤ 1.2× base',
      });
      if (twin !== null) {
        rows.push({
          ...togetherRow(control.twin, control.base, 'twin', 'base'),
          name: `the same, base and its twin (a second base loaded alike): the row above's noise`,
        });
      }
      if (weekTogether.week.length > 0) {
        rows.push({
          ...togetherRow(weekTogether.week, weekTogether.base, 'the week', 'base'),
          name: `enqueue → start, ${LATENCY_N.toLocaleString('en')} at ${LATENCY_RATE}/s each on base and the week (its role pruning the history) in one run, their jobs in turn`,
          target: '≤ 1.2× base',
        });
      }
    }
    if (ONLY.has('latency') && columns.includes('pruning')) {
      rows.push(statementSplitRow('the week', weekSamples, weekPruned.spans));
      rows.push(statementSplitRow('catching up', catchUpSamples, pruned.spans));
    }
    if (ONLY.has('paired') && columns.includes('week')) {
      rows.push(pairedRow("the week's pruning", weekPaired, weekPairPruned));
    }
    if (ONLY.has('paired') && columns.includes('pruning')) {
      rows.push(pairedRow("the catch-up's pruning", paired, pairPruned));
    }
    if (ONLY.has('burst')) {
      const m = (c: Column) => median(bursts[c]);
      for (const c of columns) {
        rows.push({
          group: 'history',
          name: `burst ${BURST.toLocaleString('en')} occurrences: ${LABEL[c]}`,
          value: `${fmt(m(c))} ms`,
          target: c === 'base' ? '' : c === 'history' ? '≤ 1.2× base' : '',
          note: `fire time → all written; ${ratio(c, m)}median of ${bursts[c].length}: ${range(bursts[c])}`,
        });
      }
      if (twinBursts.length > 0) {
        rows.push({
          group: 'history',
          name: `the same, base's twin (a second base loaded alike): the history row's noise`,
          value: `${fmt(median(twinBursts))} ms`,
          note: `fire time → all written; ${fmt(median(twinBursts) / m('base'), 2)}× base; median of ${twinBursts.length}: ${range(twinBursts)}`,
        });
      }
    }
    if (pages !== null) {
      names.forEach((name, i) => {
        const m = (c: 'base' | 'history') => median(qms[c].map((q) => q[i] ?? Number.NaN));
        const p = (c: 'base' | 'history') => pages[c][i] ?? Number.NaN;
        rows.push({
          group: 'history',
          name,
          value: `${fmt(m('base'), 2)} / ${fmt(m('history'), 2)} ms`,
          target: gated[i] === true ? '≤ 1.2× base' : '',
          note: `base / history, ${(m('history') / m('base')).toFixed(2)}×, runs alternating, median of ${TRIALS} trials; pages touched ${p('base')} / ${p('history')}`,
        });
      });
    }
    if (ONLY.has('pruning')) {
      const batches = (p: Pruned): string =>
        `${p.batchMs.length === 0 ? 'no jobs deleted row by row' : `a jobs batch took p50 ${fmt(median(p.batchMs), 1)} ms, p99 ${fmt(percentile(p.batchMs, 99), 1)} ms`}${p.idle > 0 ? `; found nothing to prune in ${p.idle} measurements` : ''}`;
      const kinds = (p: Pruned): string => {
        const n = new Map<string, number>();
        for (const x of p.spans) n.set(x.kind, (n.get(x.kind) ?? 0) + 1);
        return [...n].map(([k, v]) => `${k} ×${v.toLocaleString('en')}`).join(', ') || 'none';
      };
      rows.push({
        group: 'history',
        name: `pruning rate while the week's rows ran`,
        value: rate(weekPruned),
        // Each second of the source's week brings 500 jobs and 500 occurrences due, and attempts.
        target: `≈ ${(2 * SOURCE_JOBS_S).toLocaleString('en')}+ rows/s due`,
        note: `${weekPruned.rows.toLocaleString('en')} rows in ${fmt(weekPruned.seconds, 1)} s at the default duty cycle (${fmt(MAINTENANCE_DEFAULTS.dutyCycle * 100)} %), the week's clock ${fmt((week.clock.ranS * week.clock.speed) / 3600, 1)} h on from when the oldest slice of succeeded jobs is due whole (the next is due ${fmt(SLICE_IDS / (N / (DAYS * 86_400)) / 3600, 1)} h of that clock later); statements: ${kinds(weekPruned)}; ${batches(weekPruned)}`,
      });
      rows.push({
        group: 'history',
        name: 'pruning rate while catching up beside the rows above',
        value: rate(pruned),
        note: `${pruned.rows.toLocaleString('en')} rows of every table in ${fmt(pruned.seconds, 1)} s at the default batch and duty cycle, occurrences kept 7 days; ${batches(pruned)}`,
      });
      say('pruning to steady state…');
      const steady = await pruneToSteadyState(full, catchUp.retention ?? {});
      // What autovacuum would do next; the files keep their size, the freed space is reused.
      await full.db.pool.query(`VACUUM ANALYZE ${TABLES.join(', ')}`);
      const diskAfter = await diskUse(full);
      const { rows: left } = await full.db.pool.query<{ n: number }>(
        `SELECT (reltuples)::float8 AS n FROM pg_class WHERE oid = 'jobs'::regclass`,
      );
      const before = diskBefore.reduce((a, r) => a + r.bytes, 0);
      const after = diskAfter.reduce((a, r) => a + r.bytes, 0);
      rows.push({
        group: 'history',
        name: 'disk after a simulated week with default retention',
        value: gib(after),
        note: `${diskAfter
          .map((r) => `${r.table} ${gib(r.bytes)}${r.freePct === null ? '' : ` (${fmt(r.freePct)} % free)`}`)
          .join(
            ', ',
          )}; ${gib(before)} before pruning; ~${Math.round((left[0]?.n ?? 0) / 1000) * 1000} jobs left`,
      });
      // The catch-up may have left nothing due: a day more comes due for a rate alone.
      say('pruning a day more, nothing else running…');
      const day = await pruneToSteadyState(full, { succeeded: '6d', occurrences: '6d' });
      rows.push({
        group: 'history',
        name: 'pruning a day more (retention 6 days), nothing else running',
        value: `${fmt(day.rows / Math.max(day.seconds, 1e-9))} rows/s`,
        note: `${day.rows.toLocaleString('en')} rows in ${fmt(day.seconds, 1)} s, ${day.passes} passes, after the catch-up's leftovers at 7 days (${steady.rows.toLocaleString('en')} rows in ${fmt(steady.seconds, 1)} s) and the disk row above`,
      });
    }
    // Last: each trial drops a day of the ledger that the disk figure above still holds.
    if (!ONLY.has('ledger')) return rows;
    const drops = {
      on: [] as number[],
      off: [] as number[],
      ratios: [] as number[],
      runs: [] as {
        rows: number;
        steps: number;
        busyMs: number;
        onMs: number;
        pacedMs: number;
        dropMs: number;
      }[],
    };
    const sham = { on: [] as number[], off: [] as number[], ratios: [] as number[] };
    const daily = {
      on: [] as number[],
      off: [] as number[],
      ratios: [] as number[],
      rows: 0,
      steps: 0,
      busyMs: 0,
      onMs: 0,
      longestMs: [] as number[],
    };
    for (let t = 0; t < TRIALS; t++) {
      say(`latency beside a slice of the ledger summed at a day's pace, trial ${t + 1} of ${TRIALS}…`);
      const day = await latencyBesideLedgerSteps(full, t % 2 === 0, 'day', false);
      daily.on.push(...day.on);
      daily.off.push(...day.off);
      daily.ratios.push(percentile(day.on, 99) / percentile(day.off, 99));
      daily.rows += day.rows;
      daily.steps += day.steps;
      daily.busyMs += day.busyMs;
      daily.onMs += day.onMs;
      daily.longestMs.push(day.longestMs);
      say(`latency beside a slice of the ledger summed and dropped, trial ${t + 1} of ${TRIALS}…`);
      const r = await latencyBesideLedgerSteps(full, t % 2 === 0, 'behind', true);
      if (r.dropMs === null) throw new Error('the slice was not dropped');
      drops.on.push(...r.on);
      drops.off.push(...r.off);
      drops.ratios.push(percentile(r.on, 99) / percentile(r.off, 99));
      drops.runs.push({ ...r, dropMs: r.dropMs });
      // Each trial's control right after it, on the same database.
      say(`latency in the same windows with nothing switched, trial ${t + 1} of ${TRIALS}…`);
      const c = await latencyInShamWindows(full, t % 2 === 0);
      sham.on.push(...c.on);
      sham.off.push(...c.off);
      sham.ratios.push(percentile(c.on, 99) / percentile(c.off, 99));
    }
    const p = (xs: number[], q: number): string => fmt(percentile(xs, q), 2);
    const onOff = (q: number): string => (percentile(drops.on, q) / percentile(drops.off, q)).toFixed(2);
    const total = (key: 'rows' | 'busyMs' | 'pacedMs' | 'onMs'): number =>
      drops.runs.reduce((a, x) => a + x[key], 0);
    const sumRate = total('rows') / (total('busyMs') / 1000);
    const pacedMs = total('pacedMs');
    const onMs = total('onMs');
    rows.push({
      group: 'history',
      name: `enqueue → start, a day's slice of the ledger summed at the role's pace with a day to go, switched on and off every ${fmt(PAIR_WINDOW_MS / 1000)} s in one run`,
      value: `p99 ${p(daily.on, 99)} ms on, ${p(daily.off, 99)} ms off`,
      target: '≤ 1.1× off',
      note: `p99 ${(percentile(daily.on, 99) / percentile(daily.off, 99)).toFixed(2)}×, p50 ${p(daily.on, 50)} / ${p(daily.off, 50)} ms; ${daily.on.length.toLocaleString('en')} jobs sent with the steps on, ${daily.off.length.toLocaleString('en')} off, in ${TRIALS} runs of ${PAIR_JOBS.toLocaleString('en')}; p99 on ÷ off by run ${byRun(daily.ratios)}; ${daily.rows.toLocaleString('en')} rows in ${daily.steps} steps of ${fmt(daily.busyMs / Math.max(daily.steps, 1), 1)} ms on average (the longest by run ${byRun(daily.longestMs, 1)} ms); a step's rows read as fire time at the source's ${SOURCE_JOBS_S}/s (${fmt(daily.rows / Math.max(daily.steps, 1) / SOURCE_JOBS_S, 1)} s), the role's cycle is ${fmt(SLICE_PACE_BUDGET_SHARE * 100)} % of that (slice-pace.ts), its rests going on across on windows: the steps took ${fmt((daily.busyMs / Math.max(daily.onMs, 1)) * 100, 2)} % of the on windows' time`,
    });
    rows.push({
      group: 'history',
      name: `enqueue → start, a day's slice of the ledger summed at the role's pace behind (the next slice due already), switched on and off every ${fmt(PAIR_WINDOW_MS / 1000)} s in one run`,
      value: `p99 ${p(drops.on, 99)} ms on, ${p(drops.off, 99)} ms off`,
      target: '≤ 1.1× off',
      note: `p99 ${onOff(99)}×, p50 ${p(drops.on, 50)} / ${p(drops.off, 50)} ms (${onOff(50)}×); ${drops.on.length.toLocaleString('en')} jobs sent with the steps on, ${drops.off.length.toLocaleString('en')} off, in ${TRIALS} runs of ${PAIR_JOBS.toLocaleString('en')}; p99 on ÷ off by run ${byRun(drops.ratios)}; ${drops.runs.map((x) => `${x.rows.toLocaleString('en')} rows in ${x.steps} steps, dropped in ${fmt(x.dropMs)} ms`).join('; ')}; the steps took ${fmt((pacedMs / Math.max(onMs, 1)) * 100, 2)} % of the on windows' time; they ran at ${fmt(sumRate)} rows/s, so a day at the source's 500/s (43,200,000) is ~${fmt(43_200_000 / sumRate / 60)} min of steps, planned over ${fmt(24 * sliceCatchUpShare(BEHIND_DUE))} h with ${BEHIND_DUE} due`,
    });
    rows.push({
      group: 'history',
      name: `enqueue → start, nothing switched on or off in the same ${fmt(PAIR_WINDOW_MS / 1000)} s windows (the control of the ledger's on/off rows)`,
      value: `p99 ${p(sham.on, 99)} ms "on", ${p(sham.off, 99)} ms "off"`,
      target: '',
      note: `p99 ${(percentile(sham.on, 99) / percentile(sham.off, 99)).toFixed(2)}×, p50 ${(percentile(sham.on, 50) / percentile(sham.off, 50)).toFixed(2)}×; ${sham.on.length.toLocaleString('en')} and ${sham.off.length.toLocaleString('en')} jobs in ${TRIALS} runs of ${PAIR_JOBS.toLocaleString('en')}, each right after a run of the row above on the same database; p99 "on" ÷ "off" by run ${byRun(sham.ratios)}: how far an on/off ratio moves with nothing to measure`,
    });
    return rows;
  } finally {
    await base.db.close();
    await full.db.close();
    await twin?.db.close();
  }
};
