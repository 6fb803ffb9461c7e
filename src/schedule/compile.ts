/** compileSchedule: from user input to a CompiledSchedule, validating everything once, up front. */
import { SpecError } from './errors.ts';
import { Zone } from './zone.ts';
import { CronSchedule, normaliseCron } from './cron.ts';
import { IntervalSchedule, parseTerseInterval } from './interval.ts';
import { OnceSchedule, parseOnce } from './once.ts';
import { parsePhrase } from './phrases.ts';
import { DstGap, DstOverlap, type CompileInput, type CompiledSchedule } from './types.ts';
import type { DstRules } from './dst.ts';

const EPOCH = new Date(0);

export function compileSchedule(input: CompileInput): CompiledSchedule {
  const { spec, timeZone = 'UTC', dstGap, dstOverlap, anchor = EPOCH } = input;
  if (typeof spec !== 'string' || spec.trim() === '')
    throw new SpecError('spec', 'must be a non-empty string');
  if (dstGap !== undefined && !Object.hasOwn(DstGap, dstGap)) {
    throw new SpecError('dstGap', `'${String(dstGap)}' is not one of ${Object.keys(DstGap).join(', ')}`);
  }
  if (dstOverlap !== undefined && !Object.hasOwn(DstOverlap, dstOverlap)) {
    throw new SpecError(
      'dstOverlap',
      `'${String(dstOverlap)}' is not one of ${Object.keys(DstOverlap).join(', ')}`,
    );
  }
  if (!(anchor instanceof Date) || Number.isNaN(anchor.getTime()))
    throw new SpecError('anchor', 'must be a valid Date');
  const zone = Zone.get(timeZone);
  const text = spec.trim();

  // Cron fields start with a digit, '*' or '?', nicknames with '@'; every phrase starts with a word.
  if (/^[\d*?@]/.test(text)) return cron(text, zone, dstGap, dstOverlap);

  const at = /^at\s+(.+)$/i.exec(text);
  if (at) {
    // A one-off names a fixed wall time, so it takes the fixed-hour defaults.
    const rules: DstRules = { gap: dstGap ?? 'shift', overlap: dstOverlap ?? 'first' };
    return new OnceSchedule(parseOnce(at[1] as string, zone, rules), zone);
  }

  const terse = parseTerseInterval(text);
  if (terse !== null) return new IntervalSchedule(terse, anchor, zone.name);

  const phrase = parsePhrase(text);
  if (phrase.kind === 'interval') return new IntervalSchedule(phrase.seconds, anchor, zone.name);
  return cron(phrase.expression, zone, dstGap, dstOverlap);
}

function cron(
  text: string,
  zone: Zone,
  gap: DstGap | undefined,
  overlap: DstOverlap | undefined,
): CronSchedule {
  const { expression, hourIsWild } = normaliseCron(text);
  // Classic cron: a job at a fixed hour runs once per day whatever DST does; a job on every hour
  // (or every n hours) follows elapsed time, so it skips the hour that does not exist and runs in
  // both copies of the hour that happens twice.
  const rules: DstRules = {
    gap: gap ?? (hourIsWild ? 'skip' : 'shift'),
    overlap: overlap ?? (hourIsWild ? 'both' : 'first'),
  };
  return new CronSchedule(expression, zone, rules);
}
