/**
 * The scheduler end to end against PostgreSQL, one leader in this process:
 *
 * - burst: 5,000 one-off schedules due at the same instant; time from the fire time to the last
 *   occurrence written, and the drain itself (first to last write). Target ≤ 250 ms.
 * - steady: 30,000 schedules firing every minute (intervals anchored across the minute, ~500/s, the
 *   source document's scale) for three minutes; lag p50/p99 from the ledger (materialised_at −
 *   fire_at) and the leader's CPU share. Target p99 ≤ 1 s. BENCH_STEADY_MINUTES changes the length.
 */
import { performance } from 'node:perf_hooks';
import { pino } from 'pino';
import { Scheduler } from '../src/scheduler/scheduler.ts';
import type { Pool } from '../src/store/pool.ts';
import { benchDatabase } from './db.ts';
import type { Bench, BenchRow } from './table.ts';

const log = pino({ level: process.env.TIDEMARK_LOG_LEVEL ?? 'warn' }, pino.destination(2));

/** Scheduler settings to compare back to back (unset: the defaults). */
function benchOptions(): { batchSize?: number; writers?: number; planAheadMs?: number } {
  const n = (name: string): number | undefined =>
    process.env[name] === undefined ? undefined : Number(process.env[name]);
  return {
    batchSize: n('BENCH_BATCH_SIZE'),
    writers: n('BENCH_WRITERS'),
    planAheadMs: n('BENCH_PLAN_AHEAD_MS'),
  };
}

/** A leader in this process, resolved once it has loaded the schedules and leads. */
async function leader(pool: Pool, tickMs?: number): Promise<Scheduler> {
  let led: () => void = () => undefined;
  const leading = new Promise<void>((done) => (led = done));
  const scheduler = new Scheduler({ pool, log, tickMs, onLead: () => led(), ...benchOptions() });
  await scheduler.start();
  await leading;
  return scheduler;
}

async function lagStats(
  pool: Pool,
  since: Date,
): Promise<{ n: number; p50: number; p99: number; max: number }> {
  const { rows } = await pool.query<{ n: number; p50: number; p99: number; max: number }>(
    `SELECT count(*)::int AS n,
            (percentile_cont(0.5) WITHIN GROUP (ORDER BY lag) * 1000)::float8 AS p50,
            (percentile_cont(0.99) WITHIN GROUP (ORDER BY lag) * 1000)::float8 AS p99,
            (max(lag) * 1000)::float8 AS max
       FROM (SELECT extract(epoch FROM materialised_at - fire_at) AS lag FROM occurrences WHERE fire_at >= $1) l`,
    [since],
  );
  return rows[0] ?? { n: 0, p50: NaN, p99: NaN, max: NaN };
}

async function burst(): Promise<BenchRow[]> {
  const db = await benchDatabase();
  const scheduler = await leader(db.pool, 100);
  try {
    const fireAt = new Date(Math.ceil((Date.now() + 3000) / 1000) * 1000);
    await db.pool.query(
      `INSERT INTO schedules (tenant_id, name, spec, queue, kind, next_fire_at)
       SELECT 'default', 'burst' || g, 'at ' || $1, 'q', 'k', $2 FROM generate_series(1, 5000) g`,
      [fireAt.toISOString(), fireAt],
    );
    for (;;) {
      const { rows } = await db.pool.query<{ n: number }>('SELECT count(*)::int AS n FROM occurrences');
      if (rows[0]?.n === 5000) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const { rows } = await db.pool.query<{ total: number; drain: number }>(
      `SELECT (extract(epoch FROM max(materialised_at) - $1::timestamptz) * 1000)::float8 AS total,
              (extract(epoch FROM max(materialised_at) - min(materialised_at)) * 1000)::float8 AS drain
         FROM occurrences`,
      [fireAt],
    );
    const lag = await lagStats(db.pool, fireAt);
    const { plannedAhead } = scheduler.metrics.snapshot();
    const r = rows[0]!;
    return [
      {
        group: 'scheduler',
        name: 'burst 5,000 due at one instant: fire time → all written',
        value: `${r.total.toFixed(0)} ms`,
        target: '≤ 250 ms',
        note: `drain (first → last write) ${r.drain.toFixed(0)} ms; tick 100 ms; lag p50 ${lag.p50.toFixed(0)} ms, p99 ${lag.p99.toFixed(0)} ms; ${plannedAhead} planned ahead`,
      },
    ];
  } finally {
    await scheduler.stop();
    await db.close();
  }
}

async function steady(): Promise<BenchRow[]> {
  const minutes = Number(process.env.BENCH_STEADY_MINUTES ?? 3);
  if (minutes === 0) return []; // BENCH_STEADY_MINUTES=0: the burst row only
  const db = await benchDatabase();
  // Anchors spread over a minute so 30,000 once-a-minute schedules fire ~500 per second.
  await db.pool.query(
    `INSERT INTO schedules (tenant_id, name, spec, queue, kind, anchor_at, next_fire_at)
     SELECT 'default', 'steady' || g, 'every 60s', 'q', 'k', a, a + interval '60 seconds' *
              ceil(extract(epoch FROM (clock_timestamp() + interval '5 seconds' - a)) / 60)
       FROM (SELECT g, to_timestamp(floor(extract(epoch FROM clock_timestamp())) - 60 + (g % 60000) / 1000.0) AS a
               FROM generate_series(1, 30000) g) s`,
  );
  await db.pool.query('VACUUM ANALYZE schedules');
  const scheduler = await leader(db.pool);
  try {
    const since = new Date(Date.now() + 6000);
    await new Promise((r) => setTimeout(r, 6000));
    const cpu0 = process.cpuUsage();
    const t0 = performance.now();
    await new Promise((r) => setTimeout(r, minutes * 60_000));
    const cpu = process.cpuUsage(cpu0);
    const wall = performance.now() - t0;
    const lag = await lagStats(db.pool, since);
    const share = ((cpu.user + cpu.system) / 1000 / wall) * 100;
    const m = scheduler.metrics.snapshot();
    return [
      {
        group: 'scheduler',
        name: `steady 30,000 schedules × every minute, ${minutes} min: lag`,
        value: `p50 ${lag.p50.toFixed(0)} ms, p99 ${lag.p99.toFixed(0)} ms`,
        target: 'p99 ≤ 1 s',
        note: `${lag.n.toLocaleString('en')} occurrences, max ${lag.max.toFixed(0)} ms; tick 1 s (lag includes up to one tick)`,
      },
      {
        group: 'scheduler',
        name: `steady 30,000 schedules × every minute, ${minutes} min: leader CPU`,
        value: `${share.toFixed(1)} % of one core`,
        note: `tick p50 ${m.tickMs.p50?.toFixed(1)} ms, p99 ${m.tickMs.p99?.toFixed(1)} ms`,
      },
    ];
  } finally {
    await scheduler.stop();
    await db.close();
  }
}

export const bench: Bench = async () => [...(await burst()), ...(await steady())];
