/**
 * Turning a sequence of matching local wall-clock times into fire instants under the DST rules
 * (docs/time-rules.md). A wall time maps to one instant, to two (fall-back) or to none (spring-
 * forward); the gap and overlap rules pick which instants fire. Because of `both` and of look-back
 * across a fall-back, instants are not monotonic in wall time, so the search below keeps the
 * smallest candidate and stops once no later wall time can beat it.
 */
import type { Zone } from './zone.ts';
import type { DstGap, DstOverlap } from './types.ts';

/** Smallest matching wall time strictly after `wall` (both epoch-style ms of the wall clock), or null. */
export type NextWall = (wall: number) => number | null;

export interface DstRules {
  gap: DstGap;
  overlap: DstOverlap;
}

/** The instants a wall time fires at, ascending. */
export function fireInstants(zone: Zone, wall: number, rules: DstRules): number[] {
  const r = zone.resolveLocal(wall);
  switch (r.kind) {
    case 'unique':
      return [r.at];
    case 'overlap':
      return rules.overlap === 'both' ? [r.earlier, r.later] : [r.earlier];
    case 'gap':
      return rules.gap === 'shift' ? [r.gapEnd] : [];
  }
}

/** First fire instant strictly after `after` for a wall-clock schedule in `zone`. */
export function nextZonedFire(zone: Zone, nextWall: NextWall, after: number, rules: DstRules): number | null {
  const offsetAtAfter = zone.offsetAt(after);
  const wallAfter = after + offsetAtAfter;

  // Find any candidate: the first matching wall time after `wallAfter` that fires after `after`.
  let best: number | null = null;
  let wall: number | null = wallAfter;
  while (best === null) {
    wall = nextWall(wall);
    if (wall === null) return null;
    for (const t of fireInstants(zone, wall, rules)) if (t > after && (best === null || t < best)) best = t;
  }
  // Without an offset change in (after, best], wall time and instants advance together, so the
  // first matching wall time is the answer. This is the path taken on all but a few days a year.
  if (!zone.changesWithin(after, best)) return best;

  // Across a fall-back, an instant after `after` can have a wall time before `wallAfter` (the second
  // copy of the repeated hour), so rescan from as far back as the offset drops; and a later wall
  // time can only beat `best` while wall − (largest offset) is still below it.
  const { min, max } = zone.offsetRange(after, best);
  wall = wallAfter - (offsetAtAfter - min) - 1;
  for (;;) {
    wall = nextWall(wall);
    if (wall === null || wall - max >= best) return best;
    for (const t of fireInstants(zone, wall, rules)) if (t > after && t < best) best = t;
  }
}
