/**
 * Schedule time core: next-fire computations per second. The scheduler calls nextAfter once per
 * fired occurrence: a burst of 5,000 occurrences due in the same second must be materialised within
 * 250 ms including the database writes, and 30,000 schedules a minute sustained on two cores, so a
 * cached cron spec wants ≥ 500k calls/s in UTC and ≥ 200k/s in a DST zone.
 *
 * The `croner nextRun` rows time what nextAfter did before src/schedule/matcher.ts: croner's own
 * search for the next wall time (with `utcOffset: 0`, as cron.ts used it), so one run shows both.
 */
import { Cron } from 'croner';
import { compileSchedule } from '../src/schedule/index.ts';
import { median, type Bench, type BenchRow } from './table.ts';

const ROUNDS = 7;
/** Each round runs batches of calls until it has used this much CPU time. */
const ROUND_CPU_MS = 50;
const BATCH = 200;

/**
 * Median rate over ROUNDS rounds of calls to `fn(i)` (i counts up across rounds), per second of
 * this process's CPU time: the machine is shared, and wall time measured mostly the other
 * processes (the same code read 113k/s and 2.7M/s ten minutes apart at a load average of 11–22).
 */
function rate(fn: (i: number) => void): number {
  const rates: number[] = [];
  let i = 0;
  for (let r = 0; r < ROUNDS; r++) {
    const started = process.cpuUsage();
    let calls = 0;
    let usedMs = 0;
    while (usedMs < ROUND_CPU_MS) {
      for (let b = 0; b < BATCH; b++) fn(i++);
      calls += BATCH;
      const used = process.cpuUsage(started);
      usedMs = (used.user + used.system) / 1000;
    }
    rates.push(calls / (usedMs / 1000));
  }
  return median(rates);
}

const fmt = (perSecond: number): string => `${Math.round(perSecond).toLocaleString('en-US')} /s`;

const START = Date.UTC(2026, 0, 1);
/**
 * Chains wrap back to START after a year. The scheduler asks about the present; walking centuries
 * forward (140,000 weekday fires is ~540 years) would mostly time the zone's offset table, built
 * once per zone and year at ~4 ms each, and not nextAfter.
 */
const HORIZON = Date.UTC(2027, 0, 1);

/** Rate of chained calls: each asks for the fire after the previous one, as the scheduler does. */
function chained(next: (t: Date) => Date | null): number {
  let t = new Date(START);
  const step = (): void => {
    const n = next(t);
    t = n === null || n.getTime() >= HORIZON ? new Date(START) : n;
  };
  // Warm: JIT, and the zone's offset tables for the years walked.
  for (let i = 0; i < 5000; i++) step();
  t = new Date(START);
  return rate(step);
}

const cached = (spec: string, timeZone: string): number => {
  const s = compileSchedule({ spec, timeZone });
  return chained((t) => s.nextAfter(t));
};

const viaCroner = (spec: string): number => {
  const cron = new Cron(spec, { utcOffset: 0, mode: '5-or-6-parts', domAndDow: false });
  return chained((t) => cron.nextRun(t));
};

const SPECS = ['*/5 * * * *', '30 9 * * 1-5', '0 0 L * *', '*/10 * * * * *'];
const NY = 'America/New_York';

export const bench: Bench = () => {
  const rows: BenchRow[] = [];
  for (const spec of SPECS) {
    rows.push({
      group: 'schedule',
      name: `nextAfter, cached cron, UTC (${spec})`,
      value: fmt(cached(spec, 'UTC')),
      target: '≥ 500,000/s',
    });
    rows.push({
      group: 'schedule',
      name: `nextAfter, cached cron, ${NY} (${spec})`,
      value: fmt(cached(spec, NY)),
      target: '≥ 200,000/s',
      note: spec === '30 9 * * 1-5' ? 'crosses DST twice a year' : undefined,
    });
    rows.push({
      group: 'schedule',
      name: `croner nextRun, UTC wall time (${spec})`,
      value: fmt(viaCroner(spec)),
      note: 'what nextAfter used before matcher.ts',
    });
  }
  const anchor = new Date(START);
  rows.push({
    group: 'schedule',
    name: 'nextAfter, interval (every 90s)',
    value: fmt(
      ((s) => rate((i) => s.nextAfter(new Date(START + i * 1000))))(
        compileSchedule({ spec: 'every 90s', anchor }),
      ),
    ),
  });
  rows.push({
    group: 'schedule',
    name: 'compile + nextAfter, new spec, America/New_York',
    value: fmt(
      rate((i) =>
        compileSchedule({ spec: `${i % 60} ${i % 24} * * 1-5`, timeZone: NY }).nextAfter(
          new Date(START + i * 60_000),
        ),
      ),
    ),
    target: '≥ 500/s',
    note: 'no cache: parse, validate, describe',
  });
  return Promise.resolve(rows);
};
