/**
 * The dashboard's charts (GET /v1/history) at the source document's rate: BENCH_CHARTS_HOURS hours
 * (default 3, the overview's window) of jobs, attempts and occurrences at 500 a second up to now,
 * written by generate_series (bench/history.ts's loadHistory), then each of the history's three
 * reads over that window counted from the rows, as without a maintenance role, and from the
 * per-minute rollups the role keeps (store/history-rollup.ts), against the same read on an empty
 * database. The rollups are made as an upgraded database's are: rolled back from the migration's
 * minute over the loaded hours, ten minutes a statement, and the roll statements' times are
 * reported too.
 */
import { performance } from 'node:perf_hooks';
import {
  historyBacklogPerMinute,
  historyLagPerMinute,
  historyThroughputPerMinute,
  type HistoryRange,
} from '../src/store/history.ts';
import { historyRollJobs, historyRollLag, type RollDirection } from '../src/store/history-rollup.ts';
import { jobSliceAttach } from '../src/store/job-slices.ts';
import { occurrenceSliceAttach, occurrenceSliceList } from '../src/store/occurrence-slices.ts';
import { withTransaction, type Pool } from '../src/store/pool.ts';
import { benchDatabase, type BenchDatabase } from './db.ts';
import { loadHistory } from './history.ts';
import { median, type Bench, type BenchRow } from './table.ts';

const HOURS = Number(process.env.BENCH_CHARTS_HOURS ?? 3);
const RATE = 500;
const DAY_MS = 86_400_000;
/** Reads of each kind; the rows' ones take seconds each at this rate, so they run fewer times. */
const RUNS = 9;
const LIVE_RUNS = 3;

/** One slice of succeeded jobs for the whole load, and the ledger's day slices around it. */
async function slices(db: BenchDatabase, n: number): Promise<void> {
  await withTransaction(db.pool, async (tx) => {
    await tx.query('ALTER TABLE jobs_done DETACH PARTITION jobs_done_0');
    await tx.query('DROP TABLE jobs_done_0');
    await jobSliceAttach(tx, { name: 'jobs_done_0', from: null, to: n + 1_000_000 });
    for (const s of await occurrenceSliceList(tx)) {
      await tx.query(`ALTER TABLE occurrences DETACH PARTITION "${s.name}"`);
      await tx.query(`DROP TABLE "${s.name}"`);
    }
    const now = Date.now();
    const first = Math.floor((now - HOURS * 3_600_000) / DAY_MS);
    for (let d = first; d <= Math.floor(now / DAY_MS) + 2; d++) {
      await occurrenceSliceAttach(tx, {
        name: `occurrences_d${d}`,
        from: d === first ? null : new Date(d * DAY_MS),
        to: new Date((d + 1) * DAY_MS),
      });
    }
  });
}

/** Every roll of `direction` until none is left: each statement's ms and the minutes it covered. */
async function rollAll(pool: Pool, direction: RollDirection): Promise<{ ms: number; minutes: number }[]> {
  const out: { ms: number; minutes: number }[] = [];
  for (const roll of [historyRollJobs, historyRollLag]) {
    for (;;) {
      const t0 = performance.now();
      const r = await roll(pool, direction);
      if (r.to <= r.from) break;
      out.push({ ms: performance.now() - t0, minutes: (r.to.getTime() - r.from.getTime()) / 60_000 });
    }
  }
  return out;
}

type Read = [string, (pool: Pool, range: HistoryRange) => Promise<unknown>];
const READS: Read[] = [
  ['lateness per minute', (pool, range) => historyLagPerMinute(pool, range)],
  ['finished per minute', (pool, range) => historyThroughputPerMinute(pool, range)],
  ['backlog per minute', (pool, range) => historyBacklogPerMinute(pool, range)],
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

export const bench: Bench = async () => {
  const n = RATE * 3600 * HOURS;
  const empty = await benchDatabase();
  const db = await benchDatabase();
  const rows: BenchRow[] = [];
  try {
    // As an upgraded database's migration does when it finds history, here back to the load's start
    // rather than a day: the minutes before it are empty and would be most of the roll statements.
    await db.pool.query(
      `UPDATE history_rolled SET back_to = date_trunc('minute', now() - $1 * interval '1 hour')`,
      [HOURS],
    );
    await db.pool.query(
      `INSERT INTO schedules (tenant_id, name, spec, queue, kind, next_fire_at)
       SELECT 'default', 'history-' || g, '* * * * *', 'hist-' || (g % 20), 'report', NULL FROM generate_series(1, 1000) g`,
    );
    await slices(db, n);
    const loaded = await loadHistory(db, n, HOURS * 3_600_000, new Date());
    const range = (): HistoryRange => ({ from: new Date(Date.now() - HOURS * 3_600_000), to: new Date() });

    const live: number[] = [];
    await db.pool.query(`UPDATE history_rolled SET jobs_since = 'infinity', lag_since = 'infinity'`);
    for (const [, read] of READS) live.push(await readMs(db.pool, read, range(), LIVE_RUNS));
    await db.pool.query(`UPDATE history_rolled SET jobs_since = jobs_upto, lag_since = lag_upto`);

    const rolls = [...(await rollAll(db.pool, 'back')), ...(await rollAll(db.pool, 'forward'))];
    const perMinute = rolls.map((r) => r.ms / r.minutes);
    for (const [i, [name, read]] of READS.entries()) {
      const rolled = await readMs(db.pool, read, range(), RUNS);
      const none = await readMs(empty.pool, read, range(), RUNS);
      rows.push({
        group: 'charts',
        name: `GET /v1/history: ${name}, ${HOURS} h at ${RATE} jobs/s, rolled up ÷ empty database`,
        value: `${(rolled / none).toFixed(2)}×`,
        target: '≤ 1.2×',
        note: `${rolled.toFixed(1)} ms against ${none.toFixed(1)} ms (medians of ${RUNS}); counted from the rows: ${Math.round(live[i] ?? 0)} ms (median of ${LIVE_RUNS})`,
      });
    }
    rows.push({
      group: 'charts',
      name: `rolling a minute up at ${RATE} jobs/s`,
      value: `${median(perMinute).toFixed(0)} ms`,
      note: `median over ${rolls.length} statements of up to 10 minutes each (jobs, then lateness; slowest ${Math.max(...rolls.map((r) => r.ms)).toFixed(0)} ms); ${(n / loaded.seconds).toFixed(0)} jobs/s loaded`,
    });
  } finally {
    await db.close();
    await empty.close();
  }
  return rows;
};
