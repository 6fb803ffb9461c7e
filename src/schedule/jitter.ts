/**
 * Deterministic jitter: a per-schedule delay in [0, maxJitterMs), the same on every process and
 * after every restart, so thousands of schedules on `0 * * * *` spread over the window instead of
 * stampeding at :00, and a restart does not reshuffle them. The occurrence keeps its nominal fire
 * time as its identity (the unique key); jitter only delays when it is dispatched.
 */

/** cyrb53: a fast 53-bit string hash with good avalanche; not cryptographic, which jitter does not need. */
function hash53(text: string): number {
  let h1 = 0xdeadbeef;
  let h2 = 0x41c6ce57;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    h1 = Math.imul(h1 ^ ch, 2654435761);
    h2 = Math.imul(h2 ^ ch, 1597334677);
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
  return 4294967296 * (2097151 & h2) + (h1 >>> 0);
}

export function jitterOffsetMs(scheduleId: string, maxJitterMs: number): number {
  if (!Number.isSafeInteger(maxJitterMs) || maxJitterMs < 0) {
    throw new RangeError(`jitterOffsetMs: maxJitterMs must be a non-negative integer, got ${maxJitterMs}`);
  }
  if (maxJitterMs === 0) return 0;
  return hash53(scheduleId) % maxJitterMs;
}
