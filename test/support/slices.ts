/** jobs_done's slices for tests: attached as the maintenance role attaches them. */
import { pino } from 'pino';
import { Maintenance } from '../../src/maintenance/maintenance.ts';
import { jobSliceList } from '../../src/store/job-slices.ts';
import type { Pool } from '../../src/store/pool.ts';

/**
 * Attaches `count` slices of `size` ids after jobs_done_0, each as the ids drawn reach the middle of
 * the last one. Returns where the first of them starts: jobs_done_0's end.
 */
export async function attachSlices(pool: Pool, size: number, count: number): Promise<number> {
  const [zero] = await jobSliceList(pool);
  const end = zero?.to ?? 0;
  const log = pino({ level: 'silent' });
  const attach = new Maintenance({ pool, log, sliceIds: size, retention: { enabled: false } });
  try {
    for (let i = 0; i < count; i++) {
      await pool.query(`SELECT setval('jobs_id_seq', $1)`, [end + i * size - size / 2]);
      await attach.runPass();
    }
  } finally {
    await attach.stop();
  }
  return end;
}
