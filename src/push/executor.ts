/**
 * The HTTP push executor: runs jobs that target a URL (kind `http.post`, see target.ts) by POSTing
 * their body with `Idempotency-Key` (the job's key, identical on every attempt), `Tidemark-Job-Id`,
 * `Tidemark-Attempt` and, when the job has a deadline, `Tidemark-Deadline`.
 *
 * Outcome rules: 2xx succeeds; 408, 429, 5xx, network errors and timeouts are retried under the
 * job's retry policy (a `Retry-After` longer than the backoff wins); any other status fails the job
 * without retry (dead letter). Long-running targets report progress through the pull API's
 * heartbeat route with their job id.
 *
 * It claims, finishes and renews leases through the same store statements as the TypeScript worker
 * (remote-worker.ts), so every write is conditioned on still owning the attempt. Outbound requests
 * have a timeout (the job's own, capped by `requestTimeoutMs`) and at most `perHostConcurrency` run
 * against one host at a time.
 */
import { randomUUID } from 'node:crypto';
import type { Clock } from '../clock.ts';
import { systemClock } from '../clock.ts';
import type { Logger } from '../log.ts';
import { jobPromoteDue, jobReapExpired, leaseRenewMany, type JobClaimed } from '../store/jobs.ts';
import { withTransaction, type Pool } from '../store/pool.ts';
import { HostLimiter } from './host-limiter.ts';
import { remoteClaim, remoteComplete, remoteFail } from './remote-worker.ts';
import { PUSH_KIND, PUSH_QUEUE, pushPayloadParse } from './target.ts';

export interface PushExecutorOptions {
  pool: Pool;
  clock?: Clock;
  log: Logger;
  /** Queues whose jobs are push jobs. Default ['http']. */
  queues?: string[];
  /** Most requests in flight in this process. Default 64. */
  maxInFlight?: number;
  /** Most requests in flight to one host (host:port). Default 8. */
  perHostConcurrency?: number;
  /** Longest a request may take, whatever the job's own timeout. Default 30 s. */
  requestTimeoutMs?: number;
  /** Lease per claimed job, renewed every third of it while the request runs. Default 30 s. */
  leaseMs?: number;
  /** How often to look for work when there was none. Default 500 ms. */
  pollMs?: number;
}

interface Held {
  job: JobClaimed;
  controller: AbortController;
}

/** How a delivery ended, before it is written. */
type Outcome =
  | { ok: true }
  | { ok: false; retryable: boolean; timedOut: boolean; error: string; retryAfterMs: number | null };

const RETRYABLE_STATUS = (status: number): boolean => status === 408 || status === 429 || status >= 500;

/** Retry-After as seconds or an HTTP date; null when absent or unreadable. */
export function retryAfterMs(header: string | null, nowMs: number): number | null {
  if (header === null) return null;
  const trimmed = header.trim();
  if (/^\d+$/.test(trimmed)) return Number(trimmed) * 1000;
  const at = Date.parse(trimmed);
  return Number.isNaN(at) ? null : Math.max(0, at - nowMs);
}

export class PushExecutor {
  readonly id = `push-${randomUUID()}`;
  readonly #pool: Pool;
  readonly #clock: Clock;
  readonly #log: Logger;
  readonly #queues: string[];
  readonly #maxInFlight: number;
  readonly #requestTimeoutMs: number;
  readonly #leaseMs: number;
  readonly #pollMs: number;
  readonly #hosts: HostLimiter;
  readonly #held = new Map<number, Held>();
  #cursors: Record<string, string> = {};
  #stopping = false;
  #wake: (() => void) | undefined;
  #loops: Promise<void>[] = [];

  constructor(options: PushExecutorOptions) {
    this.#pool = options.pool;
    this.#clock = options.clock ?? systemClock;
    this.#log = options.log;
    this.#queues = options.queues ?? [PUSH_QUEUE];
    this.#maxInFlight = options.maxInFlight ?? 64;
    this.#hosts = new HostLimiter(options.perHostConcurrency ?? 8);
    this.#requestTimeoutMs = options.requestTimeoutMs ?? 30_000;
    this.#leaseMs = options.leaseMs ?? 30_000;
    this.#pollMs = options.pollMs ?? 500;
  }

  start(): void {
    this.#loops = [this.#claimLoop(), this.#leaseLoop()];
  }

  /** Stops claiming, aborts nothing: requests in flight finish and are recorded. */
  async stop(): Promise<void> {
    this.#stopping = true;
    this.#wake?.();
    await Promise.all(this.#loops);
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /** true when woken, false when `ms` passed first. */
  #sleep(ms: number): Promise<boolean> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => resolve(false), ms);
      this.#wake = () => {
        clearTimeout(timer);
        resolve(true);
      };
    });
  }

  async #claimLoop(): Promise<void> {
    // The next claim is the timed poll after one that found nothing (JobClaimParams.poll).
    let poll = false;
    while (!this.#stopping) {
      let claimed = 0;
      try {
        // The worker's maintenance does these too; running them here as well means push jobs
        // retry and recover even where no TypeScript worker runs. Both are safe to run anywhere.
        await jobPromoteDue(this.#pool, 1000);
        // In a transaction: a reaped workflow node's failure commits with its job's.
        await withTransaction(this.#pool, (tx) => jobReapExpired(tx, 1000));
        const free = this.#maxInFlight - this.#held.size;
        if (free > 0) {
          const { jobs, cursors } = await remoteClaim(this.#pool, {
            owner: this.id,
            queues: this.#queues,
            limit: free,
            leaseMs: this.#leaseMs,
            cursors: this.#cursors,
            poll,
          });
          this.#cursors = cursors;
          claimed = jobs.length;
          for (const job of jobs) this.#start(job);
        }
      } catch (error) {
        this.#log.warn({ err: error }, 'push executor: claim failed; retrying');
      }
      poll = false;
      if (claimed > 0 && this.#held.size < this.#maxInFlight) continue;
      const woken = await this.#sleep(this.#pollMs);
      poll = claimed === 0 && !woken;
    }
    while (this.#held.size > 0) await new Promise((r) => setTimeout(r, 20));
  }

  /** Renews the leases of every held job, so a request waiting for its host slot or a slow target keeps its job. */
  async #leaseLoop(): Promise<void> {
    while (!this.#stopping || this.#held.size > 0) {
      await new Promise((r) => setTimeout(r, Math.min(this.#leaseMs / 3, 1000)));
      const refs = [...this.#held.values()].map((h) => ({ id: h.job.id, attempt: h.job.attempt }));
      if (refs.length === 0) continue;
      try {
        const renewed = await leaseRenewMany(this.#pool, this.id, refs, this.#leaseMs);
        const kept = new Map(renewed.map((r) => [r.id, r.cancelRequested]));
        for (const ref of refs) {
          const held = this.#held.get(ref.id);
          const cancelled = kept.get(ref.id);
          if (cancelled === undefined) held?.controller.abort(new Error('lease lost'));
          else if (cancelled) held?.controller.abort(new Error('job cancelled'));
        }
      } catch (error) {
        this.#log.warn({ err: error }, 'push executor: lease renewal failed');
      }
    }
  }

  #start(job: JobClaimed): void {
    const controller = new AbortController();
    this.#held.set(job.id, { job, controller });
    void this.#deliver(job, controller.signal)
      .then((outcome) => this.#record(job, outcome))
      .catch((error: unknown) =>
        this.#log.error({ err: error, job: job.id }, 'push executor: recording failed'),
      )
      .finally(() => {
        this.#held.delete(job.id);
        this.#wake?.();
      });
  }

  async #deliver(job: JobClaimed, aborted: AbortSignal): Promise<Outcome> {
    if (job.kind !== PUSH_KIND) {
      return {
        ok: false,
        retryable: false,
        timedOut: false,
        error: `kind ${job.kind} is not ${PUSH_KIND}`,
        retryAfterMs: null,
      };
    }
    const target = pushPayloadParse(job.payload);
    if (typeof target === 'string')
      return { ok: false, retryable: false, timedOut: false, error: target, retryAfterMs: null };
    const url = new URL(target.url);
    const release = await this.#hosts.acquire(url.host);
    try {
      if (aborted.aborted)
        return {
          ok: false,
          retryable: true,
          timedOut: false,
          error: String(aborted.reason),
          retryAfterMs: null,
        };
      const timeoutMs = Math.min(job.timeoutMs ?? this.#requestTimeoutMs, this.#requestTimeoutMs);
      const deadline = new Date(this.#clock.now().getTime() + timeoutMs);
      const timeout = AbortSignal.timeout(timeoutMs);
      const headers: Record<string, string> = {
        'content-type': 'application/json',
        'idempotency-key': job.idempotencyKey,
        'tidemark-job-id': String(job.id),
        'tidemark-attempt': String(job.attempt),
        'tidemark-deadline': deadline.toISOString(),
      };
      try {
        const response = await fetch(url, {
          method: 'POST',
          headers,
          body: JSON.stringify(target.body),
          signal: AbortSignal.any([timeout, aborted]),
          redirect: 'manual',
        });
        // Drain the body so the connection is reused; its content is not needed.
        await response.arrayBuffer().catch(() => undefined);
        if (response.status >= 200 && response.status < 300) return { ok: true };
        const retryable = RETRYABLE_STATUS(response.status);
        return {
          ok: false,
          retryable,
          timedOut: response.status === 408,
          error: `${url.origin}${url.pathname} answered ${response.status}`,
          retryAfterMs: retryable
            ? retryAfterMs(response.headers.get('retry-after'), this.#clock.now().getTime())
            : null,
        };
      } catch (error) {
        const timedOut = timeout.aborted;
        const reason = timedOut
          ? `no answer within ${timeoutMs} ms`
          : error instanceof Error
            ? error.message
            : String(error);
        return {
          ok: false,
          retryable: true,
          timedOut,
          error: `${url.origin}${url.pathname}: ${reason}`,
          retryAfterMs: null,
        };
      }
    } finally {
      release();
    }
  }

  /** Writes the outcome (with the workflow step, in one transaction), only if the attempt is still ours. */
  async #record(job: JobClaimed, outcome: Outcome): Promise<void> {
    const ref = { id: job.id, attempt: job.attempt };
    if (outcome.ok) await remoteComplete(this.#pool, this.id, ref);
    else {
      await remoteFail(this.#pool, this.id, ref, {
        error: outcome.error,
        retryable: outcome.retryable,
        outcome: outcome.timedOut ? 'timed_out' : 'failed',
        retryAfterMs: outcome.retryAfterMs,
      });
    }
    this.#log.debug({ job: job.id, attempt: job.attempt, ok: outcome.ok }, 'push delivered');
  }
}
