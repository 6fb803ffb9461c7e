/**
 * Property: for random cron expressions, zones and instants (biased towards DST transitions),
 * nextAfter agrees with the brute-force oracle in oracle.ts under the default and the overridden
 * DST rules.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { compileSchedule } from '../../src/schedule/index.ts';
import { cronCase, defaultRules, oracleNext, renderCron, transitions } from './oracle.ts';

const HOUR = 3_600_000;
/** Forward window the oracle walks; nextAfter results beyond it are only checked to lie beyond it. */
const WINDOW = 30 * HOUR;

const DST_ZONES = [
  'America/New_York',
  'Europe/London',
  'Australia/Sydney',
  'Australia/Lord_Howe',
  'Asia/Kolkata',
  'America/Santiago',
] as const;

const FROM = Date.UTC(2025, 0, 1);
const TO = Date.UTC(2027, 0, 1);
const transitionsByZone = new Map(DST_ZONES.map((z) => [z, transitions(z, FROM, TO)]));

test('the zones under test have the transitions the property relies on', () => {
  for (const zone of DST_ZONES) {
    const n = transitionsByZone.get(zone)?.length ?? 0;
    assert.equal(n, zone === 'Asia/Kolkata' ? 0 : 4, zone);
  }
});

const rulesArb = fc.record(
  {
    gap: fc.constantFrom('shift' as const, 'skip' as const),
    overlap: fc.constantFrom('first' as const, 'both' as const),
  },
  { requiredKeys: [] },
);

function instantNear(zone: (typeof DST_ZONES)[number]): fc.Arbitrary<number> {
  const ts = transitionsByZone.get(zone) ?? [];
  const random = fc.integer({ min: FROM, max: TO });
  if (ts.length === 0) return random;
  return fc.oneof(
    { weight: 1, arbitrary: random },
    {
      weight: 4,
      arbitrary: fc
        .tuple(
          fc.constantFrom(...ts),
          fc.integer({ min: -26 * HOUR, max: 4 * HOUR }),
          fc.constantFrom(0, 0, 1, 999, 30_000),
        )
        // Mostly on whole minutes (where fire times are), sometimes just after one.
        .map(([t, d, ms]) => Math.floor((t + d) / 60_000) * 60_000 + ms),
    },
  );
}

for (const zone of DST_ZONES) {
  test(`nextAfter agrees with the oracle in ${zone}`, () => {
    fc.assert(
      fc.property(cronCase, instantNear(zone), rulesArb, (c, after, override) => {
        const spec = renderCron(c);
        const compiled = compileSchedule({
          spec,
          timeZone: zone,
          dstGap: override.gap,
          dstOverlap: override.overlap,
        });
        const rules = { ...defaultRules(c), ...override };
        assert.deepEqual(compiled.dst, rules, `rules for ${spec}`);
        const expected = oracleNext(c, zone, after, WINDOW, rules);
        const actual = compiled.nextAfter(new Date(after))?.getTime() ?? null;
        const label = `${spec} in ${zone} after ${new Date(after).toISOString()} ${JSON.stringify(rules)}`;
        if (typeof expected === 'number') {
          assert.equal(
            actual === null ? null : new Date(actual).toISOString(),
            new Date(expected).toISOString(),
            label,
          );
        } else {
          assert.ok(
            actual === null || actual > expected.none,
            `${label}: got ${actual === null ? null : new Date(actual).toISOString()}, oracle saw nothing until ${new Date(expected.none).toISOString()}`,
          );
        }
      }),
      { numRuns: 150 },
    );
  });
}

test('nextAfter agrees with the oracle in any zone the platform knows', () => {
  const zones = Intl.supportedValuesOf('timeZone');
  fc.assert(
    fc.property(
      cronCase,
      fc.constantFrom(...zones),
      fc.integer({ min: Date.UTC(1990, 0, 1), max: Date.UTC(2035, 0, 1) }),
      (c, zone, after) => {
        const spec = renderCron(c);
        const compiled = compileSchedule({ spec, timeZone: zone });
        const expected = oracleNext(c, zone, after, WINDOW, defaultRules(c));
        const actual = compiled.nextAfter(new Date(after))?.getTime() ?? null;
        const label = `${spec} in ${zone} after ${new Date(after).toISOString()}`;
        if (typeof expected === 'number') assert.equal(actual, expected, label);
        else assert.ok(actual === null || actual > expected.none, label);
      },
    ),
    { numRuns: 100 },
  );
});
