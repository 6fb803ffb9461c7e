/**
 * The hot paths with a realistic history in place, against the same paths on an empty database:
 * BENCH_HISTORY_JOBS finished jobs (default 10,000,000: ~6 hours at the source document's 500 jobs
 * a second) with their attempts and occurrences, written by generate_series in the database, not
 * through the API. Then, alternating empty / history / history-while-pruning trial by trial:
 *
 * - drain 50,000 no-op jobs with one worker (concurrency 2,000);
 * - enqueue → handler start latency, 1,000 jobs at 200/s, p50 and p99;
 * - a 5,000-occurrence burst: fire time → all written, one leader (empty and history only);
 * - the statements behind the API's list endpoints and the dashboard's overview (median of 20).
 *
 * "While pruning" runs the maintenance role with its default retention and pacing beside the
 * measurement; the loaded history finished 8 days ago, so its succeeded jobs are all due. Its row
 * reports the pruning rate it sustained. BENCH_HISTORY_TRIALS sets the trials (default 3),
 * BENCH_HISTORY_ONLY the measurements (e.g. `drain,latency`).
 */
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import { createLogger } from '../src/log.ts';
import { Maintenance } from '../src/maintenance/maintenance.ts';
import { Scheduler } from '../src/scheduler/scheduler.ts';
import { jobSearch } from '../src/store/job-search.ts';
import { occurrenceListBySchedule } from '../src/store/occurrences.ts';
import { historyOldestRows, jobCountOpenByQueueState, scheduleLagSeconds } from '../src/store/stats.ts';
import { workflowSearch } from '../src/store/workflow-search.ts';
import { JobClient } from '../src/worker/job-client.ts';
import { Worker } from '../src/worker/worker.ts';
import { benchDatabase, type BenchDatabase } from './db.ts';
import { LATENCY_JOBS, LATENCY_RATE, latencyMeasure } from './latency.ts';
import { median, percentile, type Bench, type BenchRow } from './table.ts';

const N = Number(process.env.BENCH_HISTORY_JOBS ?? 10_000_000);
const TRIALS = Number(process.env.BENCH_HISTORY_TRIALS ?? 3);
/** Which measurements to run (comma-separated: drain, latency, burst, queries); default all. */
const ONLY = new Set((process.env.BENCH_HISTORY_ONLY ?? 'drain,latency,burst,queries').split(','));
const DRAIN = 50_000;
const BURST = 5_000;
const QUERY_RUNS = 20;
/** Rows per loading statement: each is one transaction, and progress is printed after each. */
const LOAD_CHUNK = 500_000;
const SCHEDULES = 1_000;
const DAY_MS = 86_400_000;

const log = pino({ level: process.env.TIDEMARK_LOG_LEVEL ?? 'warn' }, pino.destination(2));
const say = (text: string): void => void process.stderr.write(`bench history: ${text}\n`);

type Db = { name: string; db: BenchDatabase; scheduleId: string };

/**
 * Jobs as the scheduler makes them, 2 ms apart (500 a second), the newest finished 8 days ago: 99 %
 * succeeded (a tenth of them after one failed attempt, a job_attempts row), 0.5 % dead after four
 * attempts, 0.5 % cancelled; one occurrence each, across SCHEDULES every-minute schedules.
 */
export async function loadHistory(
  db: BenchDatabase,
  n: number,
): Promise<{ seconds: number; bytes: number; split: string }> {
  const t0 = performance.now();
  const newest = new Date(Date.now() - 8 * DAY_MS);
  for (let from = 1; from <= n; from += LOAD_CHUNK) {
    const to = Math.min(n, from + LOAD_CHUNK - 1);
    await db.pool.query(
      `WITH s AS (SELECT array_agg(id ORDER BY id) AS ids FROM schedules WHERE name LIKE 'history-%'),
       j AS (
         INSERT INTO jobs (queue, kind, tenant_id, payload, state, run_at, attempt, max_attempts, idempotency_key,
                           lease_owner, schedule_id, created_at, started_at, finished_at, last_error)
         SELECT 'hist-' || (g % 20), 'report', CASE WHEN g % 10 = 0 THEN 'acme' ELSE 'default' END,
                '{"report": "daily", "format": "pdf"}',
                CASE WHEN g % 200 = 0 THEN 'dead' WHEN g % 200 = 1 THEN 'cancelled' ELSE 'succeeded' END,
                x.t, CASE WHEN g % 200 = 0 THEN 4 WHEN g % 10 = 2 THEN 2 ELSE 1 END, 4,
                'occurrence:' || (s.ids)[1 + g % ${SCHEDULES}] || ':' || to_char(x.t, 'YYYY-MM-DD"T"HH24:MI:SS.MS'),
                'host-1:1234:abcd', (s.ids)[1 + g % ${SCHEDULES}], x.t, x.t + interval '5 ms',
                x.t + interval '2 s', CASE WHEN g % 200 = 0 THEN 'Error: upstream returned 503' END
           FROM generate_series($1::int, $2::int) g CROSS JOIN s
           CROSS JOIN LATERAL (SELECT $3::timestamptz - (${n} - g) * interval '2 ms' AS t) x
         RETURNING id, schedule_id, created_at, attempt, state
       ), o AS (
         INSERT INTO occurrences (schedule_id, fire_at, state, materialised_at, epoch, job_id, source, schedule_version)
         SELECT schedule_id, created_at, 'enqueued', created_at + interval '40 ms', 1, id, 'schedule', 1 FROM j
       )
       INSERT INTO job_attempts (job_id, attempt, worker, started_at, finished_at, outcome, error)
       SELECT j.id, a, 'host-1:1234:abcd', j.created_at, j.created_at + interval '1 s', 'failed', 'Error: timeout'
         FROM j CROSS JOIN LATERAL generate_series(1, j.attempt - CASE WHEN j.state = 'dead' THEN 0 ELSE 1 END) a`,
      [from, to, newest],
    );
    say(`loaded ${to.toLocaleString('en')} of ${n.toLocaleString('en')} jobs`);
  }
  await db.pool.query('VACUUM ANALYZE jobs, job_attempts, occurrences');
  const seconds = (performance.now() - t0) / 1000;
  const { rows } = await db.pool.query<{ name: string; bytes: number }>(
    `SELECT c::text AS name, pg_total_relation_size(c)::float8 AS bytes
       FROM unnest(ARRAY['jobs', 'job_attempts', 'occurrences']::regclass[]) c`,
  );
  const bytes = rows.reduce((sum, r) => sum + r.bytes, 0);
  const split = rows.map((r) => `${r.name} ${Math.round(r.bytes / n)}`).join(', ');
  return { seconds, bytes, split };
}

async function prepare(name: string, history: number): Promise<Db> {
  const db = await benchDatabase();
  await db.pool.query(
    `INSERT INTO schedules (tenant_id, name, spec, queue, kind, next_fire_at)
     SELECT 'default', 'history-' || g, '* * * * *', 'hist-' || (g % 20), 'report', NULL FROM generate_series(1, $1) g`,
    [SCHEDULES],
  );
  const { rows } = await db.pool.query<{ id: string }>(
    `SELECT id FROM schedules WHERE name LIKE 'history-%' ORDER BY id LIMIT 1`,
  );
  if (history > 0) {
    const loaded = await loadHistory(db, history);
    loadStats.set(name, loaded);
  }
  return { name, db, scheduleId: rows[0]?.id ?? '' };
}

interface Pruned {
  rows: number;
  seconds: number;
  /** Duration of each jobs batch statement (1,000 jobs read, their attempts deleted with them). */
  batchMs: number[];
}

const loadStats = new Map<string, { seconds: number; bytes: number; split: string }>();

async function fresh(db: BenchDatabase, queue: string): Promise<void> {
  await db.pool.query('DELETE FROM jobs WHERE queue = $1', [queue]);
  await db.pool.query('VACUUM ANALYZE jobs');
}

/** Runs `during` with the maintenance role pruning beside it (default retention and pacing). */
async function withPruning<T>(db: BenchDatabase, pruned: Pruned, during: () => Promise<T>): Promise<T> {
  let first: () => void = () => undefined;
  const started = new Promise<void>((r) => (first = r));
  let rows = 0;
  const m = new Maintenance({
    pool: db.pool,
    log,
    intervalMs: 1_000,
    onBatch: (b) => {
      rows += b.deleted;
      if (b.table === 'jobs') pruned.batchMs.push(b.endedMs - b.startedMs);
      first();
    },
  });
  m.start();
  await started;
  const t0 = performance.now();
  try {
    return await during();
  } finally {
    const seconds = (performance.now() - t0) / 1000;
    await m.stop();
    pruned.rows += rows;
    pruned.seconds += seconds;
  }
}

async function drain(db: BenchDatabase, jobs: JobClient, pruning: Pruned | null) {
  await fresh(db, 'drain');
  for (let i = 0; i < DRAIN; i += 10_000) {
    await jobs.enqueueMany(Array.from({ length: 10_000 }, () => ({ queue: 'drain', kind: 'noop' })));
  }
  await db.pool.query('VACUUM ANALYZE jobs');
  const run = async (): Promise<number> => {
    let done = 0;
    let finish: () => void = () => undefined;
    const finished = new Promise<void>((resolve) => (finish = resolve));
    const worker = new Worker({
      pool: db.pool,
      connectionString: db.url,
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
  };
  return pruning === null ? run() : withPruning(db, pruning, run);
}

async function latency(db: BenchDatabase, jobs: JobClient, pruning: Pruned | null) {
  await fresh(db, 'latency');
  const lat = await latencyMeasure(db, jobs, (measure) =>
    pruning === null ? measure() : withPruning(db, pruning, measure),
  );
  return { p50: median(lat), p99: percentile(lat, 99) };
}

/** 5,000 one-off schedules due at one instant: fire time → the last occurrence written (ms). */
async function burst(db: BenchDatabase, trial: number): Promise<number> {
  let led: () => void = () => undefined;
  const leading = new Promise<void>((done) => (led = done));
  const scheduler = new Scheduler({ pool: db.pool, log, tickMs: 100, onLead: () => led() });
  await scheduler.start();
  await leading;
  try {
    const fireAt = new Date(Math.ceil((Date.now() + 3000) / 1000) * 1000);
    await db.pool.query(
      `INSERT INTO schedules (tenant_id, name, spec, queue, kind, next_fire_at)
       SELECT 'default', 'burst-' || $3 || '-' || g, 'at ' || $1, 'burst', 'k', $2 FROM generate_series(1, ${BURST}) g`,
      [fireAt.toISOString(), fireAt, trial],
    );
    const deadline = Date.now() + 60_000;
    for (;;) {
      const { rows } = await db.pool.query<{ n: number; ms: number | null }>(
        `SELECT count(*)::int AS n, (extract(epoch FROM max(o.materialised_at) - $1::timestamptz) * 1000)::float8 AS ms
           FROM occurrences o JOIN schedules s ON s.id = o.schedule_id
          WHERE s.name LIKE 'burst-' || $2 || '-%'`,
        [fireAt, trial],
      );
      const r = rows[0];
      if (r !== undefined && r.n === BURST) return r.ms ?? Number.NaN;
      if (Date.now() > deadline) return Number.NaN;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  } finally {
    await scheduler.stop();
    await db.pool.query(`DELETE FROM schedules WHERE name LIKE 'burst-%'`);
    await db.pool.query(`DELETE FROM jobs WHERE queue = 'burst'`);
  }
}

/** The statements the API's list routes and the dashboard's overview run, and what each is for. */
function queries(d: Db): [string, () => Promise<unknown>][] {
  const pool = d.db.pool;
  return [
    ['GET /v1/jobs (first page, newest)', () => jobSearch(pool, { limit: 100 })],
    ['GET /v1/jobs?state=succeeded', () => jobSearch(pool, { state: 'succeeded', limit: 100 })],
    ['GET /v1/jobs?state=running', () => jobSearch(pool, { state: 'running', limit: 100 })],
    ['GET /v1/jobs?tenantId=acme', () => jobSearch(pool, { tenantId: 'acme', limit: 100 })],
    ['GET /v1/dead-letter', () => jobSearch(pool, { state: 'dead', limit: 200 })],
    ['GET /v1/schedules/{id}/occurrences', () => occurrenceListBySchedule(pool, d.scheduleId, null, 100)],
    ['GET /v1/workflows', () => workflowSearch(pool, { limit: 50 })],
    ['overview: job counts per queue and state', () => jobCountOpenByQueueState(pool)],
    ['overview: schedule lag', () => scheduleLagSeconds(pool)],
    ['overview: oldest row per table', () => historyOldestRows(pool)],
  ];
}

async function queryMs(run: () => Promise<unknown>): Promise<number> {
  await run();
  const times: number[] = [];
  for (let i = 0; i < QUERY_RUNS; i++) {
    const t0 = performance.now();
    await run();
    times.push(performance.now() - t0);
  }
  return median(times);
}

const fmt = (v: number, digits = 0): string => v.toFixed(digits);
const range = (values: number[], digits = 0): string =>
  `${fmt(Math.min(...values), digits)}–${fmt(Math.max(...values), digits)}`;

export const bench: Bench = async () => {
  say(`empty database, then ${N.toLocaleString('en')} jobs of history…`);
  const empty = await prepare('empty', 0);
  const full = await prepare('history', N);
  const rows: BenchRow[] = [];
  try {
    const loaded = loadStats.get('history');
    if (loaded !== undefined) {
      rows.push({
        group: 'history',
        name: `load ${N.toLocaleString('en')} jobs + attempts + occurrences`,
        value: `${fmt(loaded.seconds)} s`,
        note: `${fmt(N / loaded.seconds)} jobs/s by generate_series; ${fmt(loaded.bytes / 2 ** 30, 2)} GiB of rows and indexes, ${fmt(loaded.bytes / N)} bytes per job (${loaded.split})`,
      });
    }
    const jobsEmpty = new JobClient(empty.db.pool);
    const jobsFull = new JobClient(full.db.pool);
    const pruned: Pruned = { rows: 0, seconds: 0, batchMs: [] };
    const drains: Record<'empty' | 'history' | 'pruning', number[]> = { empty: [], history: [], pruning: [] };
    const lats: Record<'empty' | 'history' | 'pruning', { p50: number; p99: number }[]> = {
      empty: [],
      history: [],
      pruning: [],
    };
    for (let t = 0; t < (ONLY.has('drain') ? TRIALS : 0); t++) {
      say(`drain, trial ${t + 1} of ${TRIALS}…`);
      drains.empty.push(await drain(empty.db, jobsEmpty, null));
      drains.history.push(await drain(full.db, jobsFull, null));
      drains.pruning.push(await drain(full.db, jobsFull, pruned));
    }
    for (let t = 0; t < (ONLY.has('latency') ? TRIALS : 0); t++) {
      say(`latency, trial ${t + 1} of ${TRIALS}…`);
      lats.empty.push(await latency(empty.db, jobsEmpty, null));
      lats.history.push(await latency(full.db, jobsFull, null));
      lats.pruning.push(await latency(full.db, jobsFull, pruned));
    }
    const bursts: Record<'empty' | 'history', number[]> = { empty: [], history: [] };
    for (let t = 0; t < (ONLY.has('burst') ? TRIALS : 0); t++) {
      say(`burst, trial ${t + 1} of ${TRIALS}…`);
      bursts.empty.push(await burst(empty.db, t));
      bursts.history.push(await burst(full.db, t));
    }
    const base = median(drains.empty);
    for (const k of ONLY.has('drain') ? (['empty', 'history', 'pruning'] as const) : []) {
      const m = median(drains[k]);
      rows.push({
        group: 'history',
        name: `drain ${DRAIN.toLocaleString('en')}: ${k === 'pruning' ? 'history, while pruning' : k}`,
        value: `${fmt(m)} jobs/s`,
        target: k === 'empty' ? '' : k === 'history' ? '≥ 0.8× empty' : '≥ 0.9× history',
        note: `${(m / base).toFixed(2)}× empty${k === 'pruning' ? `, ${(m / median(drains.history)).toFixed(2)}× history` : ''}; median of ${TRIALS}: ${range(drains[k])}`,
      });
    }
    const p50e = median(lats.empty.map((l) => l.p50));
    const p99e = median(lats.empty.map((l) => l.p99));
    for (const k of ONLY.has('latency') ? (['empty', 'history', 'pruning'] as const) : []) {
      const p50 = median(lats[k].map((l) => l.p50));
      const p99 = median(lats[k].map((l) => l.p99));
      rows.push({
        group: 'history',
        name: `enqueue → start, ${LATENCY_JOBS} at ${LATENCY_RATE}/s: ${k === 'pruning' ? 'history, while pruning' : k}`,
        value: `p50 ${fmt(p50, 2)} ms, p99 ${fmt(p99, 2)} ms`,
        note: `${(p50 / p50e).toFixed(2)}× / ${(p99 / p99e).toFixed(2)}× empty; median of ${TRIALS}: p50 ${range(
          lats[k].map((l) => l.p50),
          2,
        )}, p99 ${range(
          lats[k].map((l) => l.p99),
          2,
        )} ms`,
      });
    }
    for (const k of ONLY.has('burst') ? (['empty', 'history'] as const) : []) {
      const m = median(bursts[k]);
      rows.push({
        group: 'history',
        name: `burst ${BURST.toLocaleString('en')} occurrences: ${k}`,
        value: `${fmt(m)} ms`,
        note: `fire time → all written; ${(m / median(bursts.empty)).toFixed(2)}× empty; median of ${TRIALS}: ${range(bursts[k])}`,
      });
    }
    rows.push({
      group: 'history',
      name: 'pruning rate while the rows above ran',
      value: `${fmt(pruned.rows / Math.max(pruned.seconds, 1e-9))} rows/s`,
      note: `${pruned.rows.toLocaleString('en')} rows (jobs, attempts) in ${fmt(pruned.seconds, 1)} s at the default batch and duty cycle; a jobs batch took p50 ${fmt(median(pruned.batchMs), 1)} ms, p99 ${fmt(percentile(pruned.batchMs, 99), 1)} ms`,
    });
    if (!ONLY.has('queries')) return rows;
    say('list and overview queries…');
    for (const d of [empty, full]) {
      await fresh(d.db, 'drain');
      await fresh(d.db, 'latency');
    }
    const emptyQueries = queries(empty);
    const fullQueries = queries(full);
    for (let i = 0; i < emptyQueries.length; i++) {
      const [name, runEmpty] = emptyQueries[i] ?? ['', () => Promise.resolve()];
      const runFull = fullQueries[i]?.[1] ?? (() => Promise.resolve());
      const e = await queryMs(runEmpty);
      const h = await queryMs(runFull);
      rows.push({
        group: 'history',
        name,
        value: `${fmt(h, 2)} ms`,
        note: `empty ${fmt(e, 2)} ms; ${(h / e).toFixed(2)}×; median of ${QUERY_RUNS}`,
      });
    }
    return rows;
  } finally {
    await empty.db.close();
    await full.db.close();
  }
};
