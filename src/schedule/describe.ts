/** Human text for compiled schedules, so a user sees what Tidemark understood. */
import cronstrue from 'cronstrue';
import { Zone } from './zone.ts';

/**
 * cronstrue cannot word every form croner accepts (a `W` inside a list, `5#L`) and throws a bare
 * string for those; such a spec is still valid, so it gets a plain description instead of an error.
 */
export function describeCron(expression: string): string {
  try {
    return cronstrue.toString(expression, {
      use24HourTimeFormat: true,
      throwExceptionOnParseError: true,
      verbose: false,
    });
  } catch {
    return `At times matching the cron expression "${expression}"`;
  }
}

const UNITS: [seconds: number, singular: string][] = [
  [86_400, 'day'],
  [3600, 'hour'],
  [60, 'minute'],
  [1, 'second'],
];

/** "90 seconds", "15 minutes", "1 hour": the largest unit that divides the period exactly. */
export function describeSeconds(seconds: number): string {
  for (const [size, name] of UNITS) {
    if (seconds % size === 0) {
      const n = seconds / size;
      return `${n} ${name}${n === 1 ? '' : 's'}`;
    }
  }
  return `${seconds} seconds`;
}

/** An instant as ISO 8601 without zero milliseconds: 2026-12-24T18:00:00Z. */
export function isoUtc(t: number): string {
  return new Date(t).toISOString().replace('.000Z', 'Z');
}

/** An instant as local ISO 8601 with its offset in `zone`: 2026-12-24T19:00:00+01:00. */
export function isoLocal(t: number, zone: Zone): string {
  const offset = zone.offsetAt(t);
  const local = new Date(t + offset).toISOString().replace('.000Z', '').replace('Z', '');
  const sign = offset < 0 ? '-' : '+';
  const abs = Math.abs(offset) / 60_000;
  const hh = String(Math.floor(abs / 60)).padStart(2, '0');
  const mm = String(Math.floor(abs % 60)).padStart(2, '0');
  return `${local}${sign}${hh}:${mm}`;
}

/** `at` as local ISO 8601 with its offset in IANA zone `timeZone` (throws SpecError for an unknown zone). */
export function formatLocal(at: Date, timeZone: string): string {
  return isoLocal(at.getTime(), Zone.get(timeZone));
}
