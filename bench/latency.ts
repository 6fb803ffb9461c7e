/**
 * Enqueue → handler start: jobs enqueued one at a time at a steady rate into a running worker,
 * each measured from before its enqueue call to its handler's first line. Shared by the worker
 * bench and the history bench.
 */
import { performance } from 'node:perf_hooks';
import { createLogger } from '../src/log.ts';
import type { JobClient } from '../src/worker/job-client.ts';
import { Worker } from '../src/worker/worker.ts';
import type { BenchDatabase } from './db.ts';

export const LATENCY_JOBS = 1_000;
export const LATENCY_RATE = 200;
/**
 * Jobs sent through the running worker before the measurement starts: the first claims of a new
 * process plan and prepare their statements on fresh connections (40-90 ms for the first jobs).
 */
export const LATENCY_WARMUP = 50;

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** One job's enqueue → start: when its enqueue call began (performance.now()) and how long it took to start. */
export interface LatencySample {
  sentMs: number;
  ms: number;
}

/**
 * Milliseconds from enqueue to start for LATENCY_JOBS jobs on queue `latency` (emptied by the
 * caller). `around` runs the measurement, e.g. beside the maintenance role.
 */
export async function latencyMeasure(
  db: BenchDatabase,
  jobs: JobClient,
  around: (measure: () => Promise<LatencySample[]>) => Promise<LatencySample[]> = (measure) => measure(),
): Promise<number[]> {
  return (await latencySamples(db, jobs, LATENCY_JOBS, around)).map((s) => s.ms);
}

/**
 * `count` jobs enqueued at LATENCY_RATE on queue `latency` (emptied by the caller), each with the
 * time its enqueue began, so a caller can tell which ran beside something and which did not.
 */
export async function latencySamples(
  db: BenchDatabase,
  jobs: JobClient,
  count: number,
  around: (measure: () => Promise<LatencySample[]>) => Promise<LatencySample[]> = (measure) => measure(),
): Promise<LatencySample[]> {
  const sentAt = new Map<number, number>();
  const startedAt = new Map<number, number>();
  const worker = new Worker({
    pool: db.pool,
    connectionString: db.url,
    handlers: {
      ping: (ctx) => {
        startedAt.set(ctx.jobId, performance.now());
        return Promise.resolve();
      },
    },
    queues: [{ name: 'latency', concurrency: 50 }],
    log: createLogger('bench-worker'),
  });
  await worker.start();
  try {
    const interval = 1000 / LATENCY_RATE;
    for (let i = 0; i < LATENCY_WARMUP; i++) {
      await jobs.enqueue({ queue: 'latency', kind: 'ping', payload: { warmup: true } });
      await pause(interval);
    }
    while (startedAt.size < LATENCY_WARMUP) await pause(10);
    startedAt.clear();
    return await around(async () => {
      const t0 = performance.now();
      for (let i = 0; i < count; i++) {
        const wait = t0 + i * interval - performance.now();
        if (wait > 0) await pause(wait);
        const sent = performance.now();
        const { id } = await jobs.enqueue({ queue: 'latency', kind: 'ping' });
        sentAt.set(id, sent);
      }
      while (startedAt.size < count) await pause(10);
      return [...sentAt].map(([id, sent]) => ({
        sentMs: sent,
        ms: (startedAt.get(id) ?? Number.NaN) - sent,
      }));
    });
  } finally {
    await worker.stop();
  }
}
