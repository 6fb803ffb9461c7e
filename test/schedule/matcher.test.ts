/**
 * Property: Tidemark's wall-clock matcher (src/schedule/matcher.ts) agrees with croner, the reference
 * for pattern semantics, on random specs and random times. The reference is exactly what the time
 * core used before the matcher: `new Cron(expression, { utcOffset: 0, mode: '5-or-6-parts' })` and
 * its nextRun, which answers in UTC wall time. In UTC, nextAfter is the matcher's answer unchanged,
 * so the comparison runs through the public API.
 *
 * Specs cover every field form croner accepts and the validator lets through, including lists that
 * mix L, W, # and plain values; times cover month ends, leap days, year rollover, centuries (2000
 * is a leap year, 2100 is not), years 0–99, negative years and croner's year-3000 horizon.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { Cron, CronPattern } from 'croner';
import { compileSchedule } from '../../src/schedule/index.ts';
import { normaliseCron } from '../../src/schedule/cron.ts';
import { describeCron } from '../../src/schedule/describe.ts';
import { WallMatcher } from '../../src/schedule/matcher.ts';

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

const int = (min: number, max: number): fc.Arbitrary<number> => fc.integer({ min, max });
const pair = (min: number, max: number): fc.Arbitrary<[number, number]> =>
  fc.tuple(int(min, max), int(min, max)).map(([a, b]) => [Math.min(a, b), Math.max(a, b)]);

/** Plain items of a numeric field: value, range, `*`/n, a-b/n. `name` renders some values as names. */
function plainItem(min: number, max: number, name?: (v: number) => string): fc.Arbitrary<string> {
  const n = (v: number, useName: boolean): string => (useName && name ? name(v) : String(v));
  return fc.oneof(
    { weight: 4, arbitrary: fc.tuple(int(min, max), fc.boolean()).map(([v, b]) => n(v, b)) },
    {
      weight: 2,
      arbitrary: fc.tuple(pair(min, max), fc.boolean()).map(([[a, b], u]) => `${n(a, u)}-${n(b, u)}`),
    },
    { weight: 2, arbitrary: int(1, Math.min(30, max - min + 1)).map((s) => `*/${s}`) },
    {
      weight: 2,
      arbitrary: fc
        .tuple(pair(min, max), int(1, 12))
        .map(([[a, b], s]) => `${a}-${b}/${Math.min(s, b - a + 1)}`),
    },
  );
}

const list = (item: fc.Arbitrary<string>, maxLength = 3): fc.Arbitrary<string> =>
  fc.array(item, { minLength: 1, maxLength }).map((items) => items.join(','));

function field(min: number, max: number, name?: (v: number) => string): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 2, arbitrary: fc.constant('*') },
    { weight: 5, arbitrary: list(plainItem(min, max, name)) },
  );
}

const dayOfMonth: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constant('*') },
  { weight: 1, arbitrary: fc.constant('?') },
  { weight: 3, arbitrary: list(plainItem(1, 31)) },
  { weight: 2, arbitrary: fc.constantFrom('L', 'LW') },
  { weight: 2, arbitrary: int(1, 31).map((d) => `${d}W`) },
  {
    weight: 3,
    arbitrary: list(
      fc.oneof(
        plainItem(1, 31),
        fc.constant('L'),
        int(1, 31).map((d) => `${d}W`),
      ),
      4,
    ),
  },
);

const weekdayName = (v: number): string => DAYS[v % 7] ?? String(v);
const dayOfWeek: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constant('*') },
  { weight: 1, arbitrary: fc.constant('?') },
  { weight: 3, arbitrary: list(plainItem(0, 7, weekdayName)) },
  { weight: 1, arbitrary: fc.constantFrom('MON-SUN', '1-7', '0-6', 'SAT-SUN') },
  {
    weight: 4,
    arbitrary: list(
      fc.oneof(
        plainItem(0, 7, weekdayName),
        fc.tuple(int(0, 7), fc.boolean()).map(([d, useName]) => `${useName ? weekdayName(d) : d}L`),
        fc.tuple(int(0, 7), fc.oneof(int(1, 5).map(String), fc.constant('L'))).map(([d, n]) => `${d}#${n}`),
      ),
      3,
    ),
  },
);

const month = fc.oneof(
  { weight: 3, arbitrary: fc.constant('*') },
  { weight: 2, arbitrary: list(plainItem(1, 12, (v) => MONTHS[v - 1] ?? String(v))) },
);

const fiveOrSix: fc.Arbitrary<string> = fc
  .record({
    seconds: fc.oneof({ weight: 2, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: field(0, 59) }),
    minute: field(0, 59),
    hour: field(0, 23),
    dom: dayOfMonth,
    month,
    dow: dayOfWeek,
  })
  .map(({ seconds, minute, hour, dom, month, dow }) =>
    [...(seconds === null ? [] : [seconds]), minute, hour, dom, month, dow].join(' '),
  );

/** Days late in short months: rare fires, leap years only, or never (which compile must reject). */
const lateInShortMonths: fc.Arbitrary<string> = fc
  .tuple(
    fc.constantFrom('29', '30', '31', '29W', '30W', '31W', '29-31', '30,31', 'L', 'LW'),
    fc.constantFrom('2', 'FEB', '4,6', 'APR-JUN', '2,4,6,9,11', '2,3'),
    fc.constantFrom('*', '*', '1', '1#5', '6L', '0#5'),
  )
  .map(([dom, month, dow]) => `0 12 ${dom} ${month} ${dow}`);

const spec = fc.oneof({ weight: 9, arbitrary: fiveOrSix }, { weight: 1, arbitrary: lateInShortMonths });

/** Exactly what the time core asked croner before the matcher replaced nextRun. */
function croner(expression: string): Cron {
  return new Cron(expression, { utcOffset: 0, mode: '5-or-6-parts', domAndDow: false });
}

const PROBE = new Date(Date.UTC(2000, 0, 1));
const HOUR = 3_600_000;
const DAY = 24 * HOUR;

function utc(year: number, month: number, day: number, ms: number): number {
  const d = new Date(0);
  d.setUTCFullYear(year, month, day);
  return d.getTime() + ms;
}

/** Times where calendars are tricky, plus plain random ones. */
const instant: fc.Arbitrary<number> = fc.oneof(
  { weight: 3, arbitrary: int(Date.UTC(1970, 0, 1), Date.UTC(2100, 0, 1)) },
  {
    // The last days of a month and the first of the next, late and early in the day.
    weight: 4,
    arbitrary: fc
      .tuple(
        fc.constantFrom(1999, 2000, 2023, 2024, 2026, 2028, 2099, 2100, 2400),
        int(0, 11),
        fc.constantFrom(0, 1, 27, 28, 29, 30, 31, 32),
        fc.oneof(int(0, DAY - 1), int(DAY - 120_000, DAY - 1), int(0, 120_000)),
      )
      .map(([y, m, d, ms]) => utc(y, m, d, ms)),
  },
  {
    // Year rollover.
    weight: 2,
    arbitrary: fc.tuple(int(1990, 2110), int(-180_000, 2000)).map(([y, ms]) => utc(y, 0, 1, ms)),
  },
  {
    // Leap days.
    weight: 2,
    arbitrary: fc
      .tuple(fc.constantFrom(1900, 1996, 2000, 2024, 2025, 2096, 2100, 2104), int(26, 30), int(0, DAY - 1))
      .map(([y, d, ms]) => utc(y, 1, d, ms)),
  },
  {
    // Far from now: two-digit years, negative years, and croner's horizon at year 3000.
    weight: 1,
    arbitrary: fc.oneof(
      int(utc(-400, 0, 1, 0), utc(3100, 0, 1, 0)),
      int(utc(0, 0, 1, 0), utc(200, 0, 1, 0)),
      int(utc(2990, 0, 1, 0), utc(3001, 0, 1, 0)),
    ),
  },
);

const iso = (t: number | null): string | null => (t === null ? null : new Date(t).toISOString());

/** The validator's expression and croner's Cron for it, or null where either rejects the spec. */
function reference(text: string): { expression: string; cron: Cron } | null {
  try {
    const { expression } = normaliseCron(text);
    return { expression, cron: croner(expression) };
  } catch {
    return null;
  }
}

test('a spec compiles exactly when it did with croner matching: validator, croner, a match, a description', () => {
  fc.assert(
    fc.property(spec, (text) => {
      const ref = reference(text);
      let accepted = ref !== null && ref.cron.nextRun(PROBE) !== null;
      if (ref !== null && accepted) {
        try {
          describeCron(ref.expression);
        } catch {
          accepted = false;
        }
      }
      let compiled = true;
      try {
        compileSchedule({ spec: text });
      } catch {
        compiled = false;
      }
      assert.equal(compiled, accepted, text);
    }),
    { numRuns: 2000 },
  );
});

test('specs that never match are rejected, as croner finds no match for them', () => {
  for (const text of ['0 0 30 2 *', '0 0 31 4,6,9,11 *', '0 0 30W 2 *', '0 0 30-31 2 *', '0 0 31 FEB ?']) {
    const ref = reference(text);
    assert.equal(ref?.cron.nextRun(PROBE), null, text);
    assert.throws(() => compileSchedule({ spec: text }), /never matches/, text);
  }
  // Leap days only: rare, but they do match.
  assert.equal(
    compileSchedule({ spec: '0 0 29 2 *' }).nextAfter(PROBE)?.toISOString(),
    '2000-02-29T00:00:00.000Z',
  );
});

test('the matcher agrees with croner on random specs and times, over chains of fires, and so does nextAfter in UTC', () => {
  let compared = 0;
  fc.assert(
    fc.property(spec, fc.array(instant, { minLength: 1, maxLength: 4 }), (text, starts) => {
      const ref = reference(text);
      if (ref === null) return;
      // Directly, because compile also needs cronstrue to describe the spec, and it rejects some
      // that croner accepts (a W in a list); through the public API wherever compile succeeds.
      const matcher = new WallMatcher(new CronPattern(ref.expression, undefined, { mode: '5-or-6-parts' }));
      let compiled: ReturnType<typeof compileSchedule> | null = null;
      try {
        compiled = compileSchedule({ spec: text });
      } catch {
        // rejected: the matcher is still compared
      }
      for (const start of starts) {
        // A chain of successive fires, as the scheduler asks for them.
        let t: number | null = start;
        for (let i = 0; i < 6 && t !== null; i++) {
          const expected: number | null = ref.cron.nextRun(new Date(t))?.getTime() ?? null;
          const label: string = `${ref.expression} after ${new Date(t).toISOString()}`;
          assert.equal(iso(matcher.next(t)), iso(expected), label);
          if (compiled !== null)
            assert.equal(iso(compiled.nextAfter(new Date(t))?.getTime() ?? null), iso(expected), label);
          compared++;
          t = expected;
        }
      }
    }),
    { numRuns: 4000 },
  );
  assert.ok(compared > 20_000, `only ${compared} comparisons`);
});

test('nextAfter agrees with croner at every minute around month ends, leap days and a new year', () => {
  // Dense rather than random: each minute (less 1 ms) from 22:00 to 02:00 across 2028-02-29 (leap),
  // 2100-02-28 (no leap: a century) and 2026-12-31 (year rollover).
  const specs = [
    '0 0 L * *',
    '30 23 LW * *',
    '0 0 29W * *',
    '59 23 * * 0L',
    '*/7 * * * * *',
    '0 12 28-31 * 2#4',
    '0 0 L,1 2 5',
  ];
  for (const s of specs) {
    const compiled = compileSchedule({ spec: s });
    const reference = croner(compiled.canonical);
    for (const from of [
      utc(2028, 1, 28, 22 * HOUR),
      utc(2028, 1, 29, 22 * HOUR),
      utc(2100, 1, 28, 22 * HOUR),
      utc(2026, 11, 31, 22 * HOUR),
    ]) {
      for (let t = from; t < from + 4 * HOUR; t += 60_000 - 1) {
        const expected = reference.nextRun(new Date(t))?.getTime() ?? null;
        assert.equal(
          iso(compiled.nextAfter(new Date(t))?.getTime() ?? null),
          iso(expected),
          `${s} after ${iso(t)}`,
        );
      }
    }
  }
});
