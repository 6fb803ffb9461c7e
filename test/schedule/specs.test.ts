/** Cron field forms, intervals, one-offs, phrases and spec errors, as examples. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import {
  compileSchedule,
  SpecError,
  SUPPORTED_PHRASES,
  type CompileInput,
} from '../../src/schedule/index.ts';

function next(input: CompileInput | string, from: string, count: number): string[] {
  const s = compileSchedule(typeof input === 'string' ? { spec: input } : input);
  const out: string[] = [];
  let t: Date | null = new Date(from);
  while (out.length < count && (t = s.nextAfter(t)) !== null) out.push(t.toISOString().replace('.000Z', 'Z'));
  return out;
}

test('L, LW, W, # and nL', () => {
  assert.deepEqual(next('0 0 L * *', '2028-01-15T00:00:00Z', 3), [
    '2028-01-31T00:00:00Z',
    '2028-02-29T00:00:00Z', // leap year
    '2028-03-31T00:00:00Z',
  ]);
  assert.deepEqual(next('0 0 LW * *', '2026-05-01T00:00:00Z', 2), [
    '2026-05-29T00:00:00Z',
    '2026-06-30T00:00:00Z',
  ]);
  // 2026-08-01 is a Saturday: 1W moves forward to Monday the 3rd, never back into July.
  assert.deepEqual(next('0 0 1W * *', '2026-07-15T00:00:00Z', 1), ['2026-08-03T00:00:00Z']);
  // 2026-02-15 is a Sunday: 15W is Monday the 16th.
  assert.deepEqual(next('0 0 15W * *', '2026-02-01T00:00:00Z', 1), ['2026-02-16T00:00:00Z']);
  assert.deepEqual(next('0 0 * * 5#2', '2026-01-01T00:00:00Z', 2), [
    '2026-01-09T00:00:00Z',
    '2026-02-13T00:00:00Z',
  ]);
  assert.deepEqual(next('0 0 * * FRIL', '2026-01-01T00:00:00Z', 1), ['2026-01-30T00:00:00Z']);
  assert.deepEqual(next('0 0 * * 1#5', '2026-01-01T00:00:00Z', 1), ['2026-03-30T00:00:00Z']);
});

test('leap days and year rollover', () => {
  assert.deepEqual(next('0 12 29 2 *', '2025-01-01T00:00:00Z', 2), [
    '2028-02-29T12:00:00Z',
    '2032-02-29T12:00:00Z',
  ]);
  assert.deepEqual(next('59 23 31 12 *', '2026-12-31T23:59:00Z', 1), ['2027-12-31T23:59:00Z']);
  assert.deepEqual(next('0 0 1 1 *', '2026-12-31T23:59:59.999Z', 1), ['2027-01-01T00:00:00Z']);
  assert.deepEqual(next({ spec: '@yearly', timeZone: 'Pacific/Auckland' }, '2026-06-01T00:00:00Z', 1), [
    '2026-12-31T11:00:00Z',
  ]);
});

test('names, ranges, steps, seconds, nicknames and the day-of-month OR day-of-week rule', () => {
  assert.deepEqual(next('0 9 * JAN-FEB MON-FRI/2', '2026-01-01T00:00:00Z', 3), [
    '2026-01-02T09:00:00Z',
    '2026-01-05T09:00:00Z',
    '2026-01-07T09:00:00Z',
  ]);
  assert.deepEqual(next('*/20 * * * * *', '2026-01-01T00:00:00Z', 3), [
    '2026-01-01T00:00:20Z',
    '2026-01-01T00:00:40Z',
    '2026-01-01T00:01:00Z',
  ]);
  assert.deepEqual(next('@hourly', '2026-01-01T00:00:00Z', 1), ['2026-01-01T01:00:00Z']);
  // Both day fields restricted: either one matching is enough (Vixie cron). 2026-03-13 is a Friday.
  assert.deepEqual(next('0 0 13 * 5', '2026-03-01T00:00:00Z', 3), [
    '2026-03-06T00:00:00Z',
    '2026-03-13T00:00:00Z',
    '2026-03-20T00:00:00Z',
  ]);
  assert.equal(compileSchedule({ spec: '0 9 * * MON-SUN' }).canonical, '0 9 * * MON-SUN');
  assert.deepEqual(next('0 9 * * MON-SUN', '2026-01-03T10:00:00Z', 1), ['2026-01-04T09:00:00Z']);
  // SUN-SUN is Sunday, not the whole week (found by the oracle property: it fired on a Saturday).
  assert.deepEqual(next('0 9 * * SUN-SUN', '2026-01-01T10:00:00Z', 2), [
    '2026-01-04T09:00:00Z',
    '2026-01-11T09:00:00Z',
  ]);
  assert.deepEqual(next('0 9 * * SUN-SUN/1,WED', '2026-01-01T10:00:00Z', 2), [
    '2026-01-04T09:00:00Z',
    '2026-01-07T09:00:00Z',
  ]);
});

test('nextAfter is strictly after, also with milliseconds', () => {
  assert.deepEqual(next('0 9 * * *', '2026-01-01T09:00:00Z', 1), ['2026-01-02T09:00:00Z']);
  assert.deepEqual(next('0 9 * * *', '2026-01-01T08:59:59.999Z', 1), ['2026-01-01T09:00:00Z']);
  assert.deepEqual(next('0 9 * * *', '2026-01-01T09:00:00.001Z', 1), ['2026-01-02T09:00:00Z']);
});

test('intervals are anchored and never drift', () => {
  const anchor = new Date('2026-01-01T00:00:10Z');
  assert.deepEqual(next({ spec: 'every 90s', anchor }, '2025-12-31T00:00:00Z', 3), [
    '2026-01-01T00:00:10Z',
    '2026-01-01T00:01:40Z',
    '2026-01-01T00:03:10Z',
  ]);
  // Asking late (a slow run) does not move later fire times.
  assert.deepEqual(next({ spec: 'every 90s', anchor }, '2026-01-01T00:02:59.999Z', 1), [
    '2026-01-01T00:03:10Z',
  ]);
  const s = compileSchedule({ spec: 'every 15 minutes', anchor });
  assert.equal(s.kind, 'cron');
  const i = compileSchedule({ spec: 'every 900s', anchor });
  assert.equal(i.kind, 'interval');
  assert.equal(i.canonical, 'every 15m');
  assert.equal(
    compileSchedule({ spec: i.canonical, anchor }).nextAfter(anchor)?.getTime(),
    anchor.getTime() + 900_000,
  );
  assert.equal(compileSchedule({ spec: 'every 90 seconds' }).canonical, 'every 90s');
  assert.equal(compileSchedule({ spec: 'every 5 hours' }).canonical, 'every 5h');
  assert.equal(i.description, 'every 15 minutes, counted from 2026-01-01T00:00:10Z');
  // DST does not touch elapsed-time intervals.
  assert.deepEqual(next({ spec: 'every 1h', timeZone: 'America/New_York' }, '2026-03-08T05:30:00Z', 3), [
    '2026-03-08T06:00:00Z',
    '2026-03-08T07:00:00Z',
    '2026-03-08T08:00:00Z',
  ]);
});

test('one-offs', () => {
  const s = compileSchedule({ spec: 'at 2026-12-24T18:00:00+01:00', timeZone: 'Europe/Paris' });
  assert.equal(s.kind, 'once');
  assert.equal(s.canonical, 'at 2026-12-24T17:00:00Z');
  assert.equal(s.description, 'once, at 2026-12-24T17:00:00Z (2026-12-24T18:00:00+01:00 Europe/Paris)');
  assert.deepEqual(next('at 2026-12-24T18:00:00Z', '2026-01-01T00:00:00Z', 3), ['2026-12-24T18:00:00Z']);
  assert.equal(s.nextAfter(new Date('2026-12-24T17:00:00Z')), null);
  assert.equal(
    compileSchedule({ spec: 'at 2026-07-01 09:00', timeZone: 'Asia/Kolkata' }).canonical,
    'at 2026-07-01T03:30:00Z',
  );
});

const PHRASES: [phrase: string, canonical: string][] = [
  ['every 15 minutes', '*/15 * * * *'],
  ['every 30 seconds', '*/30 * * * * *'],
  ['every hour', '0 * * * *'],
  ['every hour at :15', '15 * * * *'],
  ['every 2 hours', '0 */2 * * *'],
  ['every day at 9am', '0 9 * * *'],
  ['every day at midnight', '0 0 * * *'],
  ['every weekday at 9:30', '30 9 * * 1-5'],
  ['every monday at 14:30', '30 14 * * 1'],
  ['every monday and thursday at 6pm', '0 18 * * 1,4'],
  ['every weekend at 10am', '0 10 * * 0,6'],
  ['on the 1st of every month at 06:00', '0 6 1 * *'],
  ['on the last day of every month at 23:00', '0 23 L * *'],
  ['Every Friday, Monday and Wednesday at 12:15 PM', '15 12 * * 1,3,5'],
  ['on the 1st and 15th of every month at noon', '0 12 1,15 * *'],
  ['on the second tuesday of every month at 7:05am', '5 7 * * 2#2'],
  ['on the last weekday of every month at 17:00', '0 17 LW * *'],
  ['daily at 12am', '0 0 * * *'],
  ['every minute', '* * * * *'],
];

test('every supported phrase compiles to the expected cron expression and describes itself', () => {
  for (const [phrase, canonical] of PHRASES) {
    const s = compileSchedule({ spec: phrase, timeZone: 'Europe/Berlin' });
    assert.equal(s.canonical, canonical, phrase);
    assert.match(s.description, /\(Europe\/Berlin\)$/, phrase);
  }
  assert.equal(
    compileSchedule({ spec: 'every weekday at 9:30' }).description,
    'At 09:30, Monday through Friday (UTC)',
  );
});

test('bad specs throw SpecError naming the field and the reason', () => {
  const cases: [spec: string, field: string, message: RegExp][] = [
    ['61 * * * *', 'minute', /^minute field: 61 is out of range 0-59$/],
    ['* 24 * * *', 'hour', /^hour field: 24 is out of range 0-23$/],
    ['* * 32 * *', 'day-of-month', /32 is out of range 1-31/],
    ['* * * 13 *', 'month', /13 is out of range 1-12/],
    ['* * * * 8', 'day-of-week', /8 is out of range 0-7/],
    ['* * * FOO *', 'month', /'FOO' is not a name/],
    ['*/0 * * * *', 'minute', /step 0 .* out of range 1-60/],
    ['5-2 * * * *', 'minute', /runs backwards/],
    ['60 * * * * *', 'second', /60 is out of range 0-59/],
    ['* * * * 1#6', 'day-of-week', /#6/],
    ['* * * *', 'spec', /5 fields/],
    ['0 0 30 2 *', 'spec', /never matches/],
    ['@fortnightly', 'spec', /unknown nickname/],
    ['every fortnight', 'spec', /Supported phrases: every second/],
    ['every day at 9', 'spec', /'9' is not a time/],
    ['every day at 13pm', 'spec', /out of range 1-12/],
    ['every funday at 9am', 'spec', /'funday' is not a day of the week/],
    ['at 2026-02-30T00:00:00Z', 'spec', /not a valid calendar date-time/],
    ['at tomorrow', 'spec', /not an ISO 8601/],
    ['every 0s', 'spec', /at least 1/],
    ['every 5 hours at :15', 'spec', /does not divide the day/],
  ];
  for (const [spec, field, message] of cases) {
    assert.throws(
      () => compileSchedule({ spec }),
      (e: unknown) => e instanceof SpecError && e.field === field && message.test(e.message),
      spec,
    );
  }
  assert.throws(
    () => compileSchedule({ spec: '0 9 * * *', timeZone: 'Mars/Olympus' }),
    (e: unknown) => e instanceof SpecError && e.field === 'timeZone' && /Mars\/Olympus/.test(e.message),
  );
  assert.ok(SUPPORTED_PHRASES.length > 5);
});

test('zone aliases resolve to their canonical name', () => {
  assert.equal(compileSchedule({ spec: '0 9 * * *', timeZone: 'utc' }).timeZone, 'UTC');
  assert.equal(
    compileSchedule({ spec: '0 9 * * *', timeZone: 'america/new_york' }).timeZone,
    'America/New_York',
  );
});

test('a valid cron form that cronstrue cannot word still compiles, with a plain description', () => {
  for (const spec of ['0 0 15W,L * *', '0 12 * * 5#L']) {
    const compiled = compileSchedule({ spec });
    assert.equal(compiled.description, `At times matching the cron expression "${compiled.canonical}" (UTC)`);
    assert.ok(compiled.nextAfter(new Date('2026-01-01T00:00:00Z')) instanceof Date);
  }
});

test('a zone keeps the name it was given: Asia/Kolkata is not described as ICU’s Asia/Calcutta', () => {
  const cron = compileSchedule({ spec: '0 9 * * *', timeZone: 'Asia/Kolkata' });
  assert.equal(cron.timeZone, 'Asia/Kolkata');
  assert.match(cron.description, /\(Asia\/Kolkata\)$/);
  assert.equal(compileSchedule({ spec: 'every 5m', timeZone: 'Asia/Kolkata' }).timeZone, 'Asia/Kolkata');
  // The same instant either way: only the name differs.
  assert.deepEqual(
    next({ spec: '0 9 * * *', timeZone: 'Asia/Calcutta' }, '2026-03-01T00:00:00Z', 1),
    next({ spec: '0 9 * * *', timeZone: 'Asia/Kolkata' }, '2026-03-01T00:00:00Z', 1),
  );
});
