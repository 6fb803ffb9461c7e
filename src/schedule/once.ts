/**
 * One-off schedules: `at 2026-12-24T18:00:00Z`, any ISO 8601 instant with an offset, or a local
 * date-time without one, read in the schedule's zone under its DST rules (a nonexistent local time
 * shifts or is rejected, a repeated one takes the chosen copy).
 */
import { SpecError } from './errors.ts';
import type { CompiledSchedule } from './types.ts';
import { isoLocal, isoUtc } from './describe.ts';
import { wallMs, type Zone } from './zone.ts';
import { fireInstants, type DstRules } from './dst.ts';

const ISO =
  /^(\d{4})-(\d{2})-(\d{2})(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,3}))?)?)?\s*(Z|[+-]\d{2}:?\d{2})?$/i;

/** The instant an `at …` spec names (the text after `at`). */
export function parseOnce(text: string, zone: Zone, rules: DstRules): number {
  const m = ISO.exec(text.trim());
  if (!m) {
    throw new SpecError(
      'spec',
      `'${text}' is not an ISO 8601 date-time; write e.g. 'at 2026-12-24T18:00:00Z'`,
    );
  }
  const [, y, mo, d, h = '0', mi = '0', s = '0', frac = '0', offset] = m;
  const fields = [Number(y), Number(mo), Number(d), Number(h), Number(mi), Number(s)] as const;
  const wall = wallMs(...fields) + Number(frac.padEnd(3, '0'));
  const check = new Date(wall);
  if (
    check.getUTCMonth() + 1 !== fields[1] ||
    check.getUTCDate() !== fields[2] ||
    fields[3] > 23 ||
    fields[4] > 59 ||
    fields[5] > 59
  ) {
    throw new SpecError('spec', `'${text}' is not a valid calendar date-time`);
  }
  if (offset !== undefined) {
    if (offset.toUpperCase() === 'Z') return wall;
    const om = /^([+-])(\d{2}):?(\d{2})$/.exec(offset);
    const sign = om?.[1] === '-' ? -1 : 1;
    const oh = Number(om?.[2]);
    const omin = Number(om?.[3]);
    if (oh > 23 || omin > 59) throw new SpecError('spec', `offset '${offset}' is out of range`);
    return wall - sign * (oh * 60 + omin) * 60_000;
  }
  const instants = fireInstants(zone, wall, rules);
  const first = instants[0];
  if (first === undefined) {
    throw new SpecError(
      'spec',
      `${text} does not exist in ${zone.name} (DST gap) and the gap rule is 'skip'`,
    );
  }
  return first;
}

export class OnceSchedule implements CompiledSchedule {
  readonly kind = 'once' as const;
  readonly canonical: string;
  readonly description: string;
  readonly timeZone: string;
  readonly dst = null;
  readonly anchor = null;
  private readonly at: number;

  constructor(at: number, zone: Zone) {
    this.at = at;
    this.timeZone = zone.name;
    this.canonical = `at ${isoUtc(at)}`;
    this.description = `once, at ${isoUtc(at)} (${isoLocal(at, zone)} ${zone.name})`;
  }

  nextAfter(after: Date): Date | null {
    const t = after.getTime();
    if (Number.isNaN(t)) throw new RangeError('nextAfter: invalid Date');
    return t < this.at ? new Date(this.at) : null;
  }
}
