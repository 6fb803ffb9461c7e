/**
 * A worker process's engine: one claim loop per queue with its own local concurrency (so a queue of
 * 30-minute jobs never holds a slot a 1-second queue needs), a LISTEN connection that wakes loops
 * when work arrives and delivers cancels, a lease keeper that heartbeats every running attempt in
 * one statement, a group-commit completer, and maintenance (promote due jobs, reap expired leases,
 * refresh limits, sample backlog) every poll interval, which is also the fallback when a NOTIFY is
 * missed. A queue may claim ahead of its free slots into a local buffer (QueueOptions.claimAhead), so
 * a slot that frees starts its next job without a claim round trip. `stop()` stops claiming, hands
 * buffered jobs back at once, lets handlers finish within a grace period, then hands the rest back.
 *
 * The process registers itself in the worker registry (store/workers.ts) at start, heartbeats there
 * with its slots in use, and is marked stopped at the end of stop(). A paused queue (QueueClient) is
 * skipped by the claim statements themselves; this process also stops starting its buffered jobs and
 * hands them back as soon as it hears of the pause (a notification, else its next limits refresh).
 */
import { ConfigError } from '../errors.ts';
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import { VERSION } from '../version.ts';
import type { Clock } from '../clock.ts';
import { systemClock } from '../clock.ts';
import { createLogger, type Logger } from '../log.ts';
import {
  jobClaimById,
  jobClaimLimitsGet,
  jobCountsByQueue,
  jobPromoteDue,
  jobReapExpired,
  jobUnclaimMany,
  leaseRenewMany,
  type AttemptRef,
  type JobClaimed,
  type ReleaseTake,
} from '../store/jobs.ts';
import { workflowJobKeyWorkflowId } from '../store/job-key.ts';
import { createRolePool, type Pool, withMovedRowRetry, withTransaction } from '../store/pool.ts';
import { workerHeartbeat, workerRegister, workerStop, type WorkerQueueSlots } from '../store/workers.ts';
import { signalTimeoutsFire } from '../store/workflow-signal-timeouts.ts';
import { AttemptContext, type AttemptHost } from './attempt-context.ts';
import { queueClaim } from './claim.ts';
import { Completer } from './completer.ts';
import { JobCancelledError, LeaseLostError, WorkerShutdownError } from './errors.ts';
import { AttemptAbort, runAttempt, type AttemptResult } from './executor.ts';
import type { Handlers } from './handler.ts';
import { Listener } from './listener.ts';
import { QueueStats, type QueueMetrics } from './metrics.ts';

export interface QueueOptions {
  name: string;
  /** Handlers of this queue running at once in this process. */
  concurrency: number;
  /**
   * Most jobs claimed ahead of free slots and held here until a slot frees (docs/delivery.md, "Claim
   * ahead"). The buffer also never holds more than the queue started in the last second or two, so
   * a queue of long jobs buffers next to nothing. Not used while the queue has a cluster-wide limit
   * or any tenant has a quota: a buffered job holds one of those slots without running. 0 turns it
   * off. Default 1,000.
   */
  claimAhead?: number;
}

/**
 * One claim batch: at concurrency 10 and 24, buffers of 500 and 2,000 drained no faster than 1,000
 * (bench worker). The cap by recent starts, not this, keeps the buffer short for slow jobs.
 */
export const DEFAULT_CLAIM_AHEAD = 1000;
/** The window the buffer's adaptive cap counts starts over. */
const START_WINDOW_MS = 1000;

export interface WorkerOptions {
  /** The database: the worker's pool and its LISTEN connection (which no pool can lend). */
  connectionString: string;
  /**
   * A pool the application already has, on the same database; the worker then does not end it on
   * stop. Default: a pool of its own (10 connections), ended on stop.
   */
  pool?: Pool;
  handlers: Handlers;
  queues: QueueOptions[];
  id?: string;
  log?: Logger;
  clock?: Clock;
  /** Lease length for jobs without their own heartbeat interval (3× that otherwise). Default 30 s. */
  leaseMs?: number;
  /** Polling fallback and maintenance interval. Default 1 s. */
  pollMs?: number;
  /** How long a handler may run on after its signal fired (deadline, cancel). Default 5 s. */
  timeoutGraceMs?: number;
  /** How long stop() waits for running handlers before aborting them. Default 10 s. */
  shutdownGraceMs?: number;
  /** Most jobs per claim statement and per completion statement. Default 1,000 (DESIGN.md). */
  batchSize?: number;
  /**
   * Run the promoter, the reaper and workflow signal timeouts in this process. Default true; each is
   * safe to run in any number of processes.
   */
  maintenance?: boolean;
  /**
   * How often this process refreshes its row in the worker registry (GET /v1/workers); a worker
   * whose row is three intervals old is reported lost. Default 5 s.
   */
  registryHeartbeatMs?: number;
}

/** A job claimed ahead of a free slot, waiting in its queue's buffer. */
interface Buffered {
  job: JobClaimed;
  ref: AttemptRef;
  /** Monotonic time of its claim: its wait here is part of its start lag. */
  claimedAt: number;
}

interface Running {
  ref: AttemptRef;
  queue: QueueLoop;
  aborter: AttemptAbort;
  heartbeatMs: number | null;
  /** The workflow its key names: its success is written with that workflow's release (Completer). */
  workflowId: string | undefined;
}

class QueueLoop {
  readonly stats: QueueStats;
  tenantCursor = '';
  limited = false;
  /** Paused cluster-wide: claims skip it; this process neither starts nor keeps buffered jobs. */
  paused = false;
  woken = false;
  waitingForSlot = false;
  /** Slots promised to claims in flight, so two claim loops never overfill the queue. */
  reserved = 0;
  /** Slots promised to node-success transactions in flight (Worker #takeReserve). */
  taking = 0;
  /** Claim loops running for this queue. */
  loops = 0;
  /** Claimed jobs waiting for a slot, oldest first. */
  buffer: Buffered[] = [];
  readonly #waiters = new Set<() => void>();
  #wakeSoon = false;
  /** Starts in the current and the previous START_WINDOW_MS, and when the current one began. */
  #starts = 0;
  #startsBefore = 0;
  #windowAt = 0;

  constructor(
    readonly name: string,
    readonly concurrency: number,
    readonly claimAhead: number,
  ) {
    this.stats = new QueueStats(name, concurrency);
  }

  /** Counts a start for the buffer's cap (recentStarts). */
  started(now: number): void {
    this.#roll(now);
    this.#starts++;
  }

  /** Jobs started in the last one to two windows. */
  recentStarts(now: number): number {
    this.#roll(now);
    return this.#starts + this.#startsBefore;
  }

  #roll(now: number): void {
    if (now - this.#windowAt < START_WINDOW_MS) return;
    this.#startsBefore = now - this.#windowAt < 2 * START_WINDOW_MS ? this.#starts : 0;
    this.#starts = 0;
    this.#windowAt = now;
  }

  /** Every claim loop asleep after finding the queue empty (not waiting for a free slot). */
  get sleeping(): boolean {
    return this.loops > 0 && this.#waiters.size === this.loops && !this.waitingForSlot;
  }

  /** New work or a free slot: one sleeping loop is enough (both would race for the same rows). */
  wake(): void {
    this.woken = true;
    const [first] = this.#waiters;
    if (first !== undefined) {
      this.#waiters.delete(first);
      first();
    }
  }

  /** wake() once every handler settling in this turn has freed its slot: one timer, not one per job. */
  wakeSoon(): void {
    if (this.#wakeSoon) return;
    this.#wakeSoon = true;
    setImmediate(() => {
      this.#wakeSoon = false;
      this.wake();
    });
  }

  /** Stop, limits changed, or notifications may have been missed: every loop looks again. */
  wakeAll(): void {
    this.woken = true;
    for (const w of this.#waiters) w();
    this.#waiters.clear();
  }

  /** true when woken (wake, wakeAll), false when `ms` passed first. */
  async sleep(ms: number): Promise<boolean> {
    if (this.woken) return true;
    return this.#wait(ms);
  }

  /**
   * As sleep, for a loop with no free slot: a wake-up already pending is for a loop that can claim
   * (its claim in flight sees it afterwards), not for this one, which would only go round again.
   */
  sleepForSlot(ms: number): Promise<boolean> {
    return this.#wait(ms);
  }

  async #wait(ms: number): Promise<boolean> {
    let timer: NodeJS.Timeout | undefined;
    let waiter: (() => void) | undefined;
    const woken = await new Promise<boolean>((resolve) => {
      waiter = () => resolve(true);
      this.#waiters.add(waiter);
      timer = setTimeout(() => resolve(false), ms);
    });
    clearTimeout(timer);
    if (waiter !== undefined) this.#waiters.delete(waiter);
    return woken;
  }
}

/**
 * Released jobs a node-success transaction may take per node: at 1, a 20,000-node mixture's joins
 * overflowed into claims (1,250-1,850 of 5,000; under 70 at 2). All the room a batch finds would
 * leave none for the batch written beside it.
 */
const TAKE_PER_NODE = 2;

/** The least time a shutdown gives the writes that hand attempts back, even when handlers used the grace. */
const HANDBACK_MIN_MS = 1000;

/** Whether `p` settled within `ms`; a promise left behind (a statement to an unreachable database) is dropped. */
async function settledWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const settled = await Promise.race([
    p.then(
      () => true,
      () => true,
    ),
    new Promise<false>((r) => (timer = setTimeout(() => r(false), ms))),
  ]);
  clearTimeout(timer);
  return settled;
}

export class Worker {
  readonly id: string;
  readonly #pool: Pool;
  readonly #ownsPool: boolean;
  readonly #handlers: Handlers;
  readonly #log: Logger;
  readonly #clock: Clock;
  readonly #leaseMs: number;
  readonly #pollMs: number;
  readonly #timeoutGraceMs: number;
  readonly #shutdownGraceMs: number;
  readonly #batch: number;
  readonly #maintenance: boolean;
  readonly #registryMs: number;
  readonly #queues = new Map<string, QueueLoop>();
  readonly #running = new Map<number, Running>();
  readonly #completer: Completer;
  readonly #host: AttemptHost;
  readonly #listener: Listener;
  #tenantQuotas = false;
  #started = false;
  #stopping = false;
  #stopped: Promise<void> | undefined;
  #loops: Promise<void>[] = [];
  readonly #byIdClaims = new Set<Promise<void>>();
  #idleWaiters: (() => void)[] = [];
  #timers = new Set<NodeJS.Timeout>();
  #backgroundStop: (() => void) | undefined;
  #background: Promise<void>[] = [];

  constructor(options: WorkerOptions) {
    this.id = options.id ?? `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
    this.#ownsPool = options.pool === undefined;
    this.#pool =
      options.pool === undefined
        ? createRolePool({
            connectionString: options.connectionString,
            max: 10,
            applicationName: 'tidemark-worker',
          })
        : withMovedRowRetry(options.pool);
    this.#handlers = options.handlers;
    this.#log = (options.log ?? createLogger('worker')).child({ worker: this.id });
    this.#clock = options.clock ?? systemClock;
    this.#leaseMs = options.leaseMs ?? 30_000;
    this.#pollMs = options.pollMs ?? 1000;
    this.#timeoutGraceMs = options.timeoutGraceMs ?? 5000;
    this.#shutdownGraceMs = options.shutdownGraceMs ?? 10_000;
    this.#batch = options.batchSize ?? 1000;
    this.#maintenance = options.maintenance ?? true;
    this.#registryMs = options.registryHeartbeatMs ?? 5000;
    if (!Number.isInteger(this.#registryMs) || this.#registryMs < 1) {
      throw new TypeError(`registryHeartbeatMs: must be a positive integer, got ${this.#registryMs}`);
    }
    this.#host = { pool: this.#pool, owner: this.id, leaseMs: this.#leaseMs };
    if (options.queues.length === 0) throw new ConfigError('queues: at least one queue is required');
    for (const q of options.queues) {
      if (!Number.isInteger(q.concurrency) || q.concurrency < 1) {
        throw new ConfigError(
          `queues.${q.name}.concurrency: must be a positive integer, got ${q.concurrency}`,
        );
      }
      const ahead = q.claimAhead ?? DEFAULT_CLAIM_AHEAD;
      if (!Number.isInteger(ahead) || ahead < 0) {
        throw new ConfigError(`queues.${q.name}.claimAhead: must be an integer ≥ 0, got ${ahead}`);
      }
      if (this.#queues.has(q.name)) throw new ConfigError(`queues.${q.name}: listed twice`);
      this.#queues.set(q.name, new QueueLoop(q.name, q.concurrency, ahead));
    }
    this.#completer = new Completer(
      this.#pool,
      this.id,
      this.#log,
      this.#batch,
      () => {
        // A finished job frees a slot here and, in a limited queue or under a tenant quota, one counted
        // cluster-wide: those loops look again now instead of at their next poll.
        for (const q of this.#queues.values()) {
          if (q.waitingForSlot || q.limited || this.#tenantQuotas) q.wake();
        }
      },
      { reserve: (nodes) => this.#takeReserve(nodes), settle: (take, ok) => this.#takeSettle(take, ok) },
    );
    this.#listener = new Listener(
      options.connectionString,
      {
        onJobs: (queue, jobId) => this.#onJobs(queue, jobId),
        onCancel: (jobId) => this.#cancelLocal(jobId),
        onQueueChange: (queue) => {
          if (!this.#queues.has(queue) || this.#stopping) return;
          this.#refreshLimits().catch((error: unknown) =>
            this.#log.warn(
              { err: error, queue },
              'reading queue limits after a change failed; next poll retries',
            ),
          );
        },
        onReconnect: () => {
          for (const q of this.#queues.values()) q.wakeAll();
        },
      },
      this.#log,
    );
  }

  async start(): Promise<void> {
    await this.#listener.start();
    await this.#maintain(0, () => this.#stopping);
    await workerRegister(this.#pool, {
      id: this.id,
      host: hostname(),
      pid: process.pid,
      version: VERSION,
      queues: this.#slots(),
      heartbeatMs: this.#registryMs,
    });
    // Two claim loops per queue: one claims while the other's batch starts, and claims of ~1,000
    // overlap their round trips (DESIGN.md: two to four loops saturate PostgreSQL). The second only
    // matters for a queue with more slots than one batch fills at a time.
    for (const q of this.#queues.values()) {
      q.loops = q.concurrency > 1 ? 2 : 1;
      this.#loops.push(this.#claimLoop(q));
      if (q.concurrency > 1) this.#loops.push(this.#claimLoop(q));
    }
    const stopSignal = new Promise<void>((resolve) => (this.#backgroundStop = resolve));
    this.#background.push(
      this.#leaseLoop(stopSignal),
      this.#maintenanceLoop(stopSignal),
      this.#registryLoop(stopSignal),
    );
    this.#started = true;
    this.#log.info(
      { queues: [...this.#queues.values()].map((q) => `${q.name}(${q.concurrency})`) },
      'worker started',
    );
  }

  metrics(): QueueMetrics[] {
    return [...this.#queues.values()].map((q) => q.stats.snapshot());
  }

  /** Started and not stopping: what a metrics server's /readyz reports for this role. */
  get isRunning(): boolean {
    return this.#started && !this.#stopping;
  }

  /** Attempts running in this process right now. */
  get runningCount(): number {
    return this.#running.size;
  }

  /** Jobs claimed ahead and waiting here for a free slot, across its queues. */
  get bufferedCount(): number {
    let n = 0;
    for (const q of this.#queues.values()) n += q.buffer.length;
    return n;
  }

  stop(): Promise<void> {
    this.#stopped ??= this.#stop();
    return this.#stopped;
  }

  async [Symbol.asyncDispose](): Promise<void> {
    await this.stop();
  }

  /**
   * Handlers get the shutdown grace; then the rest are aborted and every attempt's end is written.
   * Each wait on the database ends with the grace (or HANDBACK_MIN_MS after the handlers, if they
   * used all of it): with the database unreachable, a claim, write or heartbeat never returns, and
   * retrying kept a stopped worker alive for minutes. What could not be written is logged; those
   * attempts stay leased until their leases expire and the reaper hands them back.
   */
  async #stop(): Promise<void> {
    const deadline = this.#clock.monotonicMs() + this.#shutdownGraceMs;
    const left = (): number => Math.max(0, deadline - this.#clock.monotonicMs());
    this.#stopping = true;
    for (const q of this.#queues.values()) q.wakeAll();
    // Buffered jobs go back at once, not after the running ones finish; then what claims still in
    // flight brought.
    const handedBack = this.#handBack();
    await settledWithin(Promise.all([...this.#loops, ...this.#byIdClaims]), left());
    await settledWithin(handedBack, left());
    await settledWithin(this.#handBack(), left());
    if (!(await this.#waitIdle(left()))) {
      this.#log.warn({ running: this.#running.size }, 'shutdown grace over; aborting and releasing the rest');
      for (const r of this.#running.values()) {
        r.aborter.abort(new WorkerShutdownError('worker shutting down'));
      }
      await this.#waitIdle(Number.POSITIVE_INFINITY);
    }
    // One window for every remaining wait on the database: the rest of the grace, at least 1 s.
    const handBackBy = Math.max(deadline, this.#clock.monotonicMs() + HANDBACK_MIN_MS);
    const handBackLeft = (): number => Math.max(0, handBackBy - this.#clock.monotonicMs());
    const unwritten = await this.#completer.flushWithin(handBackLeft());
    if (unwritten !== null) {
      const ids = (refs: { id: number }[]): number[] => refs.map((r) => r.id);
      const n = unwritten.succeeded.length + unwritten.failed.length + unwritten.released.length;
      this.#log.error(
        {
          succeeded: ids(unwritten.succeeded),
          failed: ids(unwritten.failed),
          released: ids(unwritten.released),
        },
        `database unreachable at shutdown: could not hand back ${n} attempt(s); they stay leased to this worker until their leases expire, then run again (succeeded ones included)`,
      );
    }
    // Jobs the last node-success transactions took arrived after the hand-back above.
    await settledWithin(this.#handBack(), handBackLeft());
    this.#backgroundStop?.();
    await settledWithin(Promise.all(this.#background), handBackLeft());
    const marked = workerStop(this.#pool, this.id, this.#slots()).catch((error: unknown) =>
      this.#log.warn(
        { err: error },
        'could not mark this worker stopped in the registry; it will show as lost',
      ),
    );
    await settledWithin(marked, handBackLeft());
    for (const t of this.#timers) clearTimeout(t);
    await settledWithin(this.#listener.stop(), handBackLeft());
    if (this.#ownsPool) await settledWithin(this.#pool.end(), handBackLeft());
    this.#log.info('worker stopped');
  }

  #waitIdle(ms: number): Promise<boolean> {
    if (this.#running.size === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const timer = Number.isFinite(ms) ? setTimeout(() => resolve(false), ms) : undefined;
      this.#idleWaiters.push(() => {
        clearTimeout(timer);
        resolve(true);
      });
    });
  }

  // ---- claiming -------------------------------------------------------------------------------

  async #claimLoop(q: QueueLoop): Promise<void> {
    let errorDelayMs = 100;
    // The next claim is the timed poll of a queue last found short, not a wake-up (jobClaimBatch).
    let poll = false;
    while (!this.#stopping) {
      const free = this.#freeSlots(q);
      // While buffered jobs remain, the buffer is refilled by at least half its size at a time, not
      // by a claim for every few jobs that start.
      if (free <= 0 || (q.buffer.length > 0 && free < this.#ahead(q) / 2)) {
        // `woken` is left alone: a wake-up about new work that reaches this loop while another's
        // claim holds the slots is that claim's loop's to act on when it returns (cleared here, the
        // job waited for the next poll: 8 of 30 lone jobs into an idle limited queue).
        q.waitingForSlot = true;
        await q.sleepForSlot(this.#pollMs);
        q.waitingForSlot = false;
        poll = false;
        continue;
      }
      q.woken = false;
      const limit = Math.min(free, this.#batch);
      let jobs: JobClaimed[];
      q.reserved += limit;
      try {
        jobs = await this.#claim(q, limit, poll);
        errorDelayMs = 100;
      } catch (error) {
        q.reserved -= limit;
        this.#log.warn({ err: error, queue: q.name, retryInMs: errorDelayMs }, 'claim failed');
        await q.sleep(errorDelayMs);
        errorDelayMs = Math.min(errorDelayMs * 2, 5000);
        continue;
      }
      q.reserved -= limit;
      this.#take(q, jobs);
      if (this.#stopping) break;
      // A full batch suggests more is waiting; otherwise sleep until a NOTIFY, a free slot or the poll.
      poll = jobs.length < limit && !(await q.sleep(this.#pollMs));
    }
  }

  /**
   * Slots a claim may fill now. Finished attempts waiting to be written hold their slots beyond one
   * batch in flight: if completions can not keep up (or the database is away), claiming stops
   * instead of piling up unwritten results while their leases run out.
   */
  #freeSlots(q: QueueLoop): number {
    const backlog = Math.max(0, this.#completer.pending - this.#batch);
    return this.#unfilled(q) - q.reserved - backlog;
  }

  /** Slots and buffer places neither running, holding a job nor promised to a release. */
  #unfilled(q: QueueLoop): number {
    return q.concurrency + this.#ahead(q) - q.stats.running - q.buffer.length - q.taking;
  }

  /**
   * How many jobs the queue may hold claimed beyond its slots now: none under a cluster-wide limit or
   * tenant quotas (a buffered job counts as running there, holding a slot another worker could run
   * it in), else claimAhead capped by the starts of the last second.
   */
  #ahead(q: QueueLoop): number {
    if (q.claimAhead === 0 || q.limited || q.paused || this.#tenantQuotas) return 0;
    return Math.min(q.claimAhead, q.recentStarts(this.#clock.monotonicMs()));
  }

  async #claim(q: QueueLoop, limit: number, poll: boolean): Promise<JobClaimed[]> {
    const t0 = this.#clock.monotonicMs();
    const params = {
      queue: q.name,
      limit,
      owner: this.id,
      leaseMs: this.#leaseMs,
      tenantCursor: q.tenantCursor,
      poll,
    };
    const jobs = await queueClaim(this.#pool, params, {
      limited: q.limited,
      tenantQuotas: this.#tenantQuotas,
    });
    q.stats.claimLatency.add(this.#clock.monotonicMs() - t0);
    q.tenantCursor = nextTenantCursor(q.tenantCursor, jobs);
    return jobs;
  }

  /**
   * New work in a queue. A wake-up that names its one job, reaching a queue whose claim loops found
   * it empty and are asleep, claims that job by id at once; anything else wakes a loop, which claims
   * fairly. A by-id claim that gets nothing (another worker was first, or the job waits for its
   * buffer_one predecessor) wakes a loop too.
   */
  #onJobs(queue: string, jobId: number | undefined): void {
    const q = this.#queues.get(queue);
    if (q === undefined) return;
    // Asleep, so the slots reserved are those of by-id claims in flight: another may run beside them
    // (waking a loop instead would run the fair-share claim, which in a queue just emptied reads
    // past the entries of every job claimed moments ago: 2-18 ms against 0.7).
    const idle = q.sleeping && !q.woken && !q.limited && !this.#tenantQuotas && !this.#stopping;
    if (jobId === undefined || !Number.isSafeInteger(jobId) || !idle || this.#freeSlots(q) <= 0) {
      q.wake();
      return;
    }
    q.reserved++;
    const t0 = this.#clock.monotonicMs();
    const claim = jobClaimById(this.#pool, { id: jobId, queue, owner: this.id, leaseMs: this.#leaseMs }).then(
      (jobs) => {
        q.reserved--;
        q.stats.claimLatency.add(this.#clock.monotonicMs() - t0);
        this.#take(q, jobs);
        if (jobs.length === 0) q.wake();
      },
      (error: unknown) => {
        q.reserved--;
        this.#log.warn({ err: error, queue, job: jobId }, 'claim by id failed; the claim loop looks instead');
        q.wake();
      },
    );
    // stop() waits for these like for the claim loops, so no job starts after it stopped waiting.
    this.#byIdClaims.add(claim);
    void claim.finally(() => this.#byIdClaims.delete(claim));
  }

  /**
   * Room for the jobs a node-success transaction releases: TAKE_PER_NODE per node succeeding in it
   * (a chain's next step and a join beside it; a fan-out's many children are claimed in batches as
   * usual), in every queue that could claim lock-free now and is not paused. A claim in flight does
   * not hold it back (an idle queue's claim, finding nothing, took the room of every step of a
   * two-slot chain): both may fill the same places, so the buffer can briefly hold up to that many
   * more, leased and renewed like any buffered job, unless the queue buffers nothing (claimAhead 0).
   */
  #takeReserve(nodes: number): ReleaseTake | null {
    if (this.#stopping || this.#tenantQuotas) return null;
    const backlog = Math.max(0, this.#completer.pending - this.#batch);
    const room: Record<string, number> = {};
    let any = false;
    for (const q of this.#queues.values()) {
      const claiming = q.claimAhead === 0 ? q.reserved : 0;
      const n =
        q.limited || q.paused ? 0 : Math.min(nodes * TAKE_PER_NODE, this.#unfilled(q) - claiming - backlog);
      if (n <= 0) continue;
      q.taking += n;
      room[q.name] = n;
      any = true;
    }
    return any ? { owner: this.id, leaseMs: this.#leaseMs, room, taken: [] } : null;
  }

  /** Ends #takeReserve's reservation; the jobs a committed transaction took start or wait here. */
  #takeSettle(take: ReleaseTake, committed: boolean): void {
    const taken = new Map<string, JobClaimed[]>();
    for (const job of take.taken) {
      const jobs = taken.get(job.queue);
      if (jobs === undefined) taken.set(job.queue, [job]);
      else jobs.push(job);
    }
    for (const [name, left] of Object.entries(take.room)) {
      const q = this.#queues.get(name);
      if (q === undefined) continue;
      const jobs = taken.get(name) ?? [];
      q.taking -= left + jobs.length;
      if (committed) this.#take(q, jobs);
    }
  }

  // ---- the buffer -----------------------------------------------------------------------------

  /** Claimed jobs: started while slots are free, the rest buffered (all of them once stopping). */
  #take(q: QueueLoop, jobs: JobClaimed[]): void {
    const claimedAt = this.#clock.monotonicMs();
    for (const job of jobs) q.buffer.push({ job, ref: { id: job.id, attempt: job.attempt }, claimedAt });
    this.#startBuffered(q);
  }

  #startBuffered(q: QueueLoop): void {
    if (this.#stopping || q.paused) return;
    while (q.stats.running < q.concurrency) {
      const next = q.buffer.shift();
      if (next === undefined) return;
      this.#start(q, next);
    }
  }

  /** Takes a buffered job out; undefined when it is not buffered here. */
  #unbuffer(jobId: number): { q: QueueLoop; entry: Buffered } | undefined {
    for (const q of this.#queues.values()) {
      const i = q.buffer.findIndex((b) => b.ref.id === jobId);
      if (i >= 0) return { q, entry: q.buffer.splice(i, 1)[0]! };
    }
    return undefined;
  }

  /** A buffered job whose cancel arrived: recorded cancelled without running. */
  #cancelBuffered(q: QueueLoop, entry: Buffered): void {
    q.stats.outcomes.cancelled++;
    this.#completer.fail({
      ...entry.ref,
      outcome: 'cancelled',
      error: 'cancelled before it started (claimed ahead, still in the buffer)',
      retryable: false,
    });
    if (q.waitingForSlot) q.wakeSoon();
  }

  /**
   * Hands the buffered jobs of `queues` (default: all) back (jobUnclaimMany); one with a cancel
   * pending is recorded cancelled instead. If the write fails, the leases, no longer renewed, run out
   * and the reaper returns the jobs.
   */
  async #handBack(queues: Iterable<QueueLoop> = this.#queues.values()): Promise<void> {
    const taken: { q: QueueLoop; entry: Buffered }[] = [];
    for (const q of queues) for (const entry of q.buffer.splice(0)) taken.push({ q, entry });
    if (taken.length === 0) return;
    try {
      const back = new Set(
        await jobUnclaimMany(
          this.#pool,
          this.id,
          taken.map((t) => t.entry.ref),
        ),
      );
      for (const t of taken) if (!back.has(t.entry.ref.id)) this.#cancelBuffered(t.q, t.entry);
    } catch (error) {
      this.#log.warn(
        { err: error, jobs: taken.length },
        'handing back buffered jobs failed; their leases will run out',
      );
    }
  }

  // ---- executing ------------------------------------------------------------------------------

  #start(q: QueueLoop, buffered: Buffered): void {
    const { job, ref, claimedAt } = buffered;
    const aborter = new AttemptAbort();
    const entry: Running = {
      ref,
      queue: q,
      aborter,
      heartbeatMs: job.heartbeatMs,
      workflowId: workflowJobKeyWorkflowId(job.idempotencyKey),
    };
    // A job claimed again while an older run of it is still here: that run's lease was lost (reaped
    // before the lease keeper noticed) or its claim was (an asynchronous claim dropped in a database
    // crash, see jobClaimBatch, possibly under the same attempt number), so it writes nothing.
    this.#running
      .get(job.id)
      ?.aborter.abort(new LeaseLostError(`job ${job.id}: claimed again, this run's claim was lost`));
    this.#running.set(job.id, entry);
    q.stats.running++;
    q.stats.claimed++;
    const now = this.#clock.monotonicMs();
    q.started(now);
    // Measured at the start: a buffered job's wait here is part of its lag.
    q.stats.startLag.add(job.startLagMs + (now - claimedAt));
    const context = new AttemptContext(job, ref, aborter, this.#host);
    runAttempt(
      {
        handler: this.#handlers[job.kind],
        context,
        abort: aborter,
        timeoutMs: job.timeoutMs,
        graceMs: this.#timeoutGraceMs,
      },
      (result) => this.#finish(entry, result),
    );
  }

  #finish(entry: Running, result: AttemptResult): void {
    const { queue: q, ref } = entry;
    if (this.#running.get(ref.id) === entry) this.#running.delete(ref.id);
    q.stats.running--;
    switch (result.kind) {
      case 'succeeded':
        q.stats.outcomes.succeeded++;
        this.#completer.succeed(ref, entry.workflowId);
        break;
      case 'completed':
        q.stats.outcomes.succeeded++;
        break;
      case 'failed':
        q.stats.outcomes[result.outcome]++;
        this.#completer.fail({
          ...ref,
          outcome: result.outcome,
          error: result.error,
          retryable: result.retryable,
          retryAfterMs: result.retryAfterMs,
        });
        break;
      case 'lost':
        q.stats.outcomes.lease_lost++;
        this.#log.warn({ job: ref.id, attempt: ref.attempt }, 'lease lost; the attempt result is discarded');
        break;
      case 'released':
        q.stats.outcomes.released++;
        this.#completer.release(ref);
        break;
    }
    this.#startBuffered(q);
    // Deferred: every handler settling in this turn frees its slot before the loop claims again.
    if (q.waitingForSlot) q.wakeSoon();
    if (this.#running.size === 0) for (const done of this.#idleWaiters.splice(0)) done();
  }

  #cancelLocal(jobId: number): void {
    const running = this.#running.get(jobId);
    if (running !== undefined) {
      running.aborter.abort(new JobCancelledError(`job ${jobId} was cancelled`));
      return;
    }
    const buffered = this.#unbuffer(jobId);
    if (buffered !== undefined) this.#cancelBuffered(buffered.q, buffered.entry);
  }

  // ---- background: leases and maintenance -----------------------------------------------------

  #sleep(ms: number, stop: Promise<void>): Promise<void> {
    return new Promise((resolve) => {
      const timer = setTimeout(() => {
        this.#timers.delete(timer);
        resolve();
      }, ms);
      this.#timers.add(timer);
      void stop.then(() => {
        clearTimeout(timer);
        this.#timers.delete(timer);
        resolve();
      });
    });
  }

  /**
   * Renews every running attempt's lease, and every buffered job's: a job waits in the buffer under
   * a live lease however long its queue's handlers take, so the reaper never takes it from a worker
   * that is about to run it.
   */
  async #leaseLoop(stop: Promise<void>): Promise<void> {
    let stopped = false;
    void stop.then(() => (stopped = true));
    while (!stopped) {
      let interval = this.#leaseMs / 3;
      for (const r of this.#running.values())
        if (r.heartbeatMs !== null) interval = Math.min(interval, r.heartbeatMs);
      for (const q of this.#queues.values())
        for (const b of q.buffer)
          if (b.job.heartbeatMs !== null) interval = Math.min(interval, b.job.heartbeatMs);
      await this.#sleep(interval, stop);
      const buffered = [...this.#queues.values()].flatMap((q) => q.buffer.map((b) => b.ref));
      if (stopped || this.#running.size + buffered.length === 0) continue;
      const entries = [...this.#running.values()];
      try {
        const renewed = await leaseRenewMany(
          this.#pool,
          this.id,
          [...entries.map((e) => e.ref), ...buffered],
          this.#leaseMs,
        );
        const byId = new Map(renewed.map((r) => [r.id, r]));
        for (const e of entries) {
          const r = byId.get(e.ref.id);
          if (r === undefined) {
            e.aborter.abort(new LeaseLostError(`job ${e.ref.id} attempt ${e.ref.attempt}: lease lost`));
          } else if (r.cancelRequested) {
            e.aborter.abort(new JobCancelledError(`job ${e.ref.id} was cancelled`));
          }
        }
        for (const ref of buffered) {
          const r = byId.get(ref.id);
          if (r !== undefined && !r.cancelRequested) continue;
          // Started meanwhile (the running entry's next renewal judges it) or already handed back.
          const taken = this.#unbuffer(ref.id);
          if (taken === undefined) continue;
          if (r === undefined)
            this.#log.warn({ job: ref.id, attempt: ref.attempt }, 'buffered job lost its lease');
          else this.#cancelBuffered(taken.q, taken.entry);
        }
      } catch (error) {
        // Not fatal by itself: the leases run 3 heartbeats long; the next tick retries.
        this.#log.warn(
          { err: error, running: entries.length, buffered: buffered.length },
          'lease renewal failed',
        );
      }
    }
  }

  /** Slots per queue and how many are in use, as the registry shows them. */
  #slots(): WorkerQueueSlots[] {
    return [...this.#queues.values()].map((q) => ({
      name: q.name,
      concurrency: q.concurrency,
      running: q.stats.running,
    }));
  }

  /** Heartbeats the registry row; registers again if the row is gone (pruned while unreachable). */
  async #registryLoop(stop: Promise<void>): Promise<void> {
    let stopped = false;
    void stop.then(() => (stopped = true));
    while (!stopped) {
      await this.#sleep(this.#registryMs, stop);
      if (stopped) break;
      try {
        if (!(await workerHeartbeat(this.#pool, this.id, this.#slots()))) {
          await workerRegister(this.#pool, {
            id: this.id,
            host: hostname(),
            pid: process.pid,
            version: VERSION,
            queues: this.#slots(),
            heartbeatMs: this.#registryMs,
          });
        }
      } catch (error) {
        this.#log.warn({ err: error }, 'worker registry heartbeat failed');
      }
    }
  }

  async #maintenanceLoop(stop: Promise<void>): Promise<void> {
    let stopped = false;
    void stop.then(() => (stopped = true));
    // start() made pass 0.
    let tick = 1;
    while (!stopped) {
      await this.#sleep(this.#pollMs, stop);
      if (stopped) break;
      try {
        await this.#maintain(tick++, () => stopped);
      } catch (error) {
        this.#log.warn({ err: error }, 'maintenance failed');
      }
    }
  }

  /**
   * One maintenance pass: promote due jobs, reap expired leases, refresh limits, and on every fifth
   * pass sample the backlog. The first runs in start(), before any claim, so jobs that came due and
   * leases that expired while no worker ran are dealt with at once, not a poll interval later.
   */
  async #maintain(tick: number, stopped: () => boolean): Promise<void> {
    if (this.#maintenance) {
      while ((await jobPromoteDue(this.#pool, this.#batch)) === this.#batch && !stopped());
      const reaped = await withTransaction(this.#pool, (tx) => jobReapExpired(tx, this.#batch));
      if (reaped.length > 0) this.#log.warn({ reaped }, 'returned jobs whose lease expired');
      const fired = await signalTimeoutsFire(this.#pool);
      if (fired > 0) this.#log.info({ fired }, 'workflow signal timeouts applied');
    }
    await this.#refreshLimits();
    // From the pass after start()'s, every fifth: the count scans the queue's backlog, which a worker
    // starting on a deep queue should not wait for before its first claim.
    if (tick % 5 === 1) {
      for (const c of await jobCountsByQueue(this.#pool, [...this.#queues.keys()])) {
        const q = this.#queues.get(c.queue);
        if (q !== undefined) q.stats.backlog = c.backlog;
      }
    }
  }

  async #refreshLimits(): Promise<void> {
    const limits = await jobClaimLimitsGet(this.#pool, [...this.#queues.keys()]);
    const quotasOn = limits.tenantQuotas && !this.#tenantQuotas;
    this.#tenantQuotas = limits.tenantQuotas;
    const handBack: QueueLoop[] = [];
    for (const q of this.#queues.values()) {
      const limited = limits.limitedQueues.has(q.name);
      const paused = limits.pausedQueues.has(q.name);
      if (limited !== q.limited || paused !== q.paused) q.wakeAll();
      // A limit or quota that came while jobs waited here: they go back rather than start past it.
      // A paused queue's buffer goes back on every refresh: a claim in flight at the pause may add to it.
      if ((limited && !q.limited) || quotasOn || paused) handBack.push(q);
      const resumed = q.paused && !paused;
      q.limited = limited;
      q.paused = paused;
      if (resumed) this.#startBuffered(q);
    }
    await this.#handBack(handBack);
  }
}

/**
 * Where the next claim's tenant rotation starts: after the last tenant served, in rotation order
 * (tenants after the cursor first, then from the start). Only matters when more tenants have work
 * than fit in one batch.
 */
export function nextTenantCursor(cursor: string, jobs: readonly { tenantId: string }[]): string {
  let last: string | undefined;
  let lastWrapped = false;
  for (const { tenantId } of jobs) {
    const wrapped = tenantId <= cursor;
    if (last === undefined || (wrapped && !lastWrapped) || (wrapped === lastWrapped && tenantId > last)) {
      last = tenantId;
      lastWrapped = wrapped;
    }
  }
  return last ?? cursor;
}
