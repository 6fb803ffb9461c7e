/**
 * `client.workflows`: submit, inspect, cancel, resume and signal workflows. Each write has a `…Tx`
 * twin that runs in the caller's transaction, so a workflow can be submitted atomically with the
 * application's own rows. A read of one workflow by id returns null when it does not exist; an
 * action on a missing id (cancel, resume, signal) throws WorkflowNotFoundError.
 */
import { NotFoundError, TidemarkError } from '../errors.ts';
import { withTransaction, type Pool } from '../store/pool.ts';
import type { Queryable } from '../store/pool.ts';
import {
  workflowCancel,
  workflowResume,
  workflowSignal,
  type WorkflowTransition,
} from '../store/workflow-release.ts';
import type { NodeState } from '../store/workflow-nodes.ts';
import { workflowChecked } from '../contract/workflow.ts';
import { WorkflowValidationError, type WorkflowSpec } from './definition.ts';
import { workflowList, type WorkflowListOptions, type WorkflowPage } from './list.ts';
import { workflowStatusGet, workflowNodesPage, type NodePage, type WorkflowStatus } from './status.ts';
import { workflowTimelineGet, type TimelineOptions, type WorkflowTimeline } from './timeline.ts';
import { workflowSubmitTx, type SubmitOptions, type SubmitResult } from './submit.ts';

/** An action named a workflow id that does not exist. */
export class WorkflowNotFoundError extends NotFoundError {
  override name = 'WorkflowNotFoundError';
  constructor(readonly workflowId: string) {
    super(`workflow '${workflowId}' does not exist`);
  }
}

/** A signal whose name no node of the workflow declares: refused, nothing stored. */
export class WorkflowSignalUndeclaredError extends TidemarkError {
  override name = 'WorkflowSignalUndeclaredError';
  readonly code = 'signal_not_declared';
  constructor(
    readonly workflowId: string,
    readonly signal: string,
    /** The signal names the workflow's nodes declare, sorted; empty when it has no signal nodes. */
    readonly declared: string[],
  ) {
    super(
      `workflow '${workflowId}' has no signal node named '${signal}'; ` +
        (declared.length === 0
          ? 'it has no signal nodes'
          : `its signal nodes wait for: ${declared.join(', ')}`),
    );
  }
}

export interface SignalResult {
  /** False when this workflow had already received a signal of this name: nothing changed. */
  accepted: boolean;
  /** Waiting nodes this signal completed now. */
  completed: number;
}

export class WorkflowClient {
  readonly #pool: Pool;
  readonly #options: SubmitOptions;

  constructor(pool: Pool, options: SubmitOptions = {}) {
    this.#pool = pool;
    this.#options = options;
  }

  /**
   * Submits a workflow, checked first against the API's schema (src/contract/workflow.ts) and then
   * as a graph; bad input throws WorkflowValidationError naming each field, and nothing is written.
   */
  async submit(spec: WorkflowSpec): Promise<SubmitResult> {
    const checked = checkedSpec(spec);
    return withTransaction(this.#pool, (tx) => workflowSubmitTx(tx, checked, this.#options));
  }

  async submitTx(tx: Queryable, spec: WorkflowSpec): Promise<SubmitResult> {
    return workflowSubmitTx(tx, checkedSpec(spec), this.#options);
  }

  /** The workflow's state and counts, or null when there is no such workflow. */
  async status(id: string): Promise<WorkflowStatus | null> {
    return workflowStatusGet(this.#pool, id);
  }

  /** Workflows newest first, one tenant's or all, optionally in one state; page with `next`. */
  list(options?: WorkflowListOptions): Promise<WorkflowPage> {
    return workflowList(this.#pool, options);
  }

  nodes(id: string, options?: { after?: string; state?: NodeState; limit?: number }): Promise<NodePage> {
    return workflowNodesPage(this.#pool, id, options);
  }

  /**
   * Each node's release, first start and last finish (from its job's attempts) for one page of nodes
   * in key order, or the nodes named in `keys`, and the critical path; null when there is no such
   * workflow. It reads only what it returns, so it suits 100,000-node workflows.
   */
  timeline(id: string, options?: TimelineOptions): Promise<WorkflowTimeline | null> {
    return workflowTimelineGet(this.#pool, id, options);
  }

  /** Cancels a running workflow; returns false if it had already ended. Running nodes finish. */
  async cancel(id: string): Promise<boolean> {
    return found(id, await withTransaction(this.#pool, (tx) => workflowCancel(tx, id))).ok;
  }

  /** Resumes a failed or cancelled workflow; returns false if it was running or succeeded. */
  async resume(id: string): Promise<boolean> {
    return found(id, await withTransaction(this.#pool, (tx) => workflowResume(tx, id))).ok;
  }

  /**
   * Sends signal `name`: completes the signal nodes waiting for it, or those released later. Throws
   * WorkflowSignalUndeclaredError (naming the declared ones) when no node declares `name`.
   */
  async signal(id: string, name: string, payload?: unknown): Promise<SignalResult> {
    const r = await withTransaction(this.#pool, (tx) => workflowSignal(tx, id, name, payload));
    if (r.outcome === 'not_found') throw new WorkflowNotFoundError(id);
    if (r.outcome === 'undeclared') throw new WorkflowSignalUndeclaredError(id, name, r.declared);
    return { accepted: r.accepted, completed: r.completed };
  }
}

function checkedSpec(spec: WorkflowSpec): WorkflowSpec {
  const checked = workflowChecked(spec, '');
  if (Array.isArray(checked)) throw new WorkflowValidationError(checked);
  return checked;
}

function found(id: string, t: WorkflowTransition): WorkflowTransition {
  if (!t.ok && t.state === null) throw new WorkflowNotFoundError(id);
  return t;
}
