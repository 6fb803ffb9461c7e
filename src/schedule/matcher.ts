/**
 * The next matching wall-clock second of a parsed cron pattern, computed field by field.
 *
 * croner parses (its CronPattern holds one 0/1 array per field plus the L, W and # flags), and this
 * file answers "first matching wall time strictly after t" with exactly croner's semantics, but
 * without its stepping: per-field "next value ≥ v" tables for month, hour, minute and second, and
 * one 31-bit mask of matching days per month (cached for the month last asked about), so a call is
 * a calendar conversion plus a few table lookups and carries. Per CPU-second on this machine
 * (bench/schedule.ts, median of 3 runs): croner's nextRun with `utcOffset: 0`, which cron.ts called
 * before, 23k/s for `30 9 * * 1-5` and 150k/s for every 10 seconds (6 fields); this, 2–2.7M/s for both.
 * test/schedule/matcher.test.ts compares the two on random specs and times.
 *
 * Semantics kept from croner 11 (read from its CronDate, so a change there shows up in that test):
 * - The result is a whole second at least one second after floor(t): never t itself.
 * - Days: the day-of-month values, `nW` (nearest weekday, never leaving the month), `LW` and `L`
 *   form one set; when day-of-week is `*` it alone decides. Otherwise a weekday entry matches on
 *   any occurrence, on the nth (`#n`) or the last (`L`) of the month; combined with OR when
 *   day-of-month is restricted, and AND when it is `*` (or with croner's `+` prefix).
 * - No answer (null) once the search passes year 2999 or 400 years after t's year: croner's limits.
 *   A spec that never matches (`0 0 30 2 *`) is null from any t, because the calendar repeats
 *   every 400 years.
 */
import type { CronPattern } from 'croner';

const SECOND = 1000;
const DAY_SECONDS = 86_400;
/** croner returns null for anything in year 3000 or later, and gives up 400 years out. */
const LAST_YEAR = 2999;
const SEARCH_YEARS = 400;
/** croner's bit for the 1st–5th occurrence of a weekday in its month; 32 is the last one. */
const NTH = [1, 2, 4, 8, 16] as const;
const LAST_OF_WEEK = 32;

/**
 * next[v] = the smallest matching value ≥ v, or -1; `values` is croner's 0/1 array indexed from
 * `base` (0 for seconds, minutes, hours; 1 for months). One extra slot answers -1 for v = max + 1.
 */
function nextTable(values: readonly number[], base: number): Int8Array {
  const table = new Int8Array(values.length + 1).fill(-1);
  for (let i = values.length - 1; i >= 0; i--) table[i] = values[i] ? i + base : (table[i + 1] as number);
  return table;
}

/** Days since 1970-01-01 of a proleptic Gregorian date (any year; month 1–12). */
function daysFromCivil(year: number, month: number, day: number): number {
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yoe = y - era * 400;
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  return era * 146_097 + yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy - 719_468;
}

function daysInMonth(year: number, month: number): number {
  if (month !== 2) return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
}

/** 0 = Sunday. 1970-01-01 was a Thursday. */
function weekdayOf(days: number): number {
  return (((days + 4) % 7) + 7) % 7;
}

export class WallMatcher {
  private readonly months: Int8Array;
  private readonly hours: Int8Array;
  private readonly minutes: Int8Array;
  private readonly seconds: Int8Array;
  /** Bit d-1 set: day-of-month value d is listed. */
  private readonly plainDays: number;
  /** Days named with W (`15W`). */
  private readonly nearestWeekdays: number[];
  private readonly lastDay: boolean;
  private readonly lastWeekday: boolean;
  /** Per weekday (0 = Sunday): 0, or croner's mask of occurrences (NTH bits, LAST_OF_WEEK; 63 = any). */
  private readonly weekdays: number[];
  private readonly anyWeekday: boolean;
  /** Restricted day-of-month and day-of-week: a day matches if either does. */
  private readonly eitherDay: boolean;
  private cachedMonth = Number.NaN;
  private cachedDays = 0;

  constructor(pattern: CronPattern) {
    this.months = nextTable(pattern.month, 1);
    this.hours = nextTable(pattern.hour, 0);
    this.minutes = nextTable(pattern.minute, 0);
    this.seconds = nextTable(pattern.second, 0);
    let plain = 0;
    const nearest: number[] = [];
    for (let d = 1; d <= 31; d++) {
      if (pattern.day[d - 1]) plain |= 1 << (d - 1);
      if (pattern.nearestWeekdays[d - 1]) nearest.push(d);
    }
    this.plainDays = plain;
    this.nearestWeekdays = nearest;
    this.lastDay = pattern.lastDayOfMonth;
    this.lastWeekday = pattern.lastWeekday;
    this.weekdays = pattern.dayOfWeek.slice(0, 7);
    this.anyWeekday = pattern.starDOW;
    this.eitherDay = !pattern.starDOM && !pattern.useAndLogic;
  }

  /** First matching wall time (whole second) strictly after `wall`, as epoch-style ms of the wall clock. */
  next(wall: number): number | null {
    const start = Math.floor(wall / SECOND) + 1;
    const startDay = Math.floor(start / DAY_SECONDS);
    let rest = start - startDay * DAY_SECONDS;
    let hour = Math.floor(rest / 3600);
    rest -= hour * 3600;
    let minute = Math.floor(rest / 60);
    let second = rest - minute * 60;
    // Civil date of startDay (H. Hinnant's algorithm, valid for any year).
    const z = startDay + 719_468;
    const era = Math.floor(z / 146_097);
    const doe = z - era * 146_097;
    const yoe = Math.floor(
      (doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365,
    );
    const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100));
    const mp = Math.floor((5 * doy + 2) / 153);
    let day = doy - Math.floor((153 * mp + 2) / 5) + 1;
    let month = mp < 10 ? mp + 3 : mp - 9;
    let year = yoe + era * 400 + (month <= 2 ? 1 : 0);

    const limit = Math.min(LAST_YEAR, year + SEARCH_YEARS);
    // Each field either matches as it stands, moves forward (clearing the fields below it), or has
    // nothing left in range: then the field above is carried and the search restarts from the month.
    for (;;) {
      if (year > limit) return null;
      const m = this.months[month - 1] as number;
      if (m < 0) {
        year++;
        month = 1;
        day = 1;
        hour = minute = second = 0;
        continue;
      }
      if (m !== month) {
        month = m;
        day = 1;
        hour = minute = second = 0;
      }
      // Bits for days ≥ `day`; a day past the month's end (after a carry) shifts everything out.
      const days = this.daysOf(year, month) >>> (day - 1);
      if (days === 0) {
        day = 1;
        hour = minute = second = 0;
        if (++month > 12) {
          month = 1;
          year++;
        }
        continue;
      }
      const d = day + 31 - Math.clz32(days & -days);
      if (d !== day) {
        day = d;
        hour = minute = second = 0;
      }
      const h = this.hours[hour] as number;
      if (h < 0) {
        day++;
        hour = minute = second = 0;
        continue;
      }
      if (h !== hour) {
        hour = h;
        minute = second = 0;
      }
      const mi = this.minutes[minute] as number;
      if (mi < 0) {
        minute = second = 0;
        if (++hour > 23) {
          hour = 0;
          day++;
        }
        continue;
      }
      if (mi !== minute) {
        minute = mi;
        second = 0;
      }
      const s = this.seconds[second] as number;
      if (s < 0) {
        second = 0;
        if (++minute > 59) {
          minute = 0;
          if (++hour > 23) {
            hour = 0;
            day++;
          }
        }
        continue;
      }
      return ((daysFromCivil(year, month, day) * 24 + hour) * 3600 + minute * 60 + s) * SECOND;
    }
  }

  /** Mask of the matching days of a month (bit d-1 for day d); the last month asked about is cached. */
  private daysOf(year: number, month: number): number {
    const key = year * 12 + month;
    if (key === this.cachedMonth) return this.cachedDays;
    const last = daysInMonth(year, month);
    const first = weekdayOf(daysFromCivil(year, month, 1));
    const inMonth = last === 31 ? 0x7fff_ffff : (1 << last) - 1;
    let days = this.plainDays & inMonth;
    for (const n of this.nearestWeekdays) {
      if (n > last) continue;
      const wd = (first + n - 1) % 7;
      const d = wd === 0 ? (n === last ? n - 2 : n + 1) : wd === 6 ? (n === 1 ? n + 2 : n - 1) : n;
      days |= 1 << (d - 1);
    }
    if (this.lastWeekday) {
      const wd = (first + last - 1) % 7;
      days |= 1 << ((wd === 0 ? last - 2 : wd === 6 ? last - 1 : last) - 1);
    }
    if (this.lastDay) days |= 1 << (last - 1);
    if (!this.anyWeekday) {
      let byWeekday = 0;
      for (let d = 1; d <= last; d++) {
        const mask = this.weekdays[(first + d - 1) % 7] as number;
        if (
          mask !== 0 &&
          ((mask & (NTH[((d - 1) / 7) | 0] as number)) !== 0 || ((mask & LAST_OF_WEEK) !== 0 && d + 7 > last))
        )
          byWeekday |= 1 << (d - 1);
      }
      days = this.eitherDay ? days | byWeekday : days & byWeekday;
    }
    this.cachedMonth = key;
    this.cachedDays = days;
    return days;
  }
}
