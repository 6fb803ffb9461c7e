/**
 * Tidemark's time core: pure functions from (schedule, time passed in) to fire times and
 * decisions. No I/O and no clock reads, so every rule here is tested with plain values.
 *
 * - compileSchedule({ spec, timeZone, dstGap, dstOverlap, anchor }) validates once and returns a
 *   CompiledSchedule (cron, interval or one-off) whose nextAfter(after) gives the first fire time
 *   strictly after `after`. Keep the compiled object: it holds the parsed cron and the zone's
 *   offset table, so nextAfter for a cron spec takes ~0.5 µs of CPU in UTC and 1–2.5 µs in a
 *   DST zone (`npm run bench schedule`).
 * - Specs: cron (5 or 6 fields, L/W/#, names, @nicknames; croner parses, matcher.ts finds the next
 *   matching wall-clock time with croner's semantics), intervals (`every 90s`, anchored, never
 *   drifting), one-offs (`at <ISO>`) and English phrases (phrases.ts) that compile to one of those.
 *   `canonical` parses back to the same schedule.
 * - Time zones and DST (docs/time-rules.md): wall-clock schedules read their fields in an IANA
 *   zone; a nonexistent local time shifts to the end of the gap or is skipped, a repeated one fires
 *   at the first copy or at both. Defaults follow classic cron: fixed hour → shift + first;
 *   wildcard or stepped hour → skip + both (elapsed time).
 * - Policies: planMisfire (all | latest | skip, cap, starting deadline), decideOverlap
 *   (allow | forbid | replace | buffer_one) and jitterOffsetMs (deterministic per schedule).
 * - Errors: SpecError with `.field` and `.reason`, e.g. "minute field: 61 is out of range 0-59".
 */
export { compileSchedule } from './compile.ts';
export { SpecError } from './errors.ts';
export { DstGap, DstOverlap, ScheduleKind, type CompileInput, type CompiledSchedule } from './types.ts';
export {
  DEFAULT_GRACE_MS,
  DEFAULT_MISFIRE_CAP,
  MisfirePolicy,
  planMisfire,
  type MisfireInput,
  type MisfirePlan,
} from './misfire.ts';
export { OverlapDecision, OverlapPolicy, decideOverlap, type OverlapState } from './overlap.ts';
export { jitterOffsetMs } from './jitter.ts';
export { SUPPORTED_PHRASES } from './phrases.ts';
export { formatLocal } from './describe.ts';
