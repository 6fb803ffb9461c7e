/**
 * Cron expressions: 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first,
 * with names, ranges, steps, lists, `L`, `W`, `LW`, `#` and the @-nicknames. Day-of-month and
 * day-of-week combine with OR when both are restricted, as in Vixie cron.
 *
 * croner parses; matcher.ts finds the next matching *wall-clock* time with croner's semantics (in
 * effect croner's nextRun with `utcOffset: 0`, ~10–100× faster), and dst.ts maps wall times to
 * instants under Tidemark's own DST rules, which are not croner's. Fields are validated here first
 * so an error names the field and the range, which croner's messages do not reliably do.
 */
import { CronPattern } from 'croner';
import { SpecError } from './errors.ts';
import { nextZonedFire, type DstRules, type NextWall } from './dst.ts';
import { WallMatcher } from './matcher.ts';
import type { Zone } from './zone.ts';
import type { CompiledSchedule } from './types.ts';
import { describeCron } from './describe.ts';

const NICKNAMES: Record<string, string> = {
  '@yearly': '0 0 1 1 *',
  '@annually': '0 0 1 1 *',
  '@monthly': '0 0 1 * *',
  '@weekly': '0 0 * * 0',
  '@daily': '0 0 * * *',
  '@midnight': '0 0 * * *',
  '@hourly': '0 * * * *',
};

const MONTHS = ['JAN', 'FEB', 'MAR', 'APR', 'MAY', 'JUN', 'JUL', 'AUG', 'SEP', 'OCT', 'NOV', 'DEC'];
const DAYS = ['SUN', 'MON', 'TUE', 'WED', 'THU', 'FRI', 'SAT'];

interface FieldDef {
  name: string;
  min: number;
  max: number;
  names?: string[];
  /** Value of names[0]. */
  namesFrom?: number;
}

const SECOND: FieldDef = { name: 'second', min: 0, max: 59 };
const FIELDS_5: FieldDef[] = [
  { name: 'minute', min: 0, max: 59 },
  { name: 'hour', min: 0, max: 23 },
  { name: 'day-of-month', min: 1, max: 31 },
  { name: 'month', min: 1, max: 12, names: MONTHS, namesFrom: 1 },
  { name: 'day-of-week', min: 0, max: 7, names: DAYS, namesFrom: 0 },
];

/** Validates an expression field by field and returns it normalised (nickname expanded, single spaces, upper case). */
export function normaliseCron(spec: string): { expression: string; hourIsWild: boolean } {
  const trimmed = spec.trim();
  const expanded = trimmed.startsWith('@') ? NICKNAMES[trimmed.toLowerCase()] : trimmed;
  if (expanded === undefined) {
    throw new SpecError(
      'spec',
      `unknown nickname '${trimmed}'; use one of ${Object.keys(NICKNAMES).join(', ')}`,
    );
  }
  const parts = expanded.toUpperCase().split(/\s+/);
  if (parts.length !== 5 && parts.length !== 6) {
    throw new SpecError(
      'spec',
      `a cron expression has 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first; '${trimmed}' has ${parts.length}`,
    );
  }
  const defs = parts.length === 6 ? [SECOND, ...FIELDS_5] : FIELDS_5;
  parts.forEach((part, i) => validateField(part, defs[i] as FieldDef));
  // A range ending in SUN ends at 7 (MON-SUN is the whole week, as in croner), which would make
  // SUN-SUN the whole week too; it means Sunday, so it is written 0-0 before croner reads it.
  const dow = parts.length - 1;
  parts[dow] = (parts[dow] as string)
    .split(',')
    .map((item) => item.replace(/^SUN-SUN(?=\/|$)/, '0-0'))
    .join(',');
  const hour = parts[parts.length - 4] as string;
  return { expression: parts.join(' '), hourIsWild: /[*?/]/.test(hour) };
}

function validateField(text: string, def: FieldDef): void {
  for (const item of text.split(',')) {
    if (item === '') throw new SpecError(def.name, `empty list item in '${text}'`);
    validateItem(item, def);
  }
}

function validateItem(item: string, def: FieldDef): void {
  const fail = (reason: string): never => {
    throw new SpecError(def.name, reason);
  };
  if (item === '?') {
    if (def.name !== 'day-of-month' && def.name !== 'day-of-week')
      fail(`'?' is only allowed in day-of-month and day-of-week`);
    return;
  }
  if (def.name === 'day-of-month') {
    if (item === 'L' || item === 'LW') return;
    const w = /^(\d+)W$/.exec(item);
    if (w) {
      value(w[1] as string, def, fail);
      return;
    }
  }
  if (def.name === 'day-of-week') {
    const last = /^([A-Z]+|\d+)L$/.exec(item);
    if (last) {
      value(last[1] as string, def, fail);
      return;
    }
    const nth = /^([A-Z]+|\d+)#(\d+|L)$/.exec(item);
    if (nth) {
      value(nth[1] as string, def, fail);
      const n = nth[2] as string;
      if (n !== 'L' && (Number(n) < 1 || Number(n) > 5)) fail(`'#${n}' in '${item}' is out of range 1-5`);
      return;
    }
  }
  const slash = item.split('/');
  if (slash.length > 2) fail(`'${item}' has more than one '/'`);
  const [base = '', step] = slash;
  let span = def.max - def.min + 1;
  if (base !== '*') {
    const range = base.split('-');
    if (range.length > 2) fail(`'${base}' is not a value or a range`);
    const from = value(range[0] ?? '', def, fail);
    if (range.length === 2) {
      // As in croner: a range ending in SUN ends at 7, so MON-SUN is the whole week.
      const end = range[1] ?? '';
      const to = def.name === 'day-of-week' && end === 'SUN' ? 7 : value(end, def, fail);
      if (from > to) fail(`range '${base}' runs backwards (${from} > ${to})`);
      span = to - from + 1;
    } else if (step !== undefined) {
      fail(
        `'${item}': a step needs '*' or a range before the '/', e.g. '*/${step}' or '${base}-${def.max}/${step}'`,
      );
    }
  }
  if (step !== undefined) {
    if (!/^\d+$/.test(step)) fail(`step '${step}' in '${item}' is not a whole number`);
    const n = Number(step);
    if (n < 1 || n > span) fail(`step ${n} in '${item}' is out of range 1-${span}`);
  }
}

function value(text: string, def: FieldDef, fail: (reason: string) => never): number {
  if (def.names !== undefined && /^[A-Z]+$/.test(text)) {
    const i = def.names.indexOf(text);
    if (i < 0) fail(`'${text}' is not a name; use ${def.names.join(', ')}`);
    return i + (def.namesFrom ?? 0);
  }
  if (!/^\d+$/.test(text)) fail(`'${text}' is not a number`);
  const n = Number(text);
  if (n < def.min || n > def.max) fail(`${n} is out of range ${def.min}-${def.max}`);
  return n;
}

/** Year 2000 wall clock: a fixed reference so "does this ever fire" does not depend on today. */
const NEVER_PROBE = Date.UTC(2000, 0, 1);

export class CronSchedule implements CompiledSchedule {
  readonly kind = 'cron' as const;
  readonly canonical: string;
  readonly description: string;
  readonly timeZone: string;
  readonly dst: DstRules;
  readonly anchor = null;
  private readonly zone: Zone;
  private readonly nextWall: NextWall;

  constructor(expression: string, zone: Zone, dst: DstRules) {
    this.canonical = expression;
    this.zone = zone;
    this.timeZone = zone.name;
    this.dst = dst;
    let pattern: CronPattern;
    try {
      // The options croner's Cron passes for { mode: '5-or-6-parts' }; day fields combine with OR
      // (croner's default, domAndDow: false), which WallMatcher applies.
      pattern = new CronPattern(expression, undefined, { mode: '5-or-6-parts' });
    } catch (error) {
      throw new SpecError('spec', error instanceof Error ? error.message : String(error), { cause: error });
    }
    const matcher = new WallMatcher(pattern);
    this.nextWall = (wall) => matcher.next(wall);
    if (this.nextWall(NEVER_PROBE) === null)
      throw new SpecError('spec', `'${expression}' never matches any date`);
    this.description = `${describeCron(expression)} (${zone.name})`;
  }

  nextAfter(after: Date): Date | null {
    const t = after.getTime();
    if (Number.isNaN(t)) throw new RangeError('nextAfter: invalid Date');
    const next = this.zone.isUtc ? this.nextWall(t) : nextZonedFire(this.zone, this.nextWall, t, this.dst);
    return next === null ? null : new Date(next);
  }
}
