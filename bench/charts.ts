/**
 * The dashboard's charts (GET /v1/history) at the source document's rate: BENCH_CHARTS_HOURS hours
 * (default 3, the overview's window) of jobs, attempts and occurrences at 500 a second up to now,
 * written by generate_series (bench/history.ts's loadHistory), then each of the history's three
 * reads, and GET /v1/lateness's, over that window from the per-minute rollups the maintenance role keeps
 * (store/history-rollup.ts) and, for the minutes after its last roll, the rows. Beside it: the same
 * history counted from the rows, as without a maintenance role, and the same read of a database
 * that holds only the newest BASE_MINUTES at that rate, ending at the same instant (a read of the
 * rollups grows with the window's minutes and the queues and tenants in each, not with the jobs).
 * The rollups are made as an upgraded database's are, rolled back from the migration's minute over
 * the loaded hours ten minutes a statement, and the roll statements' times are reported too.
 */
import { performance } from 'node:perf_hooks';
import {
  historyBacklogPerMinute,
  historyLagPerMinute,
  historyThroughputPerMinute,
  type HistoryRange,
} from '../src/store/history.ts';
import { historyRollJobs, historyRollLag, type RollDirection } from '../src/store/history-rollup.ts';
import { occurrenceLatenessPerMinute } from '../src/store/occurrence-rollup.ts';
import { jobSliceAttach } from '../src/store/job-slices.ts';
import { withTransaction, type Pool } from '../src/store/pool.ts';
import { benchDatabase, type BenchDatabase } from './db.ts';
import { loadHistory, sliceLedger } from './history.ts';
import { median, type Bench, type BenchRow } from './table.ts';

const HOURS = Number(process.env.BENCH_CHARTS_HOURS ?? 3);
const RATE = 500;
/** The short history's minutes: a tenth of an hour, so a read of it returns few minutes. */
const BASE_MINUTES = 10;
/** Reads of each kind; the rows' ones take seconds each at this rate, so they run fewer times. */
const RUNS = 9;
const LIVE_RUNS = 3;

/** One slice of succeeded jobs for the whole load, and the ledger's day slices around it. */
async function slices(db: BenchDatabase, n: number, hours: number): Promise<void> {
  await withTransaction(db.pool, async (tx) => {
    await tx.query('ALTER TABLE jobs_done DETACH PARTITION jobs_done_0');
    await tx.query('DROP TABLE jobs_done_0');
    await jobSliceAttach(tx, { name: 'jobs_done_0', from: null, to: n + 1_000_000 });
  });
  await sliceLedger(db, new Date(Date.now() - hours * 3_600_000), new Date());
}

interface Roll {
  kind: 'jobs' | 'lateness';
  ms: number;
  minutes: number;
}

/** Every roll of `direction` until none is left: each statement's ms and the minutes it covered. */
async function rollAll(pool: Pool, direction: RollDirection): Promise<Roll[]> {
  const out: Roll[] = [];
  for (const [kind, roll] of [
    ['jobs', historyRollJobs],
    ['lateness', historyRollLag],
  ] as const) {
    for (;;) {
      const t0 = performance.now();
      const r = await roll(pool, direction);
      if (r.to <= r.from) break;
      out.push({ kind, ms: performance.now() - t0, minutes: (r.to.getTime() - r.from.getTime()) / 60_000 });
    }
  }
  return out;
}

type Read = [string, (pool: Pool, range: HistoryRange) => Promise<unknown>];
const READS: Read[] = [
  ['GET /v1/history: lateness per minute', (pool, range) => historyLagPerMinute(pool, range)],
  ['GET /v1/history: finished per minute', (pool, range) => historyThroughputPerMinute(pool, range)],
  ['GET /v1/history: backlog per minute', (pool, range) => historyBacklogPerMinute(pool, range)],
  [
    'GET /v1/lateness: occurrences per minute',
    (pool, range) => occurrenceLatenessPerMinute(pool, { ...range, limit: 1_440 }),
  ],
];

async function readMs(pool: Pool, read: Read[1], range: HistoryRange, runs: number): Promise<number> {
  await read(pool, range);
  const ms: number[] = [];
  for (let i = 0; i < runs; i++) {
    const t0 = performance.now();
    await read(pool, range);
    ms.push(performance.now() - t0);
  }
  return median(ms);
}

/**
 * A database with `hours` of history at RATE up to now, rolled up as an upgraded database's would be:
 * its migration found history, so its rollups go back, here over the charts' window (HOURS) rather
 * than a day, the minutes before it being empty. Returns the rolls.
 */
async function loaded(
  hours: number,
  newest: Date,
): Promise<{ db: BenchDatabase; rolls: Roll[]; jobsS: number }> {
  const db = await benchDatabase();
  const n = Math.round(RATE * 3600 * hours);
  await db.pool.query(
    `UPDATE history_rolled SET back_to = date_trunc('minute', now() - $1 * interval '1 hour' - interval '10 minutes')`,
    [HOURS],
  );
  await db.pool.query(
    `INSERT INTO schedules (tenant_id, name, spec, queue, kind, next_fire_at)
     SELECT 'default', 'history-' || g, '* * * * *', 'hist-' || (g % 20), 'report', NULL FROM generate_series(1, 1000) g`,
  );
  await slices(db, n, hours);
  const load = await loadHistory(db, n, hours * 3_600_000, newest);
  const rolls = [...(await rollAll(db.pool, 'back')), ...(await rollAll(db.pool, 'forward'))];
  return { db, rolls, jobsS: n / load.seconds };
}

export const bench: Bench = async () => {
  // Both histories end at the same instant, and both are rolled up to the last settled minute before
  // each read, as a role running every minute keeps them: what either reads from the rows is the same.
  const newest = new Date();
  const full = await loaded(HOURS, newest);
  const base = await loaded(BASE_MINUTES / 60, newest);
  const rows: BenchRow[] = [];
  const range = (): HistoryRange => ({ from: new Date(Date.now() - HOURS * 3_600_000), to: new Date() });
  try {
    const rolled: number[][] = [];
    for (const [, read] of READS) {
      // Alternately, as the history bench's API rows: both under the same load.
      const pair: number[] = [];
      for (const d of [full, base]) {
        await rollAll(d.db.pool, 'forward');
        pair.push(await readMs(d.db.pool, read, range(), RUNS));
      }
      rolled.push(pair);
    }
    const live: number[] = [];
    await full.db.pool.query(`UPDATE history_rolled SET jobs_since = 'infinity', lag_since = 'infinity'`);
    for (const [, read] of READS) live.push(await readMs(full.db.pool, read, range(), LIVE_RUNS));
    for (const [i, [name]] of READS.entries()) {
      const [history = Number.NaN, short = Number.NaN] = rolled[i] ?? [];
      rows.push({
        group: 'charts',
        name: `${name}, ${HOURS} h at ${RATE} jobs/s, from the rollups`,
        value: `${history.toFixed(1)} ms`,
        note: `median of ${RUNS}; counted from the rows, as without a maintenance role: ${Math.round(live[i] ?? 0)} ms (median of ${LIVE_RUNS}); ${BASE_MINUTES} min at that rate: ${short.toFixed(1)} ms`,
      });
    }
    for (const kind of ['jobs', 'lateness'] as const) {
      const mine = full.rolls.filter((r) => r.kind === kind);
      rows.push({
        group: 'charts',
        name: `rolling a minute of ${kind} up at ${RATE} jobs/s`,
        value: `${median(mine.map((r) => r.ms / r.minutes)).toFixed(0)} ms`,
        note: `median over ${mine.length} statements of up to 10 minutes each (slowest ${Math.max(...mine.map((r) => r.ms)).toFixed(0)} ms); loaded at ${full.jobsS.toFixed(0)} jobs/s`,
      });
    }
  } finally {
    await full.db.close();
    await base.db.close();
  }
  return rows;
};
