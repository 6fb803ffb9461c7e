/** The DST rules of docs/time-rules.md, on real transition dates. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { compileSchedule, type CompileInput } from '../../src/schedule/index.ts';

function next(input: CompileInput, from: string, count: number): string[] {
  const s = compileSchedule(input);
  const out: string[] = [];
  let t: Date | null = new Date(from);
  while (out.length < count && (t = s.nextAfter(t)) !== null) out.push(t.toISOString().replace('.000Z', 'Z'));
  return out;
}

const NY = 'America/New_York';

test('spring-forward gap, fixed hour: 02:30 fires once at 03:00 EDT (shift)', () => {
  // 2026-03-08 02:00 EST jumps to 03:00 EDT (07:00Z).
  assert.deepEqual(next({ spec: '30 2 * * *', timeZone: NY }, '2026-03-07T00:00:00Z', 3), [
    '2026-03-07T07:30:00Z',
    '2026-03-08T07:00:00Z',
    '2026-03-09T06:30:00Z',
  ]);
});

test('spring-forward gap, fixed hour with minute steps: all of 02:xx collapse into one fire at 03:00', () => {
  assert.deepEqual(next({ spec: '*/20 2 * * *', timeZone: NY }, '2026-03-08T06:00:00Z', 2), [
    '2026-03-08T07:00:00Z',
    '2026-03-09T06:00:00Z',
  ]);
});

test('spring-forward gap, dstGap skip: that day has no run', () => {
  assert.deepEqual(next({ spec: '30 2 * * *', timeZone: NY, dstGap: 'skip' }, '2026-03-07T12:00:00Z', 1), [
    '2026-03-09T06:30:00Z',
  ]);
});

test('spring-forward gap, wildcard hour: the missing hour is skipped, elapsed time continues', () => {
  assert.deepEqual(next({ spec: '30 * * * *', timeZone: NY }, '2026-03-08T05:00:00Z', 3), [
    '2026-03-08T05:30:00Z', // 00:30 EST
    '2026-03-08T06:30:00Z', // 01:30 EST; 02:30 does not exist
    '2026-03-08T07:30:00Z', // 03:30 EDT
  ]);
  assert.deepEqual(next({ spec: '30 * * * *', timeZone: NY, dstGap: 'shift' }, '2026-03-08T06:00:00Z', 3), [
    '2026-03-08T06:30:00Z',
    '2026-03-08T07:00:00Z', // 02:30 shifted to 03:00 EDT
    '2026-03-08T07:30:00Z',
  ]);
});

test('fall-back overlap, fixed hour: 01:30 fires once, at the first (EDT) copy', () => {
  // 2026-11-01 02:00 EDT falls back to 01:00 EST (06:00Z); 01:30 happens at 05:30Z and 06:30Z.
  assert.deepEqual(next({ spec: '30 1 * * *', timeZone: NY }, '2026-10-31T12:00:00Z', 2), [
    '2026-11-01T05:30:00Z',
    '2026-11-02T06:30:00Z',
  ]);
  // Asked from inside the second copy of the hour, the day's run is already past.
  assert.deepEqual(next({ spec: '30 1 * * *', timeZone: NY }, '2026-11-01T06:10:00Z', 1), [
    '2026-11-02T06:30:00Z',
  ]);
});

test('fall-back overlap, dstOverlap both: fires in both copies', () => {
  assert.deepEqual(
    next({ spec: '30 1 * * *', timeZone: NY, dstOverlap: 'both' }, '2026-10-31T12:00:00Z', 3),
    ['2026-11-01T05:30:00Z', '2026-11-01T06:30:00Z', '2026-11-02T06:30:00Z'],
  );
});

test('fall-back overlap, wildcard hour: keeps firing on elapsed time through both copies', () => {
  assert.deepEqual(next({ spec: '*/30 * * * *', timeZone: NY }, '2026-11-01T04:45:00Z', 6), [
    '2026-11-01T05:00:00Z', // 01:00 EDT
    '2026-11-01T05:30:00Z', // 01:30 EDT
    '2026-11-01T06:00:00Z', // 01:00 EST
    '2026-11-01T06:30:00Z', // 01:30 EST
    '2026-11-01T07:00:00Z', // 02:00 EST
    '2026-11-01T07:30:00Z',
  ]);
  // From inside the first copy, the second copy comes next although its wall time is earlier.
  assert.deepEqual(next({ spec: '0 * * * *', timeZone: NY }, '2026-11-01T05:50:00Z', 2), [
    '2026-11-01T06:00:00Z',
    '2026-11-01T07:00:00Z',
  ]);
  assert.deepEqual(
    next({ spec: '0 * * * *', timeZone: NY, dstOverlap: 'first' }, '2026-11-01T04:30:00Z', 2),
    ['2026-11-01T05:00:00Z', '2026-11-01T07:00:00Z'],
  );
});

test('Europe/London: 01:30 does not exist on 2026-03-29 and happens twice on 2026-10-25', () => {
  const z = 'Europe/London';
  assert.deepEqual(next({ spec: '30 1 * * *', timeZone: z }, '2026-03-28T12:00:00Z', 2), [
    '2026-03-29T01:00:00Z', // 02:00 BST, the end of the gap
    '2026-03-30T00:30:00Z',
  ]);
  assert.deepEqual(next({ spec: '30 1 * * *', timeZone: z }, '2026-10-24T12:00:00Z', 2), [
    '2026-10-25T00:30:00Z', // 01:30 BST
    '2026-10-26T01:30:00Z',
  ]);
});

test('Australia/Sydney (southern hemisphere): gap in October, overlap in April', () => {
  const z = 'Australia/Sydney';
  // 2026-10-04 02:00 AEST → 03:00 AEDT (2026-10-03T16:00Z).
  assert.deepEqual(next({ spec: '15 2 * * *', timeZone: z }, '2026-10-03T00:00:00Z', 2), [
    '2026-10-03T16:00:00Z',
    '2026-10-04T15:15:00Z',
  ]);
  // 2026-04-05 03:00 AEDT → 02:00 AEST (2026-04-04T16:00Z): 02:15 happens at 15:15Z and 16:15Z.
  assert.deepEqual(next({ spec: '15 2 * * *', timeZone: z, dstOverlap: 'both' }, '2026-04-04T00:00:00Z', 2), [
    '2026-04-04T15:15:00Z',
    '2026-04-04T16:15:00Z',
  ]);
});

test('Australia/Lord_Howe: a 30-minute DST shift', () => {
  const z = 'Australia/Lord_Howe';
  // 2026-10-04 02:00 (+10:30) → 02:30 (+11) at 2026-10-03T15:30Z.
  assert.deepEqual(next({ spec: '10 2 * * *', timeZone: z }, '2026-10-03T00:00:00Z', 1), [
    '2026-10-03T15:30:00Z',
  ]);
  assert.deepEqual(next({ spec: '0 * * * *', timeZone: z }, '2026-10-03T13:00:00Z', 3), [
    '2026-10-03T13:30:00Z', // 00:00 +10:30
    '2026-10-03T14:30:00Z', // 01:00 +10:30; 02:00 does not exist
    '2026-10-03T16:00:00Z', // 03:00 +11
  ]);
  // 2026-04-05 02:00 (+11) → 01:30 (+10:30) at 2026-04-04T15:00Z: 01:45 happens twice.
  assert.deepEqual(next({ spec: '45 1 * * *', timeZone: z, dstOverlap: 'both' }, '2026-04-04T00:00:00Z', 2), [
    '2026-04-04T14:45:00Z',
    '2026-04-04T15:15:00Z',
  ]);
});

test('Asia/Kolkata: half-hour offset, no DST', () => {
  assert.deepEqual(next({ spec: '0 9 * * *', timeZone: 'Asia/Kolkata' }, '2026-03-08T00:00:00Z', 2), [
    '2026-03-08T03:30:00Z',
    '2026-03-09T03:30:00Z',
  ]);
});

test('a one-off local time in a gap shifts, or is rejected under skip', () => {
  assert.equal(
    compileSchedule({ spec: 'at 2026-03-08T02:30', timeZone: NY }).canonical,
    'at 2026-03-08T07:00:00Z',
  );
  assert.throws(
    () => compileSchedule({ spec: 'at 2026-03-08T02:30', timeZone: NY, dstGap: 'skip' }),
    /DST gap/,
  );
  assert.equal(
    compileSchedule({ spec: 'at 2026-11-01 01:30', timeZone: NY }).canonical,
    'at 2026-11-01T05:30:00Z',
  );
});
