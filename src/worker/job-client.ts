/**
 * `client.jobs`: enqueue (one, many in one round trip, or inside the caller's transaction), read,
 * list, cancel, re-run, and the dead letter. Input is checked against the same schema as the HTTP
 * API's (src/contract/job.ts); bad input throws JobValidationError naming every bad field, and
 * nothing is written then. A read of one job by id returns null when it does not exist; an action
 * on a missing id throws JobNotFoundError.
 */
import { jobFromClient, type EnqueueInput } from '../contract/job.ts';
import { payloadFilterOf } from '../contract/payload-filter.ts';
import { NotFoundError } from '../errors.ts';
import type { InputProblem } from '../input.ts';
import { jobAttemptListByJobs, type JobAttemptRow } from '../store/job-attempts.ts';
import {
  jobCancel,
  jobDeadIds,
  jobGet,
  jobList,
  jobListDead,
  jobRetryMany,
  type AttemptOutcome,
  type JobRow,
  type JobState,
} from '../store/jobs.ts';
import { jobInsertMany, type JobInsert, type JobInserted } from '../store/job-insert.ts';
import { jobSearch } from '../store/job-search.ts';
import type { Pool, Queryable } from '../store/pool.ts';
import { JobValidationError } from './errors.ts';

export type { EnqueueInput } from '../contract/job.ts';
export type { AttemptOutcome, JobState } from '../store/jobs.ts';

/** A job as the client returns it. */
export interface Job {
  id: number;
  queue: string;
  kind: string;
  tenantId: string;
  payload: unknown;
  priority: number;
  state: JobState;
  /** Not before this instant. */
  runAt: Date;
  /** Attempts started so far. */
  attempt: number;
  maxAttempts: number;
  timeoutMs: number | null;
  heartbeatMs: number | null;
  backoffBaseMs: number | null;
  backoffMaxMs: number | null;
  idempotencyKey: string;
  /** The worker holding a live lease; only a running job has one. */
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  progress: unknown;
  heartbeatAt: Date | null;
  lastError: string | null;
  /** The schedule whose occurrence made this job, if one did. */
  scheduleId: string | null;
  cancelRequestedAt: Date | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/** One try of a job. */
export interface JobAttempt {
  jobId: number;
  attempt: number;
  worker: string;
  startedAt: Date;
  finishedAt: Date | null;
  /** finished − started, in ms; null while unfinished. */
  durationMs: number | null;
  /** null: the attempt is still running. */
  outcome: AttemptOutcome | null;
  error: string | null;
}

export interface JobWithAttempts extends Job {
  attempts: JobAttempt[];
}

/** What an enqueue answers for each job. */
export interface EnqueueResult {
  id: number;
  queue: string;
  idempotencyKey: string;
  /** false when a job with this key already existed in the queue: that job is returned instead. */
  created: boolean;
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

export interface JobSearchOptions {
  queue?: string;
  state?: JobState;
  tenantId?: string;
  kind?: string;
  /**
   * Jobs whose payload contains this JSON object (`{ customer: 42 }`), or the same written as an
   * operator types it in the dashboard: `customer=42 region=eu`, `order.id=A-17`, `{"customer": 42}`.
   */
  payload?: Record<string, unknown> | string;
  /** The page below this id: the previous page's `next`. */
  beforeId?: number;
  /** Default 100, at most 1,000. */
  limit?: number;
}

export interface JobSearchResult {
  /** Newest first. */
  items: Job[];
  /** Pass as `beforeId` for the next page; null when nothing is left below. */
  next: number | null;
  /**
   * A kind or payload filter read its bound (10,000 jobs) before `limit` of them matched: more may
   * match below `next`. Neither is indexed, so a search reads a bounded slice of the history a page.
   */
  cutShort: boolean;
}

const SEARCH_OPTIONS = new Set(['queue', 'state', 'tenantId', 'kind', 'payload', 'beforeId', 'limit']);

/** An action named a job id that does not exist. */
export class JobNotFoundError extends NotFoundError {
  override name = 'JobNotFoundError';
  constructor(readonly jobId: number) {
    super(`job ${jobId} does not exist`);
  }
}

const STATES = new Set(['scheduled', 'available', 'running', 'succeeded', 'failed', 'dead', 'cancelled']);

function jobOf(row: JobRow): Job {
  return {
    id: row.id,
    queue: row.queue,
    kind: row.kind,
    tenantId: row.tenantId,
    payload: row.payload,
    priority: row.priority,
    state: row.state,
    runAt: row.runAt,
    attempt: row.attempt,
    maxAttempts: row.maxAttempts,
    timeoutMs: row.timeoutMs,
    heartbeatMs: row.heartbeatMs,
    backoffBaseMs: row.backoffBaseMs,
    backoffMaxMs: row.backoffMaxMs,
    idempotencyKey: row.idempotencyKey,
    leaseOwner: row.leaseOwner,
    leaseExpiresAt: row.leaseExpiresAt,
    progress: row.progress,
    heartbeatAt: row.heartbeatAt,
    lastError: row.lastError,
    scheduleId: row.scheduleId,
    cancelRequestedAt: row.cancelRequestedAt,
    createdAt: row.createdAt,
    startedAt: row.startedAt,
    finishedAt: row.finishedAt,
  };
}

function attemptOf(row: JobAttemptRow): JobAttempt {
  return { ...row };
}

function resultOf(row: JobInserted): EnqueueResult {
  return { id: row.id, queue: row.queue, idempotencyKey: row.idempotencyKey, created: row.created };
}

function invalid(field: string, reason: string): never {
  throw new JobValidationError([{ field, reason }]);
}

function checkLimit(limit: number | undefined, field: string, max: number): number {
  const value = limit ?? 100;
  if (!Number.isInteger(value) || value < 1 || value > max) {
    invalid(field, `must be an integer from 1 to ${max}, got ${String(limit)}`);
  }
  return value;
}

function checkId(id: number, field: string): void {
  if (!Number.isSafeInteger(id) || id < 1) invalid(field, `must be a positive integer, got ${id}`);
}

/** The rows for `jobs`, or JobValidationError naming every bad field (up to 20) of every bad job. */
function insertsOf(jobs: readonly EnqueueInput[], batch: boolean): JobInsert[] {
  const rows: JobInsert[] = [];
  const problems: InputProblem[] = [];
  for (const [i, job] of jobs.entries()) {
    const checked = jobFromClient(job, batch ? `jobs.${i}` : '');
    if (Array.isArray(checked)) {
      problems.push(...checked);
      if (problems.length >= 20) break;
    } else rows.push(checked);
  }
  if (problems.length > 0) throw new JobValidationError(problems.slice(0, 20));
  return rows;
}

export class JobClient {
  readonly #pool: Pool;

  constructor(pool: Pool) {
    this.#pool = pool;
  }

  /** Enqueues one job; a key already present in the queue returns that job (`created: false`). */
  async enqueue(job: EnqueueInput): Promise<EnqueueResult> {
    return this.enqueueTx(this.#pool, job);
  }

  /** As enqueue, inside the caller's transaction: the job exists only if that transaction commits. */
  async enqueueTx(tx: Queryable, job: EnqueueInput): Promise<EnqueueResult> {
    const [row] = await jobInsertMany(tx, insertsOf([job], false));
    if (row === undefined) throw new Error('enqueue returned nothing');
    return resultOf(row);
  }

  /** Enqueues many in one statement; all are checked first, so one bad job writes none. */
  async enqueueMany(jobs: readonly EnqueueInput[]): Promise<EnqueueResult[]> {
    return this.enqueueManyTx(this.#pool, jobs);
  }

  async enqueueManyTx(tx: Queryable, jobs: readonly EnqueueInput[]): Promise<EnqueueResult[]> {
    // Callers from plain JavaScript may pass anything.
    const input: unknown = jobs;
    if (!Array.isArray(input)) invalid('jobs', 'must be an array');
    return (await jobInsertMany(tx, insertsOf(jobs, true))).map(resultOf);
  }

  /** The job with its full attempt history, or null when there is no such job. */
  async get(id: number): Promise<JobWithAttempts | null> {
    checkId(id, 'id');
    const job = await jobGet(this.#pool, id);
    if (job === undefined) return null;
    const attempts = await jobAttemptListByJobs(this.#pool, [id]);
    return { ...jobOf(job), attempts: attempts.map(attemptOf) };
  }

  /** Newest first; page with `beforeId` set to the last id seen. */
  async list(options: JobListOptions = {}): Promise<Job[]> {
    if (options.state !== undefined && !STATES.has(options.state)) {
      invalid('state', `must be one of ${[...STATES].join(', ')}, got ${options.state}`);
    }
    if (options.beforeId !== undefined) checkId(options.beforeId, 'beforeId');
    const rows = await jobList(this.#pool, { ...options, limit: checkLimit(options.limit, 'limit', 1000) });
    return rows.map(jobOf);
  }

  /**
   * A page of jobs, newest first, by queue, state, tenant, kind and payload. Bad options (an
   * unknown one, a payload filter that does not parse) throw JobValidationError naming the option.
   */
  async search(options: JobSearchOptions = {}): Promise<JobSearchResult> {
    for (const key of Object.keys(options)) {
      if (!SEARCH_OPTIONS.has(key))
        invalid(key, `unknown option (expected one of ${[...SEARCH_OPTIONS].join(', ')})`);
    }
    if (options.state !== undefined && !STATES.has(options.state)) {
      invalid('state', `must be one of ${[...STATES].join(', ')}, got ${String(options.state)}`);
    }
    for (const name of ['queue', 'tenantId', 'kind'] as const) {
      const v: unknown = options[name];
      if (v !== undefined && (typeof v !== 'string' || v.length === 0 || v.length > 200)) {
        invalid(name, 'must be a non-empty string of at most 200 characters');
      }
    }
    if (options.beforeId !== undefined) checkId(options.beforeId, 'beforeId');
    let payload: Record<string, unknown> | undefined;
    if (options.payload !== undefined) {
      const parsed = payloadFilterOf(options.payload);
      if ('problem' in parsed) invalid('payload', parsed.problem);
      payload = parsed.filter;
    }
    const page = await jobSearch(this.#pool, {
      queue: options.queue,
      state: options.state,
      tenantId: options.tenantId,
      kind: options.kind,
      payload,
      beforeId: options.beforeId,
      limit: checkLimit(options.limit, 'limit', 1000),
    });
    return { items: page.rows.map(jobOf), next: page.next, cutShort: page.cutShort };
  }

  /**
   * Cancels a job: a pending one at once; a running one through its handler's AbortSignal on
   * whichever worker holds it (NOTIFY), finished as `cancelled` when the handler stops. Returns the
   * job as it is after the call (a finished job is returned unchanged).
   */
  async cancel(id: number): Promise<Job> {
    checkId(id, 'id');
    const result = await jobCancel(this.#pool, id);
    if (result === undefined) throw new JobNotFoundError(id);
    return jobOf(result.job);
  }

  /**
   * Runs a dead, cancelled or failed-awaiting-retry job again now, with `extraAttempts` (default 1)
   * more attempts than it has used. Returns false if the job is in another state.
   */
  async retry(id: number, options: { extraAttempts?: number } = {}): Promise<boolean> {
    checkId(id, 'id');
    const extra = checkLimit(options.extraAttempts ?? 1, 'extraAttempts', 1000);
    if ((await jobRetryMany(this.#pool, [id], extra)).length === 1) return true;
    if ((await jobGet(this.#pool, id)) === undefined) throw new JobNotFoundError(id);
    return false;
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
    return jobs.map((j) => ({
      ...jobOf(j),
      attempts: attempts.filter((a) => a.jobId === j.id).map(attemptOf),
    }));
  }
}
