/**
 * Schedule time core: next-fire computations per second. The scheduler calls nextAfter once per
 * fire for every schedule; the load is 30,000 schedules a minute (500/s), so anything in
 * the tens of thousands per second leaves the core far from the critical path.
 */
import { compileSchedule } from '../src/schedule/index.ts';
import { median, type Bench, type BenchRow } from './table.ts';

const ROUNDS = 7;

/** Median rate over ROUNDS rounds of `n` calls to `fn(i)`. */
function rate(n: number, fn: (i: number) => void): number {
  const rates: number[] = [];
  for (let r = 0; r < ROUNDS; r++) {
    const started = performance.now();
    for (let i = 0; i < n; i++) fn(i);
    rates.push(n / ((performance.now() - started) / 1000));
  }
  return median(rates);
}

const fmt = (perSecond: number): string => `${Math.round(perSecond).toLocaleString('en-US')} /s`;

export const bench: Bench = () => {
  const start = Date.UTC(2026, 0, 1);
  const rows: BenchRow[] = [];
  const chained = (spec: string, timeZone: string): number => {
    const s = compileSchedule({ spec, timeZone });
    let t = new Date(start);
    // Warm: JIT, and the zone's offset table for the years walked.
    for (let i = 0; i < 2000; i++) t = s.nextAfter(t) ?? new Date(start);
    t = new Date(start);
    return rate(20_000, () => {
      t = s.nextAfter(t) ?? new Date(start);
    });
  };
  rows.push({
    group: 'schedule',
    name: 'nextAfter, cached cron, UTC (*/5 * * * *)',
    value: fmt(chained('*/5 * * * *', 'UTC')),
    target: '≥ 500/s (30k schedules/min)',
  });
  rows.push({
    group: 'schedule',
    name: 'nextAfter, cached cron, UTC (30 9 * * 1-5)',
    value: fmt(chained('30 9 * * 1-5', 'UTC')),
    target: '≥ 500/s',
  });
  rows.push({
    group: 'schedule',
    name: 'nextAfter, cached cron, America/New_York (*/5 * * * *)',
    value: fmt(chained('*/5 * * * *', 'America/New_York')),
    target: '≥ 500/s',
  });
  rows.push({
    group: 'schedule',
    name: 'nextAfter, cached cron, America/New_York (30 9 * * 1-5)',
    value: fmt(chained('30 9 * * 1-5', 'America/New_York')),
    target: '≥ 500/s',
    note: 'crosses DST twice a year',
  });
  const anchor = new Date(start);
  rows.push({
    group: 'schedule',
    name: 'nextAfter, interval (every 90s)',
    value: fmt(
      ((s) => rate(200_000, (i) => s.nextAfter(new Date(start + i * 1000))))(
        compileSchedule({ spec: 'every 90s', anchor }),
      ),
    ),
  });
  rows.push({
    group: 'schedule',
    name: 'compile + nextAfter, new spec, America/New_York',
    value: fmt(
      rate(5_000, (i) =>
        compileSchedule({ spec: `${i % 60} ${i % 24} * * 1-5`, timeZone: 'America/New_York' }).nextAfter(
          new Date(start + i * 60_000),
        ),
      ),
    ),
    target: '≥ 500/s',
    note: 'no cache: parse, validate, describe',
  });
  return Promise.resolve(rows);
};
