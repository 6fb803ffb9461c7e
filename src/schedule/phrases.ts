/**
 * Plain-English schedules, compiled to a cron expression (when the phrase names wall-clock times
 * or a step that divides the clock evenly, so "every 15 minutes" fires at :00, :15, :30, :45 local
 * time) or to an interval (a step that does not divide the clock, e.g. "every 90 seconds").
 *
 * The grammar is small and strict on purpose: a phrase either means exactly one schedule or is an
 * error that lists what is accepted. Nothing is guessed ("at 9" is rejected: am or pm?).
 */
import { SpecError } from './errors.ts';

export type PhraseResult = { kind: 'cron'; expression: string } | { kind: 'interval'; seconds: number };

export const SUPPORTED_PHRASES = [
  'every second | every N seconds',
  'every minute | every N minutes',
  'every hour | every hour at :MM | every N hours [at :MM]',
  'every day [at TIME] | daily at TIME',
  'every weekday at TIME | every weekend at TIME',
  'every monday [and thursday …] at TIME',
  'on the 1st [and 15th …] of every month at TIME',
  'on the last day | last weekday of every month at TIME',
  'on the first|second|third|fourth|last monday of every month at TIME',
  'TIME is 9am, 9:30am, 6 pm, 14:30, 06:00, noon or midnight',
];

const DAY_NUMBERS: Record<string, number> = {
  sunday: 0,
  monday: 1,
  tuesday: 2,
  wednesday: 3,
  thursday: 4,
  friday: 5,
  saturday: 6,
};

const NTH: Record<string, string> = {
  first: '1',
  second: '2',
  third: '3',
  fourth: '4',
  fifth: '5',
  last: 'L',
};

interface Time {
  hour: number;
  minute: number;
}

function unrecognised(spec: string, detail?: string): SpecError {
  return new SpecError(
    'spec',
    `${detail ?? `'${spec}' is not a cron expression, an interval ('every 90s'), a one-off ('at 2026-12-24T18:00:00Z') or a supported phrase`}. Supported phrases: ${SUPPORTED_PHRASES.join('; ')}`,
  );
}

function parseTime(text: string, spec: string): Time {
  if (text === 'midnight') return { hour: 0, minute: 0 };
  if (text === 'noon' || text === 'midday') return { hour: 12, minute: 0 };
  const m = /^(\d{1,2})(?::(\d{2}))?\s*(am|pm)?$/.exec(text);
  if (!m || (m[2] === undefined && m[3] === undefined)) {
    throw unrecognised(spec, `'${text}' is not a time; write 9am, 9:30pm, 14:30, noon or midnight`);
  }
  let hour = Number(m[1]);
  const minute = Number(m[2] ?? '0');
  if (minute > 59) throw unrecognised(spec, `'${text}': minute ${minute} is out of range 0-59`);
  if (m[3] !== undefined) {
    if (hour < 1 || hour > 12)
      throw unrecognised(spec, `'${text}': hour ${hour} is out of range 1-12 with am/pm`);
    hour = (hour % 12) + (m[3] === 'pm' ? 12 : 0);
  } else if (hour > 23) {
    throw unrecognised(spec, `'${text}': hour ${hour} is out of range 0-23`);
  }
  return { hour, minute };
}

function parseDay(word: string): number | undefined {
  const w = word.replace(/s$/, '');
  for (const [name, n] of Object.entries(DAY_NUMBERS)) {
    if (w === name || (w.length >= 3 && name.startsWith(w))) return n;
  }
  return undefined;
}

/** Splits "a, b and c" into its items. */
function list(text: string): string[] {
  return text
    .split(/\s*(?:,|\band\b)\s*/)
    .map((s) => s.trim())
    .filter((s) => s !== '');
}

function ordinal(text: string): number | undefined {
  const m = /^(\d{1,2})(st|nd|rd|th)?$/.exec(text);
  if (!m) return undefined;
  const n = Number(m[1]);
  return n >= 1 && n <= 31 ? n : undefined;
}

function atClock(time: Time, dom: string, dow: string): PhraseResult {
  return { kind: 'cron', expression: `${time.minute} ${time.hour} ${dom} * ${dow}` };
}

/** Compiles a phrase; throws SpecError listing the supported forms when it is not one. */
export function parsePhrase(input: string): PhraseResult {
  const spec = input.trim().toLowerCase().replace(/\s+/g, ' ').replace(/\.$/, '');

  const step = /^every (?:(\d+) )?(second|minute|hour)s?(?: at :(\d{2}))?$/.exec(spec);
  if (step) {
    const n = step[1] === undefined ? 1 : Number(step[1]);
    const unit = step[2] as 'second' | 'minute' | 'hour';
    const minuteText = step[3];
    if (n < 1) throw unrecognised(spec, `'${spec}': the step must be at least 1`);
    if (minuteText !== undefined && unit !== 'hour') throw unrecognised(spec);
    const minute = Number(minuteText ?? '0');
    if (minute > 59) throw unrecognised(spec, `'${spec}': minute ${minute} is out of range 0-59`);
    const per = unit === 'hour' ? 24 : 60;
    if (per % n !== 0 || n === per) {
      if (minuteText !== undefined) {
        throw unrecognised(
          spec,
          `'${spec}': ${n} hours does not divide the day, so it cannot keep a minute past the hour; use 'every ${n}h' for an elapsed-time interval`,
        );
      }
      return { kind: 'interval', seconds: n * (unit === 'hour' ? 3600 : unit === 'minute' ? 60 : 1) };
    }
    const field = n === 1 ? '*' : `*/${n}`;
    if (unit === 'second') return { kind: 'cron', expression: `${field} * * * * *` };
    if (unit === 'minute') return { kind: 'cron', expression: `${field} * * * *` };
    return { kind: 'cron', expression: `${minute} ${field} * * *` };
  }

  const daily = /^(?:every day|daily)(?: at (.+))?$/.exec(spec);
  if (daily) return atClock(parseTime(daily[1] ?? 'midnight', spec), '*', '*');

  const weekly = /^every (.+?) at (.+)$/.exec(spec);
  if (weekly) {
    const days = weekly[1] as string;
    const time = parseTime(weekly[2] as string, spec);
    if (days === 'weekday') return atClock(time, '*', '1-5');
    if (days === 'weekend') return atClock(time, '*', '0,6');
    const numbers = list(days).map((d) => {
      const n = parseDay(d);
      if (n === undefined) throw unrecognised(spec, `'${d}' is not a day of the week`);
      return n;
    });
    return atClock(time, '*', [...new Set(numbers)].sort((a, b) => a - b).join(','));
  }

  const monthly = /^on the (.+?) of every month(?: at (.+))?$/.exec(spec);
  if (monthly) {
    const what = monthly[1] as string;
    const time = parseTime(monthly[2] ?? 'midnight', spec);
    if (what === 'last day') return atClock(time, 'L', '*');
    if (what === 'last weekday') return atClock(time, 'LW', '*');
    const nthDay = /^(first|second|third|fourth|fifth|last) (\w+)$/.exec(what);
    if (nthDay) {
      const day = parseDay(nthDay[2] as string);
      if (day === undefined) throw unrecognised(spec, `'${nthDay[2]}' is not a day of the week`);
      return atClock(time, '*', `${day}#${NTH[nthDay[1] as string]}`);
    }
    const days = list(what).map((d) => {
      const n = ordinal(d);
      if (n === undefined) throw unrecognised(spec, `'${d}' is not a day of the month (1st-31st)`);
      return n;
    });
    return atClock(time, [...new Set(days)].sort((a, b) => a - b).join(','), '*');
  }

  throw unrecognised(input.trim());
}
