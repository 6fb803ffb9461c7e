/** Helpers for the worker tests: an in-process worker stopped after the file, and polling waits. */
import { after } from 'node:test';
import type { Pool } from '../../src/store/pool.ts';
import type { Handlers } from '../../src/worker/handler.ts';
import { Worker, type WorkerOptions } from '../../src/worker/worker.ts';
import { createLogger } from '../../src/log.ts';

export async function startWorker(
  db: { pool: Pool; url: string },
  handlers: Handlers,
  options: Partial<WorkerOptions> = {},
): Promise<Worker> {
  const worker = new Worker({
    pool: db.pool,
    connectionString: db.url,
    handlers,
    queues: [{ name: 'q', concurrency: 4 }],
    pollMs: 50,
    leaseMs: 2000,
    log: createLogger('test-worker'),
    ...options,
  });
  await worker.start();
  after(() => worker.stop());
  return worker;
}

/** Polls `fn` until it returns a value other than undefined/false; fails after `timeoutMs`. */
export async function waitUntil<T>(
  what: string,
  fn: () => Promise<T | undefined | false>,
  timeoutMs = 15_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await fn();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

export async function jobState(pool: Pool, id: number): Promise<string | undefined> {
  const { rows } = await pool.query<{ state: string }>('SELECT state FROM jobs WHERE id = $1', [id]);
  return rows[0]?.state;
}

export async function attemptsOf(
  pool: Pool,
  id: number,
): Promise<{ attempt: number; outcome: string; worker: string; error: string | null }[]> {
  const { rows } = await pool.query<{
    attempt: number;
    outcome: string;
    worker: string;
    error: string | null;
  }>('SELECT attempt, outcome, worker, error FROM job_attempt_history WHERE job_id = $1 ORDER BY attempt', [
    id,
  ]);
  return rows;
}

export function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}
