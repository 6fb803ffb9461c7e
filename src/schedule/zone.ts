/**
 * UTC offsets of an IANA zone, from the platform's tz database through Intl, cached per zone.
 *
 * Intl answers one instant per call at ~95k calls/s here (formatToParts), too slow to call on every
 * next-fire computation. So each zone builds, once per UTC year it is asked about, the list of
 * offset transitions in that year: one Intl sample per day, then a binary search to the second
 * wherever two samples differ. That costs ~400 Intl calls (~4 ms) per zone-year; afterwards an
 * offset lookup is a scan of at most a handful of numbers. Sampling daily assumes a zone never
 * changes offset twice within 24 hours, which holds for every zone in the tz database.
 */
import { SpecError } from './errors.ts';

const SECOND = 1000;
const DAY = 86_400_000;

/** How a local wall-clock time maps to instants. All values are epoch milliseconds. */
export type LocalResolution =
  | { kind: 'unique'; at: number }
  /** The wall time happens twice (fall-back): `earlier` is the first happening, `later` the second. */
  | { kind: 'overlap'; earlier: number; later: number }
  /** The wall time does not exist (spring-forward); `gapEnd` is the first instant after the gap. */
  | { kind: 'gap'; gapEnd: number };

interface YearTable {
  start: number;
  end: number;
  /** starts[0] is the year's start; later entries are transitions (offset changes) within the year. */
  starts: number[];
  offsets: number[];
}

export class Zone {
  readonly name: string;
  readonly isUtc: boolean;
  private readonly format: Intl.DateTimeFormat;
  private readonly years = new Map<number, YearTable>();
  private last: YearTable | undefined;

  private constructor(name: string, format: Intl.DateTimeFormat) {
    this.name = name;
    this.format = format;
    this.isUtc = format.resolvedOptions().timeZone === 'UTC';
  }

  private static readonly cache = new Map<string, Zone>();

  /** The zone named `name` (any IANA name or alias Intl accepts); throws SpecError for unknown names. */
  static get(name: string): Zone {
    const cached = Zone.cache.get(name);
    if (cached !== undefined) return cached;
    let format: Intl.DateTimeFormat;
    try {
      format = new Intl.DateTimeFormat('en-US', {
        timeZone: name,
        hourCycle: 'h23',
        era: 'short',
        year: 'numeric',
        month: 'numeric',
        day: 'numeric',
        hour: 'numeric',
        minute: 'numeric',
        second: 'numeric',
      });
    } catch (error) {
      throw new SpecError('timeZone', `'${name}' is not a known IANA time zone`, { cause: error });
    }
    // Named as the caller spelled it: ICU resolves current names to legacy ones (Asia/Kolkata to
    // Asia/Calcutta), and a description must not rename the zone its schedule was given.
    const resolved = format.resolvedOptions().timeZone;
    const zone = new Zone(resolved.toLowerCase() === name.toLowerCase() ? resolved : name, format);
    Zone.cache.set(name, zone);
    return zone;
  }

  /** UTC offset in milliseconds at instant `t` (local = t + offset). */
  offsetAt(t: number): number {
    if (this.isUtc) return 0;
    const table = this.tableFor(t);
    let i = table.starts.length - 1;
    while (i > 0 && (table.starts[i] as number) > t) i--;
    return table.offsets[i] as number;
  }

  /** Local wall-clock time at `t`, as milliseconds since 1970-01-01T00:00 of the wall clock. */
  wallAt(t: number): number {
    return t + this.offsetAt(t);
  }

  resolveLocal(wall: number): LocalResolution {
    // Transitions are months apart, so the offsets a day either side are the only candidates.
    const before = this.offsetAt(wall - DAY);
    const after = this.offsetAt(wall + DAY);
    if (before === after) return { kind: 'unique', at: wall - before };
    const a = wall - before;
    const b = wall - after;
    const aValid = this.offsetAt(a) === before;
    const bValid = this.offsetAt(b) === after;
    if (aValid && bValid) return { kind: 'overlap', earlier: Math.min(a, b), later: Math.max(a, b) };
    if (aValid) return { kind: 'unique', at: a };
    if (bValid) return { kind: 'unique', at: b };
    return { kind: 'gap', gapEnd: this.firstChangeAfter(wall - DAY, before, a) };
  }

  /** Smallest and largest offset in force at any instant of [a, b]. */
  offsetRange(a: number, b: number): { min: number; max: number } {
    let min = this.offsetAt(a);
    let max = min;
    if (this.isUtc) return { min, max };
    for (let table = this.tableFor(a); table.start <= b; table = this.tableFor(table.end)) {
      for (let i = 0; i < table.starts.length; i++) {
        const start = table.starts[i] as number;
        if (start <= a || start > b) continue;
        const offset = table.offsets[i] as number;
        if (offset < min) min = offset;
        if (offset > max) max = offset;
      }
    }
    return { min, max };
  }

  /** True when the offset changes at some instant of (a, b]. */
  changesWithin(a: number, b: number): boolean {
    const range = this.offsetRange(a, b);
    return range.min !== range.max;
  }

  /** First instant in (lo, hi] whose offset differs from `offset` (the offset at lo); hi must differ. */
  private firstChangeAfter(lo: number, offset: number, hi: number): number {
    let l = Math.floor(lo / SECOND);
    let h = Math.ceil(hi / SECOND);
    while (h - l > 1) {
      const mid = Math.floor((l + h) / 2);
      if (this.offsetAt(mid * SECOND) === offset) l = mid;
      else h = mid;
    }
    return h * SECOND;
  }

  private tableFor(t: number): YearTable {
    const last = this.last;
    if (last !== undefined && t >= last.start && t < last.end) return last;
    const year = new Date(t).getUTCFullYear();
    let table = this.years.get(year);
    if (table === undefined) {
      table = this.buildYear(year);
      this.years.set(year, table);
    }
    this.last = table;
    return table;
  }

  private buildYear(year: number): YearTable {
    const start = utcYearStart(year);
    const end = utcYearStart(year + 1);
    const starts = [start];
    const offsets = [this.intlOffset(start)];
    let prevT = start;
    let prevOffset = offsets[0] as number;
    for (let t = start + DAY; ; t += DAY) {
      const sampleT = Math.min(t, end - SECOND);
      const offset = this.intlOffset(sampleT);
      if (offset !== prevOffset) {
        let l = prevT / SECOND;
        let h = sampleT / SECOND;
        while (h - l > 1) {
          const mid = Math.floor((l + h) / 2);
          if (this.intlOffset(mid * SECOND) === prevOffset) l = mid;
          else h = mid;
        }
        starts.push(h * SECOND);
        offsets.push(offset);
        prevOffset = offset;
      }
      prevT = sampleT;
      if (sampleT === end - SECOND) break;
    }
    return { start, end, starts, offsets };
  }

  private intlOffset(t: number): number {
    let era = 'AD';
    let y = 0;
    let mo = 0;
    let d = 0;
    let h = 0;
    let mi = 0;
    let s = 0;
    for (const part of this.format.formatToParts(t)) {
      switch (part.type) {
        case 'era':
          era = part.value;
          break;
        case 'year':
          y = Number(part.value);
          break;
        case 'month':
          mo = Number(part.value);
          break;
        case 'day':
          d = Number(part.value);
          break;
        case 'hour':
          h = Number(part.value);
          break;
        case 'minute':
          mi = Number(part.value);
          break;
        case 'second':
          s = Number(part.value);
          break;
        default:
          break;
      }
    }
    const fullYear = era === 'BC' || era === 'B' ? 1 - y : y;
    return wallMs(fullYear, mo, d, h, mi, s) - Math.floor(t / SECOND) * SECOND;
  }
}

function utcYearStart(year: number): number {
  return wallMs(year, 1, 1, 0, 0, 0);
}

/** Epoch-style milliseconds of a wall-clock time; unlike Date.UTC, years 0–99 are not moved to 19xx. */
export function wallMs(
  year: number,
  month: number,
  day: number,
  hour: number,
  minute: number,
  second: number,
): number {
  const date = new Date(0);
  date.setUTCFullYear(year, month - 1, day);
  date.setUTCHours(hour, minute, second, 0);
  return date.getTime();
}
