/** What a wall-clock schedule does with a local time that does not exist (spring-forward gap). */
export const DstGap = {
  /** Fire once, at the first instant after the gap. */
  shift: 'shift',
  /** Do not fire. */
  skip: 'skip',
} as const;
export type DstGap = (typeof DstGap)[keyof typeof DstGap];

/** What a wall-clock schedule does with a local time that happens twice (fall-back overlap). */
export const DstOverlap = {
  /** Fire once, at the first of the two instants. */
  first: 'first',
  /** Fire at both instants. */
  both: 'both',
} as const;
export type DstOverlap = (typeof DstOverlap)[keyof typeof DstOverlap];

export const ScheduleKind = { cron: 'cron', interval: 'interval', once: 'once' } as const;
export type ScheduleKind = (typeof ScheduleKind)[keyof typeof ScheduleKind];

export interface CompileInput {
  spec: string;
  /** IANA zone the schedule's wall-clock times are read in. Default 'UTC'. */
  timeZone?: string;
  /** Overrides the default gap rule (shift for a fixed hour, skip for a wildcard or stepped hour). */
  dstGap?: DstGap;
  /** Overrides the default overlap rule (first for a fixed hour, both for a wildcard or stepped hour). */
  dstOverlap?: DstOverlap;
  /** Intervals fire at anchor + k × period for k ≥ 0. Default: the Unix epoch, so restarts never shift them. */
  anchor?: Date;
}

export interface CompiledSchedule {
  readonly kind: ScheduleKind;
  /** What the spec compiled to: a cron expression, `every 90s`, or `at <UTC ISO>`. Parses back to the same schedule. */
  readonly canonical: string;
  /** Human text, including the zone, for echoing back what the user registered. */
  readonly description: string;
  /** Canonical IANA name of the zone (aliases resolved, e.g. 'utc' → 'UTC'). */
  readonly timeZone: string;
  /** The DST rules in force for a wall-clock schedule; null for intervals and absolute one-offs, which DST cannot touch. */
  readonly dst: { readonly gap: DstGap; readonly overlap: DstOverlap } | null;
  /** Interval anchor; null for other kinds. */
  readonly anchor: Date | null;
  /** The first fire time strictly after `after`, or null when the schedule never fires again. */
  nextAfter(after: Date): Date | null;
}
