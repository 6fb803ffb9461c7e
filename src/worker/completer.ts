/**
 * Batches the writes that end attempts, group-commit style: while one batch is being written the
 * next accumulates, so an idle worker writes each completion at once (low latency) and a busy one
 * writes ~1,000 per statement (one job per statement ~0.25 P, 1,000 per batch ~7–8 P: DESIGN.md).
 * Successes of jobs that are no workflow's nodes are one statement of their own; a node's job is
 * completed in one statement with its workflow's release (in a transaction when the release takes
 * more), in its workflow's lane (NODE_LANES), beside the other writes. A failed write is retried
 * with backoff; every write is conditioned on (owner, attempt), so writing twice, or after the job
 * was reaped, changes nothing.
 */
import type { Logger } from '../log.ts';
import {
  jobCompleteMany,
  jobCompleteOutsideWorkflows,
  jobFailMany,
  jobReleaseMany,
  type AttemptFailure,
  type AttemptRef,
  type ReleaseTake,
} from '../store/jobs.ts';
import { withTransaction, type Pool } from '../store/pool.ts';
import { needsTransaction } from '../store/workflow-release.ts';

/**
 * Node-success lanes: every node of one workflow goes to the lane its workflow id hashes to, so
 * different workflows commit side by side and one workflow's writes stay few and large.
 */
const NODE_LANES = 3;

/**
 * Statements a lane writes at once. A step of 300 chains in one 20,000-node workflow (one batch of
 * ~350 successes) is written as two halves side by side: ~13 ms a step where one statement took
 * ~17 ms. Three at once were slower again, with both cores busy.
 */
const LANE_DEPTH = 2;

/** The smallest part a lane's queue is split into to fill its free statements. */
const MIN_PART = 64;

/** A node's success, with the workflow its job's key names (undefined: not known). */
interface NodeSuccess {
  ref: AttemptRef;
  workflowId: string | undefined;
}

/** One lane's successes waiting, and the batches it is writing. */
interface NodeLane {
  queued: NodeSuccess[];
  writing: NodeSuccess[][];
}

/** A lane by the workflow id (FNV-1a): stable for the process's life, spread across ids. */
function laneOf(workflowId: string): number {
  let h = 0x811c9dc5;
  for (let i = 0; i < workflowId.length; i++) h = Math.imul(h ^ workflowId.charCodeAt(i), 0x01000193);
  return (h >>> 0) % NODE_LANES;
}

/**
 * How node-success transactions take the jobs their releases create, so a chain's next step starts
 * here without waiting for a claim (the worker keeps the room it offers free until `settle`).
 */
export interface ReleaseTaking {
  /** What the next transaction may take for a batch of `nodes` successes; null: nothing. */
  reserve(nodes: number): ReleaseTake | null;
  /** The transaction ended: its taken jobs are this worker's if it committed, none if not. */
  settle(take: ReleaseTake, committed: boolean): void;
}

/** Attempts whose end a shutdown could not write: their leases expire and the reaper hands them back. */
export interface Unwritten {
  succeeded: AttemptRef[];
  failed: AttemptFailure[];
  released: AttemptRef[];
}

export class Completer {
  readonly #pool: Pool;
  readonly #owner: string;
  readonly #log: Logger;
  readonly #batch: number;
  /** Successes of jobs that are no workflow's nodes, by their key: one statement each batch. */
  #successes: AttemptRef[] = [];
  /** Successes of workflow nodes' jobs, written with their release, LANE_DEPTH statements per lane. */
  readonly #nodeLanes: NodeLane[] = Array.from({ length: NODE_LANES }, () => ({ queued: [], writing: [] }));
  #nodeKick = false;
  #failures: AttemptFailure[] = [];
  #releases: AttemptRef[] = [];
  #writing = false;
  #abandoned = false;
  #idle: (() => void)[] = [];
  readonly #onWritten: () => void;
  readonly #taking: ReleaseTaking | undefined;

  /** `onWritten` runs after each batch lands, so claim loops held back by `pending` can go on. */
  constructor(
    pool: Pool,
    owner: string,
    log: Logger,
    batch: number,
    onWritten: () => void,
    taking?: ReleaseTaking,
  ) {
    this.#pool = pool;
    this.#owner = owner;
    this.#log = log;
    this.#batch = batch;
    this.#onWritten = onWritten;
    this.#taking = taking;
  }

  /** `workflowId`: the workflow the job may be a node of (workflowJobKeyWorkflowId). */
  succeed(ref: AttemptRef, workflowId: string | undefined): void {
    if (workflowId !== undefined) {
      this.#nodeSucceed({ ref, workflowId }, laneOf(workflowId));
    } else {
      this.#successes.push(ref);
      this.#kick();
    }
  }

  fail(failure: AttemptFailure): void {
    this.#failures.push(failure);
    this.#kick();
  }

  release(ref: AttemptRef): void {
    this.#releases.push(ref);
    this.#kick();
  }

  get pending(): number {
    let n = this.#mainPending;
    for (const lane of this.#nodeLanes) {
      n += lane.queued.length;
      for (const batch of lane.writing) n += batch.length;
    }
    return n;
  }

  /** What the one writer of the other kinds (#drain) has left. */
  get #mainPending(): number {
    return this.#successes.length + this.#failures.length + this.#releases.length;
  }

  /** Resolves when everything handed in so far has been written. */
  flush(): Promise<void> {
    if (!this.#writing && this.pending === 0) return Promise.resolve();
    return new Promise((done) => this.#idle.push(done));
  }

  #settled(): void {
    if (!this.#writing && this.pending === 0) for (const done of this.#idle.splice(0)) done();
  }

  #nodeSucceed(success: NodeSuccess, lane: number): void {
    this.#nodeLanes[lane]?.queued.push(success);
    this.#kickNodeLanes();
  }

  #kickNodeLanes(): void {
    // As #kick: every handler that settles in this turn joins the batch.
    if (this.#nodeKick) return;
    this.#nodeKick = true;
    setImmediate(() => {
      this.#nodeKick = false;
      this.#startNodeLanes();
    });
  }

  #startNodeLanes(): void {
    for (const lane of this.#nodeLanes) {
      const free = LANE_DEPTH - lane.writing.length;
      if (free === 0 || lane.queued.length === 0 || this.#abandoned) continue;
      const n = Math.min(lane.queued.length, this.#batch * free);
      const size = Math.ceil(n / Math.max(1, Math.min(free, Math.floor(n / MIN_PART))));
      while (lane.writing.length < LANE_DEPTH && lane.queued.length > 0) {
        const batch = lane.queued.splice(0, size);
        lane.writing.push(batch);
        void this.#writeNodes(lane, batch);
      }
    }
  }

  /**
   * One node-success batch, retried until it lands (a deadlock with another write is retried too):
   * first as one statement, then, when its release takes more or that statement failed, in a
   * transaction.
   */
  async #writeNodes(lane: NodeLane, batch: NodeSuccess[]): Promise<void> {
    const refs = batch.map((s) => s.ref);
    const named = batch.every((s) => s.workflowId !== undefined);
    const workflows = named ? [...new Set(batch.map((s) => s.workflowId as string))] : undefined;
    let delayMs = 50;
    let alone = true;
    for (;;) {
      const take = this.#taking?.reserve(batch.length) ?? undefined;
      try {
        if (alone) await jobCompleteMany(this.#pool, this.#owner, refs, take, { alone, workflows });
        else
          await withTransaction(this.#pool, (tx) => jobCompleteMany(tx, this.#owner, refs, take), {
            byIndex: true,
          });
        if (take !== undefined) this.#taking?.settle(take, true);
        break;
      } catch (error) {
        if (take !== undefined) this.#taking?.settle(take, false);
        // Given up at shutdown: flushWithin reported this batch as unwritten.
        if (this.#abandoned) return;
        if (alone) {
          // Nothing of it was kept: written again at once, the longer way.
          alone = false;
          if (!needsTransaction(error))
            this.#log.warn({ err: error, jobs: batch.length }, 'completion write failed');
          continue;
        }
        this.#log.warn({ err: error, jobs: batch.length, retryInMs: delayMs }, 'completion write failed');
        await new Promise((r) => setTimeout(r, delayMs));
        delayMs = Math.min(delayMs * 2, 2000);
      }
    }
    lane.writing.splice(lane.writing.indexOf(batch), 1);
    this.#onWritten();
    // The next batch a turn later: the jobs this one took and that end at once join it, where a
    // batch started at once held the one or two ready so far, at 2-5 ms a transaction whatever
    // its size.
    this.#kickNodeLanes();
    this.#settled();
  }

  /**
   * flush() for shutdown: true once everything is written, false if `ms` pass first. Then it stops
   * retrying (a write already sent may still land) and returns what it could not write.
   */
  async flushWithin(ms: number): Promise<Unwritten | null> {
    let timer: NodeJS.Timeout | undefined;
    const written = await Promise.race([
      this.flush().then(() => true),
      new Promise<false>((r) => (timer = setTimeout(() => r(false), ms))),
    ]);
    clearTimeout(timer);
    if (written) return null;
    this.#abandoned = true;
    const left: Unwritten = {
      succeeded: [
        ...this.#successes,
        ...this.#nodeLanes.flatMap((lane) => [...lane.queued, ...lane.writing.flat()].map((s) => s.ref)),
      ],
      failed: [...this.#failures],
      released: [...this.#releases],
    };
    this.#successes = [];
    for (const lane of this.#nodeLanes) lane.queued = [];
    this.#failures = [];
    this.#releases = [];
    return left;
  }

  #kick(): void {
    if (this.#writing || this.#abandoned) return;
    this.#writing = true;
    // setImmediate, not a microtask: lets every handler that settles in this turn join the batch.
    setImmediate(() => void this.#drain());
  }

  async #drain(): Promise<void> {
    let delayMs = 50;
    while (this.#mainPending > 0 && !this.#abandoned) {
      try {
        await this.#writeOnce();
        delayMs = 50;
        this.#onWritten();
      } catch (error) {
        this.#log.warn({ err: error, pending: this.pending, retryInMs: delayMs }, 'completion write failed');
        await new Promise((r) => setTimeout(r, delayMs));
        delayMs = Math.min(delayMs * 2, 2000);
      }
    }
    this.#writing = false;
    this.#settled();
  }

  async #writeOnce(): Promise<void> {
    if (this.#successes.length > 0) {
      const batch = this.#successes.slice(0, this.#batch);
      const written = new Set(await jobCompleteOutsideWorkflows(this.#pool, this.#owner, batch));
      this.#successes.splice(0, batch.length);
      // Left running: a workflow node's job after all (its key told wrong), or one no longer owned,
      // which the longer way finds no longer owned too and leaves alone.
      for (const ref of batch) if (!written.has(ref.id)) this.#nodeSucceed({ ref, workflowId: undefined }, 0);
    }
    if (this.#failures.length > 0) {
      const batch = this.#failures.slice(0, this.#batch);
      await withTransaction(this.#pool, (tx) => jobFailMany(tx, this.#owner, batch));
      this.#failures.splice(0, batch.length);
    }
    if (this.#releases.length > 0) {
      const batch = this.#releases.slice(0, this.#batch);
      await jobReleaseMany(this.#pool, this.#owner, batch);
      this.#releases.splice(0, batch.length);
    }
  }
}
