/** Misfire, overlap and jitter policies. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { compileSchedule, decideOverlap, jitterOffsetMs, planMisfire } from '../../src/schedule/index.ts';

const iso = (ds: Date[]): string[] => ds.map((d) => d.toISOString().replace('.000Z', 'Z'));
const hourly = compileSchedule({ spec: '0 * * * *' });
const base = {
  schedule: hourly,
  lastFireAt: new Date('2026-01-01T00:00:00Z'),
  now: new Date('2026-01-01T03:30:00Z'),
};

test('misfire all runs every due occurrence; latest runs the most recent; skip runs none that are late', () => {
  const all = planMisfire({ ...base, policy: 'all' });
  assert.deepEqual(iso(all.run), ['2026-01-01T01:00:00Z', '2026-01-01T02:00:00Z', '2026-01-01T03:00:00Z']);
  assert.deepEqual(all.missed, []);
  assert.deepEqual(all.next, new Date('2026-01-01T04:00:00Z'));
  const latest = planMisfire({ ...base, policy: 'latest' });
  assert.deepEqual(iso(latest.run), ['2026-01-01T03:00:00Z']);
  assert.deepEqual(iso(latest.missed), ['2026-01-01T01:00:00Z', '2026-01-01T02:00:00Z']);
  const skip = planMisfire({ ...base, policy: 'skip' });
  assert.deepEqual(skip.run, []);
  assert.equal(skip.missed.length, 3);
});

test('on-time occurrences run under every policy', () => {
  const now = new Date('2026-01-01T01:00:00.250Z');
  for (const policy of ['all', 'latest', 'skip'] as const) {
    assert.deepEqual(iso(planMisfire({ ...base, now, policy }).run), ['2026-01-01T01:00:00Z'], policy);
  }
  // Within the grace window, skip still runs it; past it, it is missed.
  assert.equal(planMisfire({ ...base, now: new Date('2026-01-01T01:00:59Z'), policy: 'skip' }).run.length, 1);
  assert.equal(planMisfire({ ...base, now: new Date('2026-01-01T01:01:01Z'), policy: 'skip' }).run.length, 0);
});

test('starting deadline turns late occurrences into missed ones', () => {
  const plan = planMisfire({ ...base, policy: 'all', startingDeadlineMs: 45 * 60_000 });
  assert.deepEqual(iso(plan.run), ['2026-01-01T03:00:00Z']);
  assert.deepEqual(iso(plan.missed), ['2026-01-01T01:00:00Z', '2026-01-01T02:00:00Z']);
  const latest = planMisfire({ ...base, policy: 'latest', startingDeadlineMs: 10 * 60_000 });
  assert.deepEqual(latest.run, []);
  assert.equal(latest.missed.length, 3);
});

test('the cap lists the most recent occurrences and says where the unlisted ones end', () => {
  const everySecond = compileSchedule({ spec: '* * * * * *' });
  const lastFireAt = new Date('2026-01-01T00:00:00Z');
  const now = new Date('2026-01-08T00:00:00Z'); // a week: 604,800 due
  const started = performance.now();
  const plan = planMisfire({ schedule: everySecond, lastFireAt, now, policy: 'all', cap: 100 });
  assert.ok(performance.now() - started < 500, 'work is bounded by the cap, not the outage');
  assert.equal(plan.run.length, 100);
  assert.deepEqual(plan.run.at(-1), now);
  assert.deepEqual(plan.run[0], new Date('2026-01-07T23:58:21Z'));
  assert.deepEqual(plan.unlistedThrough, new Date('2026-01-07T23:58:20.999Z'));
  const small = planMisfire({ ...base, policy: 'all', cap: 2 });
  assert.deepEqual(iso(small.run), ['2026-01-01T02:00:00Z', '2026-01-01T03:00:00Z']);
  assert.deepEqual(small.unlistedThrough, new Date('2026-01-01T01:59:59.999Z'));
  assert.equal(planMisfire({ ...base, policy: 'all', cap: 3 }).unlistedThrough, null);
});

test('a clock that jumps back plans nothing and never refires', () => {
  const plan = planMisfire({ ...base, now: new Date('2025-12-31T23:00:00Z'), policy: 'all' });
  assert.deepEqual(plan.run, []);
  assert.deepEqual(plan.missed, []);
});

test('property: every due occurrence up to the cap is listed exactly once, in order', () => {
  fc.assert(
    fc.property(
      fc.constantFrom('*/7 * * * *', '0 */3 * * *', '30 9 * * 1-5', 'every 90s'),
      fc.integer({ min: 0, max: 3 * 86_400_000 }),
      fc.integer({ min: 1, max: 50 }),
      fc.constantFrom('all' as const, 'latest' as const, 'skip' as const),
      (spec, span, cap, policy) => {
        const schedule = compileSchedule({ spec, timeZone: 'America/New_York' });
        const lastFireAt = new Date(Date.UTC(2026, 2, 6));
        const now = new Date(lastFireAt.getTime() + span);
        const due: number[] = [];
        for (let t = schedule.nextAfter(lastFireAt); t !== null && t <= now; t = schedule.nextAfter(t))
          due.push(t.getTime());
        const plan = planMisfire({ schedule, lastFireAt, now, policy, cap });
        const listed = [...plan.run, ...plan.missed].map((d) => d.getTime()).sort((a, b) => a - b);
        assert.deepEqual(listed, due.slice(-cap));
        assert.equal(plan.unlistedThrough !== null, due.length > cap);
        assert.ok(plan.run.length <= (policy === 'latest' ? 1 : cap));
        assert.ok(plan.next === null || plan.next > now);
      },
    ),
    { numRuns: 200 },
  );
});

test('overlap decisions', () => {
  const idle = { previousRunning: false, waiting: 0 };
  const busy = { previousRunning: true, waiting: 0 };
  const full = { previousRunning: true, waiting: 1 };
  for (const p of ['allow', 'forbid', 'replace', 'buffer_one'] as const)
    assert.equal(decideOverlap(p, idle), 'run');
  assert.equal(decideOverlap('allow', busy), 'run');
  assert.equal(decideOverlap('forbid', busy), 'skip');
  assert.equal(decideOverlap('replace', busy), 'cancel_previous_then_run');
  assert.equal(decideOverlap('buffer_one', busy), 'buffer');
  assert.equal(decideOverlap('buffer_one', full), 'skip');
  assert.equal(decideOverlap('forbid', { previousRunning: false, waiting: 1 }), 'skip');
});

test('jitter is deterministic, bounded and spread', () => {
  assert.equal(jitterOffsetMs('sched-1', 60_000), jitterOffsetMs('sched-1', 60_000));
  assert.equal(jitterOffsetMs('sched-1', 0), 0);
  assert.throws(() => jitterOffsetMs('x', -1), RangeError);
  const buckets = new Array<number>(10).fill(0);
  for (let i = 0; i < 10_000; i++) {
    const j = jitterOffsetMs(`schedule-${i}`, 60_000);
    assert.ok(j >= 0 && j < 60_000 && Number.isInteger(j));
    buckets[Math.floor(j / 6000)]! += 1;
  }
  for (const b of buckets) assert.ok(b > 850 && b < 1150, `bucket ${b}`);
});
