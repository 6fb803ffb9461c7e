/**
 * Fixed-period schedules: fire at anchor + k × period (k ≥ 0). The fire time is computed from the
 * anchor, never from the previous run, so late or slow runs cannot make it drift; elapsed time is
 * all that counts, so DST and zones do not apply.
 */
import { SpecError } from './errors.ts';
import type { CompiledSchedule } from './types.ts';
import { describeSeconds, isoUtc } from './describe.ts';

const TERSE_UNITS: Record<string, number> = { s: 1, m: 60, h: 3600, d: 86_400 };

/** Parses the terse form `every 90s` / `every 15m` / `every 2h` / `every 1d`; null when `spec` is not in that form. */
export function parseTerseInterval(spec: string): number | null {
  const m = /^every\s+(\d+)\s*([smhd])$/i.exec(spec.trim());
  if (!m) return null;
  return Number(m[1]) * (TERSE_UNITS[(m[2] as string).toLowerCase()] as number);
}

/** `every 900s` → `every 15m`: the largest unit that divides the period exactly. */
function canonicalInterval(seconds: number): string {
  for (const unit of ['d', 'h', 'm'] as const) {
    const size = TERSE_UNITS[unit] as number;
    if (seconds % size === 0) return `every ${seconds / size}${unit}`;
  }
  return `every ${seconds}s`;
}

export class IntervalSchedule implements CompiledSchedule {
  readonly kind = 'interval' as const;
  readonly canonical: string;
  readonly description: string;
  readonly timeZone: string;
  readonly dst = null;
  readonly anchor: Date;
  private readonly periodMs: number;
  private readonly anchorMs: number;

  constructor(seconds: number, anchor: Date, timeZone: string) {
    if (!Number.isSafeInteger(seconds) || seconds < 1) {
      throw new SpecError(
        'spec',
        `an interval must be a whole number of seconds, at least 1; got ${seconds}`,
      );
    }
    this.periodMs = seconds * 1000;
    this.anchor = new Date(anchor.getTime());
    this.anchorMs = anchor.getTime();
    this.timeZone = timeZone;
    this.canonical = canonicalInterval(seconds);
    this.description = `every ${describeSeconds(seconds)}, counted from ${isoUtc(this.anchorMs)}`;
  }

  nextAfter(after: Date): Date | null {
    const t = after.getTime();
    if (Number.isNaN(t)) throw new RangeError('nextAfter: invalid Date');
    if (t < this.anchorMs) return new Date(this.anchorMs);
    const k = Math.floor((t - this.anchorMs) / this.periodMs) + 1;
    return new Date(this.anchorMs + k * this.periodMs);
  }
}
