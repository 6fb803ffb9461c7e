/** Store round trips: the floor under every other number in this table. */
import { performance } from 'node:perf_hooks';
import { benchDatabase } from './db.ts';
import { median, percentile, type Bench } from './table.ts';

const ROUNDS = 2000;

export const bench: Bench = async () => {
  const db = await benchDatabase();
  try {
    const client = await db.pool.connect();
    const samples: number[] = [];
    try {
      for (let i = 0; i < ROUNDS; i++) {
        const t0 = performance.now();
        await client.query({ name: 'bench_select_1', text: 'SELECT 1' });
        samples.push(performance.now() - t0);
      }
    } finally {
      client.release();
    }
    const p50 = median(samples);
    return [
      {
        group: 'store',
        name: `round trip (SELECT 1, one connection, ${ROUNDS}×)`,
        value: `p50 ${(p50 * 1000).toFixed(0)} µs, p99 ${(percentile(samples, 99) * 1000).toFixed(0)} µs`,
        note: `${Math.round(1000 / p50)} sequential round trips/s`,
      },
    ];
  } finally {
    await db.close();
  }
};
