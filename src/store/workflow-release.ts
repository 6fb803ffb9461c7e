/**
 * The workflow state machine, run inside the caller's transaction. The worker calls
 * `workflowJobsSucceeded` in the transaction that records its jobs' success and `workflowJobsFailed`
 * in the one that gives up on them, so a node's result and the release of its children commit or
 * vanish together: a lost completion write loses the release with it, and the retry redoes both.
 *
 * Every entry point first locks the affected workflow rows in id order, FOR UPDATE: one writer at a
 * time changes a workflow's nodes, and a release updates children without locking them first. The
 * exception is node successes written alone (workflowJobsSucceededAlone), one statement each, which
 * lock FOR KEY SHARE and run beside each other (workflowNodeJobsSucceed says how they meet).
 */
import type { ReleaseTake } from './jobs.ts';
import type { Queryable } from './pool.ts';
import {
  workflowNodeCancelUnstarted,
  workflowNodeChildrenRelease,
  workflowNodeFailByJobs,
  workflowNodeJobsSucceed,
  workflowNodeFailedIds,
  workflowNodeJobsCreate,
  workflowNodeReady,
  workflowNodeReopen,
  workflowNodeRequeueByJobs,
  workflowNodeSignalNames,
  workflowNodeSkipDescendants,
  workflowNodeSucceedSignalled,
  workflowNodeTimeoutApply,
  workflowNodeUnskipDescendants,
  workflowNodeWaitingFor,
  workflowNodeWaitStart,
  type FailedNode,
  type JobsFinish,
  type NodeRef,
} from './workflow-nodes.ts';
import { workflowSignalInsert } from './workflow-signals.ts';
import {
  workflowEnd,
  workflowLock,
  workflowLockByJobs,
  workflowLockByNodes,
  workflowProgressApply,
  workflowRestart,
  type WorkflowLockRow,
  type WorkflowProgress,
  type WorkflowState,
} from './workflows.ts';

class Progress {
  readonly #byWorkflow = new Map<string, WorkflowProgress>();

  #get(id: string): WorkflowProgress {
    let p = this.#byWorkflow.get(id);
    if (p === undefined) {
      p = { id, finished: 0, failed: 0, lastSucceededNode: null };
      this.#byWorkflow.set(id, p);
    }
    return p;
  }

  succeeded(nodes: NodeRef[]): void {
    for (const n of nodes) {
      const p = this.#get(n.workflow_id);
      p.finished++;
      p.lastSucceededNode = n.id;
    }
  }

  failed(nodes: NodeRef[]): void {
    for (const n of nodes) {
      const p = this.#get(n.workflow_id);
      p.finished++;
      p.failed++;
    }
  }

  finished(workflowId: string, n: number): void {
    this.#get(workflowId).finished += n;
  }

  /** Nodes that had finished run again: the counts go back up. */
  reopened(workflowId: string, n: number, failed: number): void {
    const p = this.#get(workflowId);
    p.finished -= n;
    p.failed -= failed;
  }

  async apply(tx: Queryable): Promise<{ id: string; state: WorkflowState }[]> {
    return workflowProgressApply(tx, [...this.#byWorkflow.values()]);
  }
}

/**
 * Releases ready nodes of running workflows (jobs become available; signal nodes start waiting) and
 * follows every success through the graph: children reaching zero are released in turn, and signal
 * nodes whose signal already arrived succeed at once. Loops until nothing more becomes ready.
 */
async function propagate(
  tx: Queryable,
  locked: WorkflowLockRow[],
  progress: Progress,
  start: { succeeded: NodeRef[]; ready: NodeRef[] },
  take?: ReleaseTake,
): Promise<void> {
  const running = new Set(locked.filter((w) => w.state === 'running').map((w) => w.id));
  let { succeeded, ready } = start;
  while (succeeded.length > 0 || ready.length > 0) {
    progress.succeeded(succeeded);
    if (succeeded.length > 0) {
      // Job children of running workflows are released by this statement itself.
      ready = [
        ...ready,
        ...(await workflowNodeChildrenRelease(
          tx,
          succeeded.map((n) => n.id),
          [...running],
          take,
        )),
      ];
    }
    // A failed or cancelled workflow still counts its successes down but starts nothing new;
    // resume releases what is ready then.
    const release = ready.filter((n) => running.has(n.workflow_id));
    await workflowNodeJobsCreate(
      tx,
      release.filter((n) => n.type === 'job').map((n) => n.id),
    );
    const signals = release.filter((n) => n.type === 'signal').map((n) => n.id);
    await workflowNodeWaitStart(tx, signals);
    succeeded = await workflowNodeSucceedSignalled(tx, signals);
    ready = [];
  }
}

/**
 * Records the failure of nodes and applies each workflow's policy: `fail_fast` ends the workflow
 * and cancels what has not started (running nodes finish); `continue` skips only what depends on the
 * failed nodes, and the workflow ends as failed once everything else has finished. Either way the
 * workflow's error names the failed node and why (workflowProgressApply writes it for `continue`).
 */
async function failNodes(
  tx: Queryable,
  locked: WorkflowLockRow[],
  progress: Progress,
  failed: FailedNode[],
): Promise<void> {
  if (failed.length === 0) return;
  progress.failed(failed);
  for (const w of locked) {
    const mine = failed.filter((n) => n.workflow_id === w.id);
    if (mine.length === 0) continue;
    if (w.failure_policy === 'fail_fast') {
      if (w.state !== 'running') continue;
      await workflowEnd(
        tx,
        w.id,
        'failed',
        mine.map((n) => `node ${n.key} failed: ${n.error ?? 'no error recorded'}`).join('; '),
      );
      w.state = 'failed';
      progress.finished(w.id, await workflowNodeCancelUnstarted(tx, w.id));
    } else {
      for (const s of await workflowNodeSkipDescendants(
        tx,
        mine.map((n) => n.id),
      ))
        progress.finished(s.workflow_id, s.n);
    }
  }
}

/**
 * In the job-success transaction: the nodes of these jobs succeed and release their children. The
 * workflows are locked first (FOR UPDATE), so this transaction's further statements meet no other
 * writer of their nodes, node successes written alone included. With `finish`, the
 * jobs are marked succeeded here too (jobCompleteMany). The jobs' success, the lock, the nodes'
 * successes, the release and the counters are one statement (workflowNodeJobsSucceed); what it
 * leaves (signal nodes, children of workflows not running) goes on as any release's does. Returns
 * the jobs whose success is recorded: with `finish`, those the owner still held.
 */
export async function workflowJobsSucceeded(
  tx: Queryable,
  jobIds: number[],
  take?: ReleaseTake,
  finish?: JobsFinish,
): Promise<number[]> {
  if (jobIds.length === 0) return [];
  const { written, locked, ready } = await workflowNodeJobsSucceed(tx, jobIds, take, finish);
  if (locked.length === 0) return written;
  const progress = new Progress();
  await propagate(tx, locked, progress, { succeeded: [], ready }, take);
  await progress.apply(tx);
  return written;
}

/** SQLSTATE of a node success written alone that would release a signal node (migration 0035). */
const NEEDS_TRANSACTION = 'TMR01';

/** The error of workflowJobsSucceededAlone when the batch takes a transaction: nothing was kept. */
export function needsTransaction(error: unknown): boolean {
  return (error as { code?: unknown } | null)?.code === NEEDS_TRANSACTION;
}

/**
 * workflowJobsSucceeded with `finish`, as one statement outside a transaction: the jobs' success,
 * their nodes' and the release commit as it ends. The only release that takes more statements, a
 * signal node's in a running workflow, fails it with nothing kept (needsTransaction): the caller
 * writes the batch again in a transaction. Children of workflows not running wait for a resume, as
 * propagate leaves them. `workflows`: the workflows owning the jobs, as their keys name them
 * (workflowNodeJobsSucceed). Returns the jobs whose success is recorded.
 */
export async function workflowJobsSucceededAlone(
  db: Queryable,
  jobIds: number[],
  take: ReleaseTake | undefined,
  finish: JobsFinish,
  workflows?: string[],
): Promise<number[]> {
  if (jobIds.length === 0) return [];
  return (await workflowNodeJobsSucceed(db, jobIds, take, finish, { alone: true, workflows })).written;
}

/** In the transaction that gives up on these jobs (retries exhausted): their nodes fail. */
export async function workflowJobsFailed(tx: Queryable, jobIds: number[]): Promise<void> {
  if (jobIds.length === 0) return;
  const locked = await workflowLockByJobs(tx, jobIds);
  if (locked.length === 0) return;
  const progress = new Progress();
  await failNodes(tx, locked, progress, await workflowNodeFailByJobs(tx, jobIds));
  await progress.apply(tx);
}

/** After a new workflow's rows are inserted: its root nodes start. */
export async function workflowStart(tx: Queryable, workflowId: string, roots: NodeRef[]): Promise<void> {
  const w = await workflowLock(tx, workflowId);
  if (w === null) throw new Error(`workflow ${workflowId} vanished while being submitted`);
  const progress = new Progress();
  await propagate(tx, [w], progress, { succeeded: [], ready: roots });
  await progress.apply(tx);
}

export type WorkflowTransition =
  { ok: true; state: WorkflowState } | { ok: false; state: WorkflowState | null };

/** Cancels a running workflow: nothing new starts, running nodes finish. */
export async function workflowCancel(tx: Queryable, workflowId: string): Promise<WorkflowTransition> {
  const w = await workflowLock(tx, workflowId);
  if (w === null) return { ok: false, state: null };
  if (w.state !== 'running') return { ok: false, state: w.state };
  await workflowEnd(tx, w.id, 'cancelled', 'cancelled');
  const progress = new Progress();
  progress.finished(w.id, await workflowNodeCancelUnstarted(tx, w.id));
  await progress.apply(tx);
  return { ok: true, state: 'cancelled' };
}

/**
 * Resumes a failed or cancelled workflow: failed, skipped and cancelled nodes become pending again
 * and those whose dependencies have all succeeded start. Succeeded nodes are never touched.
 */
export async function workflowResume(tx: Queryable, workflowId: string): Promise<WorkflowTransition> {
  const w = await workflowLock(tx, workflowId);
  if (w === null) return { ok: false, state: null };
  if (w.state !== 'failed' && w.state !== 'cancelled') return { ok: false, state: w.state };
  return { ok: true, state: await restart(tx, w, 0) };
}

/** Resume's work on a locked, ended workflow; `requeued` nodes were already put back to queued. */
async function restart(tx: Queryable, w: WorkflowLockRow, requeued: number): Promise<WorkflowState> {
  const reopened = await workflowNodeReopen(tx, w.id);
  await workflowRestart(tx, w.id, reopened + requeued);
  const progress = new Progress();
  const ready = await workflowNodeReady(tx, w.id);
  await propagate(tx, [{ ...w, state: 'running' }], progress, { succeeded: [], ready });
  const [after] = await progress.apply(tx);
  return after?.state ?? 'running';
}

/**
 * Before a job-layer write that may end or revive workflow nodes' jobs (cancel, dead-letter retry):
 * locks their workflows first, the order every workflow transition takes (workflow, then its jobs),
 * so such a write and a workflow cancel touching the same job queue instead of deadlocking.
 */
export async function workflowJobsLock(tx: Queryable, jobIds: number[]): Promise<void> {
  if (jobIds.length > 0) await workflowLockByJobs(tx, jobIds);
}

/**
 * In the transaction that re-runs jobs from the dead letter (or cancelled ones): each node follows
 * its job again. The failed or cancelled node goes back to queued. A workflow that had ended is
 * resumed around it (its other failed, skipped and cancelled nodes reopen, as `resume` does; this
 * node keeps the retried job, so it does not run twice). In a workflow still running under
 * `continue`, the node's skipped descendants become pending again, except those also downstream of
 * another failed node.
 */
export async function workflowJobsRetried(tx: Queryable, jobIds: number[]): Promise<void> {
  if (jobIds.length === 0) return;
  const locked = await workflowLockByJobs(tx, jobIds);
  if (locked.length === 0) return;
  const requeued = await workflowNodeRequeueByJobs(tx, jobIds);
  const progress = new Progress();
  for (const w of locked) {
    const mine = requeued.filter((n) => n.workflow_id === w.id);
    if (mine.length === 0) continue;
    if (w.state !== 'running') {
      await restart(tx, w, mine.length);
      continue;
    }
    const unskipped = await workflowNodeUnskipDescendants(
      tx,
      mine.map((n) => n.id),
    );
    let reskipped = 0;
    const others = await workflowNodeFailedIds(tx, w.id);
    if (others.length > 0) {
      for (const s of await workflowNodeSkipDescendants(tx, others)) reskipped += s.n;
    }
    progress.reopened(w.id, mine.length + unskipped - reskipped, mine.filter((n) => n.was_failed).length);
  }
  await progress.apply(tx);
}

export type SignalOutcome =
  | { outcome: 'not_found' }
  /** No node of the workflow declares this name; `declared` are the names its nodes do declare. */
  | { outcome: 'undeclared'; declared: string[] }
  | { outcome: 'recorded'; accepted: boolean; completed: number };

/**
 * Records a signal (once per name: a repeat returns accepted false and changes nothing) and succeeds
 * the nodes waiting for it. A signal that arrives before its node is released is kept and completes
 * the node the moment it is released. A name no node declares is refused and nothing is stored: it
 * could never complete anything, and the sender most likely misspelt the one it meant.
 */
export async function workflowSignal(
  tx: Queryable,
  workflowId: string,
  name: string,
  payload: unknown,
): Promise<SignalOutcome> {
  const w = await workflowLock(tx, workflowId);
  if (w === null) return { outcome: 'not_found' };
  const declared = await workflowNodeSignalNames(tx, workflowId);
  if (!declared.includes(name)) return { outcome: 'undeclared', declared };
  if (!(await workflowSignalInsert(tx, workflowId, name, payload))) {
    return { outcome: 'recorded', accepted: false, completed: 0 };
  }
  const succeeded = await workflowNodeSucceedSignalled(
    tx,
    await workflowNodeWaitingFor(tx, workflowId, name),
  );
  const progress = new Progress();
  await propagate(tx, [w], progress, { succeeded, ready: [] });
  await progress.apply(tx);
  return { outcome: 'recorded', accepted: true, completed: succeeded.length };
}

/**
 * Applies the timeouts of these waiting signal nodes of one workflow (rechecked here, under its
 * lock). The lock is taken SKIP LOCKED: a workflow busy with another timer (every worker runs one)
 * or a completion is left to the next sweep rather than waited for; `skipped` says so.
 */
export async function workflowSignalTimeouts(
  tx: Queryable,
  nodeIds: number[],
  asOf: Date | null,
): Promise<{ succeeded: number; failed: number; skipped: boolean }> {
  const locked = await workflowLockByNodes(tx, nodeIds, true);
  if (locked.length !== 1) return { succeeded: 0, failed: 0, skipped: locked.length === 0 };
  const { succeeded, failed } = await workflowNodeTimeoutApply(tx, nodeIds, asOf);
  const progress = new Progress();
  await failNodes(tx, locked, progress, failed);
  await propagate(tx, locked, progress, { succeeded, ready: [] });
  await progress.apply(tx);
  return { succeeded: succeeded.length, failed: failed.length, skipped: false };
}
