/**
 * `client.jobs`: enqueue (one, many in one round trip, or inside the caller's transaction), read,
 * list, cancel, re-run, and the dead letter. Bad input throws JobValidationError naming the field;
 * nothing is written then.
 */
import { jobAttemptListByJobs, type JobAttemptRow } from '../store/job-attempts.ts';
import {
  jobCancel,
  jobDeadIds,
  jobGet,
  jobList,
  jobListDead,
  jobRetryMany,
  type JobRow,
  type JobState,
} from '../store/jobs.ts';
import { jobInsertMany, type JobInserted } from '../store/job-insert.ts';
import type { Pool, Queryable } from '../store/pool.ts';
import { JobValidationError } from './errors.ts';
import { validateEnqueue, type EnqueueInput } from './validate.ts';

export type { EnqueueInput } from './validate.ts';
export type { JobRow, JobState } from '../store/jobs.ts';
export type { JobInserted } from '../store/job-insert.ts';
export type { JobAttemptRow } from '../store/job-attempts.ts';

export interface JobWithAttempts extends JobRow {
  attempts: JobAttemptRow[];
}

export interface JobListOptions {
  queue?: string;
  state?: JobState;
  tenantId?: string;
  kind?: string;
  beforeId?: number;
  /** Default 100, at most 1,000. */
  limit?: number;
}

const STATES = new Set(['scheduled', 'available', 'running', 'succeeded', 'failed', 'dead', 'cancelled']);

function checkLimit(limit: number | undefined, field: string, max: number): number {
  const value = limit ?? 100;
  if (!Number.isInteger(value) || value < 1 || value > max) {
    throw new JobValidationError(`${field}: must be an integer from 1 to ${max}, got ${String(limit)}`);
  }
  return value;
}

function checkId(id: number, field: string): void {
  if (!Number.isSafeInteger(id) || id < 1)
    throw new JobValidationError(`${field}: must be a positive integer, got ${id}`);
}

export class JobClient {
  readonly #pool: Pool;

  constructor(pool: Pool) {
    this.#pool = pool;
  }

  /** Enqueues one job; a key already present in the queue returns that job (`created: false`). */
  async enqueue(job: EnqueueInput): Promise<JobInserted> {
    return this.enqueueTx(this.#pool, job);
  }

  /** As enqueue, inside the caller's transaction: the job exists only if that transaction commits. */
  async enqueueTx(tx: Queryable, job: EnqueueInput): Promise<JobInserted> {
    const [row] = await jobInsertMany(tx, [validateEnqueue(job, '')]);
    if (row === undefined) throw new Error('enqueue returned nothing');
    return row;
  }

  /** Enqueues many in one statement; all are validated first, so one bad job writes none. */
  async enqueueMany(jobs: readonly EnqueueInput[]): Promise<JobInserted[]> {
    return this.enqueueManyTx(this.#pool, jobs);
  }

  async enqueueManyTx(tx: Queryable, jobs: readonly EnqueueInput[]): Promise<JobInserted[]> {
    // Callers from plain JavaScript may pass anything.
    const input: unknown = jobs;
    if (!Array.isArray(input)) throw new JobValidationError('jobs: must be an array');
    return jobInsertMany(
      tx,
      jobs.map((j, i) => validateEnqueue(j, `jobs[${i}]`)),
    );
  }

  /** The job with its full attempt history, or undefined. */
  async get(id: number): Promise<JobWithAttempts | undefined> {
    checkId(id, 'id');
    const job = await jobGet(this.#pool, id);
    if (job === undefined) return undefined;
    return { ...job, attempts: await jobAttemptListByJobs(this.#pool, [id]) };
  }

  /** Newest first; page with `beforeId` set to the last id seen. */
  async list(options: JobListOptions = {}): Promise<JobRow[]> {
    if (options.state !== undefined && !STATES.has(options.state)) {
      throw new JobValidationError(`state: must be one of ${[...STATES].join(', ')}, got ${options.state}`);
    }
    if (options.beforeId !== undefined) checkId(options.beforeId, 'beforeId');
    return jobList(this.#pool, { ...options, limit: checkLimit(options.limit, 'limit', 1000) });
  }

  /**
   * Cancels a job: a pending one at once; a running one through its handler's AbortSignal on
   * whichever worker holds it (NOTIFY), finished as `cancelled` when the handler stops. Returns the
   * job as it is after the call, or undefined if there is no such job.
   */
  async cancel(id: number): Promise<JobRow | undefined> {
    checkId(id, 'id');
    return (await jobCancel(this.#pool, id))?.job;
  }

  /**
   * Runs a dead, cancelled or failed-awaiting-retry job again now, with `extraAttempts` (default 1)
   * more attempts than it has used. Returns false if the job is in another state (or absent).
   */
  async retry(id: number, options: { extraAttempts?: number } = {}): Promise<boolean> {
    checkId(id, 'id');
    const extra = checkLimit(options.extraAttempts ?? 1, 'extraAttempts', 1000);
    return (await jobRetryMany(this.#pool, [id], extra)).length === 1;
  }

  /** Re-runs dead jobs in bulk (oldest death first), optionally of one queue. Returns the ids. */
  async retryDead(
    options: { queue?: string; limit?: number; extraAttempts?: number } = {},
  ): Promise<number[]> {
    const limit = checkLimit(options.limit ?? 1000, 'limit', 100_000);
    const extra = checkLimit(options.extraAttempts ?? 1, 'extraAttempts', 1000);
    const ids = await jobDeadIds(this.#pool, options.queue, limit);
    return jobRetryMany(this.#pool, ids, extra);
  }

  /** The dead letter, newest first, each job with its last error and full attempt history. */
  async deadLetter(options: { queue?: string; limit?: number } = {}): Promise<JobWithAttempts[]> {
    const jobs = await jobListDead(this.#pool, options.queue, checkLimit(options.limit, 'limit', 1000));
    const attempts = await jobAttemptListByJobs(
      this.#pool,
      jobs.map((j) => j.id),
    );
    return jobs.map((j) => ({ ...j, attempts: attempts.filter((a) => a.jobId === j.id) }));
  }
}
