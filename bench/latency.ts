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

/** Runs a measurement, with something beside it or not. */
export type Around = <T>(measure: () => Promise<T>) => Promise<T>;

const plain: Around = (measure) => measure();

/**
 * Milliseconds from enqueue to start for LATENCY_JOBS jobs on queue `latency` (emptied by the
 * caller). `around` runs the measurement, e.g. beside the maintenance role.
 */
export async function latencyMeasure(
  db: BenchDatabase,
  jobs: JobClient,
  around: Around = plain,
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
  around: Around = plain,
): Promise<LatencySample[]> {
  return (await latencyInterleaved([{ db, jobs }], count, around))[0] ?? [];
}

/** A database a latency measurement sends its jobs to, with a worker of its own. */
export interface LatencyTarget {
  db: BenchDatabase;
  jobs: JobClient;
}

/**
 * latencySamples on several databases in one run, job by job in turn (each at LATENCY_RATE), so
 * every database's jobs meet the machine's load of the same seconds: measured one after the other,
 * the p99 of one database moved by a third between runs of the same code. Returns each target's
 * samples, in the order given.
 */
export async function latencyInterleaved(
  targets: LatencyTarget[],
  count: number,
  around: Around = plain,
): Promise<LatencySample[][]> {
  const sentAt = targets.map(() => new Map<number, number>());
  const startedAt = targets.map(() => new Map<number, number>());
  const workers = targets.map(
    ({ db }, t) =>
      new Worker({
        pool: db.pool,
        connectionString: db.url,
        handlers: {
          ping: (ctx) => {
            startedAt[t]?.set(ctx.jobId, performance.now());
            return Promise.resolve();
          },
        },
        queues: [{ name: 'latency', concurrency: 50 }],
        log: createLogger('bench-worker'),
      }),
  );
  const allStarted = (n: number): boolean => startedAt.every((m) => m.size >= n);
  try {
    for (const worker of workers) await worker.start();
    const interval = 1000 / LATENCY_RATE / targets.length;
    const send = async (i: number, payload: object): Promise<number> => {
      const target = targets[i % targets.length] as LatencyTarget;
      return (await target.jobs.enqueue({ queue: 'latency', kind: 'ping', payload })).id;
    };
    for (let i = 0; i < LATENCY_WARMUP * targets.length; i++) {
      await send(i, { warmup: true });
      await pause(interval);
    }
    while (!allStarted(LATENCY_WARMUP)) await pause(10);
    for (const m of startedAt) m.clear();
    return await around(async () => {
      const t0 = performance.now();
      for (let i = 0; i < count * targets.length; i++) {
        const wait = t0 + i * interval - performance.now();
        if (wait > 0) await pause(wait);
        const sent = performance.now();
        sentAt[i % targets.length]?.set(await send(i, {}), sent);
      }
      while (!allStarted(count)) await pause(10);
      return sentAt.map((sent, t) =>
        [...sent].map(([id, ms]) => ({ sentMs: ms, ms: (startedAt[t]?.get(id) ?? Number.NaN) - ms })),
      );
    });
  } finally {
    for (const worker of workers) await worker.stop();
  }
}
