/**
 * A brute-force oracle for cron next-fire times, written from docs/time-rules.md without using
 * anything in src/schedule or croner: cron fields are kept as structured items and matched here,
 * wall-clock times come straight from Intl, and time is walked minute by minute applying the
 * rules literally:
 *   - a wall time is *new* when it is later than every wall time seen so far; it fires if it matches;
 *   - a wall time at or before the latest one seen is a *repeat* (second copy, fall-back); it fires
 *     only under overlap `both`;
 *   - wall times jumped over between two steps never existed (gap); under gap `shift` the instant
 *     after the jump fires if any of them matched.
 * Offsets change only on whole minutes in the zones tested, so seconds are walked inside each minute.
 */
import fc from 'fast-check';

export type Item =
  | { kind: 'any' }
  | { kind: 'value'; v: number }
  | { kind: 'range'; a: number; b: number }
  | { kind: 'step'; from?: [number, number]; step: number }
  | { kind: 'last' }
  | { kind: 'lastWeekday' }
  | { kind: 'nearestWeekday'; day: number }
  | { kind: 'lastOfWeek'; dow: number }
  | { kind: 'nth'; dow: number; n: number };

export interface CronCase {
  seconds: Item[] | null;
  minute: Item[];
  hour: Item[];
  dom: Item[];
  month: Item[];
  dow: Item[];
  names: boolean;
}

const MONTH_NAMES = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAY_NAMES = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT', 'SUN'];

function renderItem(item: Item, name?: (n: number) => string): string {
  const n = name ?? String;
  switch (item.kind) {
    case 'any':
      return '*';
    case 'value':
      return n(item.v);
    case 'range':
      // A range ending in SUN means up to 7 (MON-SUN is the whole week), so an end of 0 is written as a
      // number; SUN-SUN is Sunday alone, so the whole week from 0 is written 0-SUN.
      return `${item.a === 0 && item.b === 7 ? '0' : n(item.a)}-${item.b === 0 ? '0' : n(item.b)}`;
    case 'step':
      return `${item.from ? `${item.from[0]}-${item.from[1]}` : '*'}/${item.step}`;
    case 'last':
      return 'L';
    case 'lastWeekday':
      return 'LW';
    case 'nearestWeekday':
      return `${item.day}W`;
    case 'lastOfWeek':
      return `${n(item.dow)}L`;
    case 'nth':
      return `${n(item.dow)}#${item.n}`;
  }
}

export function renderCron(c: CronCase): string {
  const field = (items: Item[], name?: (n: number) => string): string =>
    items.map((i) => renderItem(i, name)).join(',');
  const parts = [
    field(c.minute),
    field(c.hour),
    field(c.dom),
    field(c.month, c.names ? (m) => MONTH_NAMES[m - 1] ?? String(m) : undefined),
    field(c.dow, c.names ? (d) => DAY_NAMES[d] ?? String(d) : undefined),
  ];
  return (c.seconds ? [field(c.seconds), ...parts] : parts).join(' ');
}

function plainMatch(items: Item[], v: number, min: number, max: number): boolean {
  return items.some((item) => {
    switch (item.kind) {
      case 'any':
        return true;
      case 'value':
        return item.v === v;
      case 'range':
        return v >= item.a && v <= item.b;
      case 'step': {
        const [a, b] = item.from ?? [min, max];
        return v >= a && v <= b && (v - a) % item.step === 0;
      }
      default:
        return false;
    }
  });
}

const isStar = (items: Item[]): boolean => items.length === 1 && items[0]?.kind === 'any';

function daysIn(year: number, month: number): number {
  return new Date(Date.UTC(year, month, 0)).getUTCDate();
}

function weekday(year: number, month: number, day: number): number {
  return new Date(Date.UTC(year, month - 1, day)).getUTCDay();
}

function domMatch(items: Item[], y: number, m: number, d: number): boolean {
  const last = daysIn(y, m);
  return items.some((item) => {
    switch (item.kind) {
      case 'last':
        return d === last;
      case 'lastWeekday': {
        let w = last;
        while (weekday(y, m, w) === 0 || weekday(y, m, w) === 6) w--;
        return d === w;
      }
      case 'nearestWeekday': {
        if (item.day > last) return false;
        const wd = weekday(y, m, item.day);
        let target = item.day;
        if (wd === 6) target = item.day === 1 ? 3 : item.day - 1;
        if (wd === 0) target = item.day === last ? item.day - 2 : item.day + 1;
        return d === target;
      }
      default:
        return plainMatch([item], d, 1, 31);
    }
  });
}

function dowMatch(items: Item[], y: number, m: number, d: number): boolean {
  const wd = weekday(y, m, d);
  const last = daysIn(y, m);
  return items.some((item) => {
    switch (item.kind) {
      case 'lastOfWeek':
        return item.dow % 7 === wd && d + 7 > last;
      case 'nth':
        return item.dow % 7 === wd && Math.ceil(d / 7) === item.n;
      default:
        return plainMatch([item], wd, 0, 7) || (wd === 0 && plainMatch([item], 7, 0, 7));
    }
  });
}

/** Does wall-clock time `wall` (ms, wall clock read as UTC) match the expression? */
export function matches(c: CronCase, wall: number): boolean {
  const t = new Date(wall);
  const y = t.getUTCFullYear();
  const mo = t.getUTCMonth() + 1;
  const d = t.getUTCDate();
  if (!plainMatch(c.seconds ?? [{ kind: 'value', v: 0 }], t.getUTCSeconds(), 0, 59)) return false;
  if (!plainMatch(c.minute, t.getUTCMinutes(), 0, 59)) return false;
  if (!plainMatch(c.hour, t.getUTCHours(), 0, 23)) return false;
  if (!plainMatch(c.month, mo, 1, 12)) return false;
  const domStar = isStar(c.dom);
  const dowStar = isStar(c.dow);
  if (domStar && dowStar) return true;
  if (domStar) return dowMatch(c.dow, y, mo, d);
  if (dowStar) return domMatch(c.dom, y, mo, d);
  return domMatch(c.dom, y, mo, d) || dowMatch(c.dow, y, mo, d);
}

/** The written defaults: a wildcard or stepped hour follows elapsed time. */
export function defaultRules(c: CronCase): { gap: 'shift' | 'skip'; overlap: 'first' | 'both' } {
  const wild = c.hour.some((i) => i.kind === 'any' || i.kind === 'step');
  return wild ? { gap: 'skip', overlap: 'both' } : { gap: 'shift', overlap: 'first' };
}

const formats = new Map<string, Intl.DateTimeFormat>();
const wallCache = new Map<string, Map<number, number>>();

/** Wall clock at instant `t` in `zone`, read from Intl (memoised per minute; Intl is the slow part). */
export function intlWall(zone: string, t: number): number {
  let cache = wallCache.get(zone);
  if (cache === undefined) {
    cache = new Map();
    wallCache.set(zone, cache);
  }
  const hit = cache.get(t);
  if (hit !== undefined) return hit;
  let f = formats.get(zone);
  if (f === undefined) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formats.set(zone, f);
  }
  const p = Object.fromEntries(f.formatToParts(t).map((x) => [x.type, x.value]));
  const wall = Date.UTC(
    Number(p.year),
    Number(p.month) - 1,
    Number(p.day),
    Number(p.hour),
    Number(p.minute),
    Number(p.second),
  );
  if (cache.size > 2_000_000) cache.clear();
  cache.set(t, wall);
  return wall;
}

const MINUTE = 60_000;
/** Longer than any backward jump in the zones tested (2 h at most), so repeats are recognised. */
const LOOKBACK = 6 * 3_600_000;

/**
 * First fire time strictly after `after`, or `{ none: end }` when nothing fires up to instant `end`
 * (the window is bounded so the property tests stay fast).
 */
export function oracleNext(
  c: CronCase,
  zone: string,
  after: number,
  windowMs: number,
  rules: { gap: 'shift' | 'skip'; overlap: 'first' | 'both' },
): number | { none: number } {
  const withSeconds = c.seconds !== null;
  const start = Math.floor((after - LOOKBACK) / MINUTE) * MINUTE;
  const end = after + windowMs;
  let maxWall = intlWall(zone, start);
  for (let t = start + MINUTE; t <= end; t += MINUTE) {
    const wall = intlWall(zone, t);
    const fires: number[] = [];
    if (wall > maxWall) {
      if (wall - maxWall > MINUTE && rules.gap === 'shift') {
        for (let skipped = maxWall + MINUTE; skipped < wall; skipped += MINUTE) {
          if (anySecondMatches(c, skipped, withSeconds)) {
            fires.push(t);
            break;
          }
        }
      }
      fires.push(...matchingSeconds(c, wall, withSeconds).map((w) => t + (w - wall)));
      maxWall = wall;
    } else if (rules.overlap === 'both') {
      fires.push(...matchingSeconds(c, wall, withSeconds).map((w) => t + (w - wall)));
    }
    for (const f of fires) if (f > after) return f;
  }
  return { none: end };
}

function matchingSeconds(c: CronCase, wallMinute: number, withSeconds: boolean): number[] {
  if (!withSeconds) return matches(c, wallMinute) ? [wallMinute] : [];
  const out: number[] = [];
  for (let s = 0; s < 60; s++) if (matches(c, wallMinute + s * 1000)) out.push(wallMinute + s * 1000);
  return out;
}

function anySecondMatches(c: CronCase, wallMinute: number, withSeconds: boolean): boolean {
  return matchingSeconds(c, wallMinute, withSeconds).length > 0;
}

/** Offset transitions of `zone` in [from, to), found by hourly Intl sampling and bisection to the minute. */
export function transitions(zone: string, from: number, to: number): number[] {
  const HOUR = 3_600_000;
  const out: number[] = [];
  const off = (t: number): number => intlWall(zone, t) - t;
  for (let t = from; t < to; t += HOUR) {
    if (off(t) === off(t + HOUR)) continue;
    let lo = t / MINUTE;
    let hi = (t + HOUR) / MINUTE;
    while (hi - lo > 1) {
      const mid = Math.floor((lo + hi) / 2);
      if (off(mid * MINUTE) === off(t)) lo = mid;
      else hi = mid;
    }
    out.push(hi * MINUTE);
  }
  return out;
}

// ---- generators ----

const value = (min: number, max: number): fc.Arbitrary<Item> =>
  fc.integer({ min, max }).map((v) => ({ kind: 'value', v }));
const range = (min: number, max: number): fc.Arbitrary<Item> =>
  fc
    .tuple(fc.integer({ min, max }), fc.integer({ min, max }))
    .map(([x, y]) => ({ kind: 'range', a: Math.min(x, y), b: Math.max(x, y) }));
const step = (min: number, max: number): fc.Arbitrary<Item> =>
  fc.oneof(
    fc.integer({ min: 1, max: Math.min(30, max - min + 1) }).map((s): Item => ({ kind: 'step', step: s })),
    fc
      .tuple(fc.integer({ min, max }), fc.integer({ min, max }), fc.integer({ min: 1, max: 12 }))
      .map(([x, y, s]): Item => {
        const a = Math.min(x, y);
        const b = Math.max(x, y);
        return { kind: 'step', from: [a, b], step: Math.min(s, b - a + 1) };
      }),
  );
const list = (item: fc.Arbitrary<Item>): fc.Arbitrary<Item[]> =>
  fc.array(item, { minLength: 1, maxLength: 3 });
const any: fc.Arbitrary<Item[]> = fc.constant([{ kind: 'any' }]);

/** Mostly frequent schedules (so the bounded window sees fires), with every field form represented. */
const rawCronCase: fc.Arbitrary<CronCase> = fc.record({
  seconds: fc.oneof(
    { weight: 4, arbitrary: fc.constant(null) },
    { weight: 1, arbitrary: fc.oneof(list(fc.oneof(value(0, 59), step(0, 59), range(0, 59))), any) },
  ),
  minute: fc.oneof(any, list(fc.oneof(value(0, 59), step(0, 59), range(0, 59)))),
  hour: fc.oneof(
    any,
    list(step(0, 23)),
    list(fc.oneof({ weight: 3, arbitrary: value(0, 4) }, value(0, 23), range(0, 4), step(0, 23))),
  ),
  dom: fc.oneof(
    { weight: 6, arbitrary: any },
    {
      weight: 1,
      arbitrary: fc.oneof(
        list(fc.oneof(value(1, 31), range(1, 31), step(1, 31))),
        fc.constant<Item[]>([{ kind: 'last' }]),
        fc.constant<Item[]>([{ kind: 'lastWeekday' }]),
        fc.integer({ min: 1, max: 31 }).map((day): Item[] => [{ kind: 'nearestWeekday', day }]),
      ),
    },
  ),
  month: fc.oneof(
    { weight: 8, arbitrary: any },
    { weight: 1, arbitrary: list(fc.oneof(value(1, 12), range(1, 12))) },
  ),
  dow: fc.oneof(
    { weight: 5, arbitrary: any },
    {
      weight: 1,
      arbitrary: fc.oneof(
        list(fc.oneof(value(0, 7), range(0, 7), step(0, 6))),
        fc.integer({ min: 0, max: 6 }).map((dow): Item[] => [{ kind: 'lastOfWeek', dow }]),
        fc
          .tuple(fc.integer({ min: 0, max: 6 }), fc.integer({ min: 1, max: 5 }))
          .map(([dow, n]): Item[] => [{ kind: 'nth', dow, n }]),
      ),
    },
  ),
  names: fc.boolean(),
});

/** Day 29–31 in a restricted month can name a date that never exists (31W in June), which compile rightly rejects. */
function clampDay(item: Item): Item {
  switch (item.kind) {
    case 'value':
      return { kind: 'value', v: Math.min(item.v, 28) };
    case 'range':
      return { kind: 'range', a: Math.min(item.a, 28), b: Math.min(item.b, 28) };
    case 'nearestWeekday':
      return { kind: 'nearestWeekday', day: Math.min(item.day, 28) };
    case 'step':
      if (!item.from) return item;
      {
        const [a, b] = [Math.min(item.from[0], 28), Math.min(item.from[1], 28)];
        return { kind: 'step', from: [a, b], step: Math.min(item.step, b - a + 1) };
      }
    default:
      return item;
  }
}

export const cronCase: fc.Arbitrary<CronCase> = rawCronCase.map((c) =>
  isStar(c.month) ? c : { ...c, dom: c.dom.map(clampDay) },
);
