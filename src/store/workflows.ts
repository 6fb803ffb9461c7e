/**
 * Statements on `workflows`: one row per workflow, whose lock serialises everything that changes the
 * workflow's nodes (completions, failures, signals, cancel, resume). Taking it first, in id order,
 * gives every such transaction the same lock order, so they queue instead of deadlocking.
 */
import { arrayLiteral } from './array-literal.ts';
import type { Queryable } from './pool.ts';

export const WorkflowState = {
  running: 'running',
  succeeded: 'succeeded',
  failed: 'failed',
  cancelled: 'cancelled',
} as const;
export type WorkflowState = (typeof WorkflowState)[keyof typeof WorkflowState];

export interface WorkflowRow {
  id: string;
  tenant_id: string;
  name: string;
  state: WorkflowState;
  failure_policy: 'fail_fast' | 'continue';
  definition_sha256: string;
  node_count: number;
  unfinished: number;
  failed_nodes: number;
  generation: number;
  last_succeeded_node: number | null;
  error: string | null;
  created_at: Date;
  finished_at: Date | null;
  updated_at: Date;
  /** Set when retention began deleting its nodes; the row itself goes last. */
  pruned_at: Date | null;
}

/** The part of a locked workflow row that release and failure decisions read. */
export interface WorkflowLockRow {
  id: string;
  state: WorkflowState;
  failure_policy: 'fail_fast' | 'continue';
}

export interface WorkflowInsert {
  id: string;
  tenantId: string;
  name: string;
  failurePolicy: 'fail_fast' | 'continue';
  sha256: string;
  nodeCount: number;
}

/** Inserts the row unless the id exists; returns whether it was inserted. */
export async function workflowInsert(q: Queryable, w: WorkflowInsert): Promise<boolean> {
  const { rowCount } = await q.query(
    `INSERT INTO workflows (id, tenant_id, name, failure_policy, definition_sha256, node_count, unfinished)
     VALUES ($1, $2, $3, $4, $5, $6, $6)
     ON CONFLICT (id) DO NOTHING`,
    [w.id, w.tenantId, w.name, w.failurePolicy, w.sha256, w.nodeCount],
  );
  return rowCount === 1;
}

export async function workflowGet(q: Queryable, id: string): Promise<WorkflowRow | null> {
  const { rows } = await q.query<WorkflowRow>('SELECT * FROM workflows WHERE id = $1', [id]);
  return rows[0] ?? null;
}

/** Locks the row; a workflow being pruned (pruned_at set) is treated as gone by every change. */
export async function workflowLock(q: Queryable, id: string): Promise<WorkflowRow | null> {
  const { rows } = await q.query<WorkflowRow>(
    'SELECT * FROM workflows WHERE id = $1 AND pruned_at IS NULL FOR UPDATE',
    [id],
  );
  return rows[0] ?? null;
}

/**
 * The lock statements find the workflows through the nodes, as an array made first: written as
 * `w.id IN (SELECT …)`, the planner, seeing two rows in workflows, read every node of each workflow
 * through (workflow_id, key) and filtered them by the ids (15,000 nodes read per workflow, 7-12 ms
 * per completion of a workflow beside a second one of 20,000 nodes) instead of one index descent per
 * id.
 */
export const OWNING_WORKFLOWS = (nodeColumn: string, ids = '$1::bigint[]'): string =>
  `w.id = ANY (ARRAY(SELECT DISTINCT n.workflow_id FROM workflow_nodes n WHERE n.${nodeColumn} = ANY (${ids})))
   AND w.pruned_at IS NULL`;

/**
 * Locks, in id order, the workflows that own any of these jobs; empty when none is a workflow node.
 * Every transition (cancel, resume, failure, retry, signal) takes FOR UPDATE and so waits for node
 * successes, which hold the same rows FOR KEY SHARE or FOR UPDATE (workflowNodeJobsSucceed), as they
 * wait for it.
 */
export async function workflowLockByJobs(q: Queryable, jobIds: number[]): Promise<WorkflowLockRow[]> {
  const { rows } = await q.query<WorkflowLockRow>(
    `SELECT w.id, w.state, w.failure_policy FROM workflows w
     WHERE ${OWNING_WORKFLOWS('job_id')}
     ORDER BY w.id
     FOR UPDATE OF w`,
    [arrayLiteral(jobIds)],
  );
  return rows;
}

/**
 * Locks, in id order, the workflows that own any of these nodes. With `skipLocked`, a workflow whose
 * row another transaction holds is left out instead of waited for.
 */
export async function workflowLockByNodes(
  q: Queryable,
  nodeIds: number[],
  skipLocked = false,
): Promise<WorkflowLockRow[]> {
  const { rows } = await q.query<WorkflowLockRow>(
    `SELECT w.id, w.state, w.failure_policy FROM workflows w
     WHERE ${OWNING_WORKFLOWS('id')}
     ORDER BY w.id
     FOR UPDATE OF w${skipLocked ? ' SKIP LOCKED' : ''}`,
    [nodeIds],
  );
  return rows;
}

export interface WorkflowProgress {
  id: string;
  /** Nodes that reached a final state (succeeded, failed, skipped, cancelled) in this transaction. */
  finished: number;
  failed: number;
  lastSucceededNode: number | null;
}

/**
 * The counters' update of workflow `w` by the deltas `d` (finished, failed, last): the workflow whose
 * `unfinished` reaches zero while running ends here, succeeded if no node failed, failed otherwise.
 */
export const WORKFLOW_PROGRESS_SET = `
       unfinished = w.unfinished - d.finished,
       failed_nodes = w.failed_nodes + d.failed,
       last_succeeded_node = coalesce(d.last, w.last_succeeded_node),
       state = CASE WHEN w.state = 'running' AND w.unfinished - d.finished = 0
                    THEN CASE WHEN w.failed_nodes + d.failed > 0 THEN 'failed' ELSE 'succeeded' END
                    ELSE w.state END,
       finished_at = CASE WHEN w.state = 'running' AND w.unfinished - d.finished = 0 THEN now() ELSE w.finished_at END,
       -- Failing at the end (under 'continue'): name the node that failed first and why.
       error = CASE WHEN w.state = 'running' AND w.unfinished - d.finished = 0 AND w.failed_nodes + d.failed > 0
                    THEN (SELECT format('node %s failed: %s', n.key, coalesce(n.error, 'no error recorded'))
                                 || CASE WHEN w.failed_nodes + d.failed > 1
                                         THEN format(' (%s nodes failed)', w.failed_nodes + d.failed) ELSE '' END
                            FROM workflow_nodes n WHERE n.workflow_id = w.id AND n.state = 'failed'
                           ORDER BY n.finished_at, n.id LIMIT 1)
                    ELSE w.error END,
       updated_at = now()`;

/**
 * Applies what one transaction did to each workflow's counters; the workflow whose `unfinished`
 * reaches zero while running ends here: succeeded if no node failed, failed otherwise. Returns each
 * workflow's state afterwards.
 */
export async function workflowProgressApply(
  q: Queryable,
  progress: WorkflowProgress[],
): Promise<{ id: string; state: WorkflowState }[]> {
  if (progress.length === 0) return [];
  const { rows } = await q.query<{ id: string; state: WorkflowState }>(
    `WITH d AS (SELECT * FROM unnest($1::text[], $2::int[], $3::int[], $4::bigint[]) AS d(id, finished, failed, last))
     UPDATE workflows w SET
${WORKFLOW_PROGRESS_SET}
     FROM d
     WHERE w.id = d.id AND w.id = ANY($1::text[])
     RETURNING w.id, w.state`,
    [
      progress.map((p) => p.id),
      progress.map((p) => p.finished),
      progress.map((p) => p.failed),
      progress.map((p) => p.lastSucceededNode),
    ],
  );
  return rows;
}

/** Ends a running workflow early (fail_fast after a failure, or cancel). */
export async function workflowEnd(
  q: Queryable,
  id: string,
  state: 'failed' | 'cancelled',
  error: string | null,
): Promise<void> {
  await q.query(
    `UPDATE workflows SET state = $2, error = $3, finished_at = now(), updated_at = now()
     WHERE id = $1 AND state = 'running'`,
    [id, state, error],
  );
}

/** Puts a failed or cancelled workflow back to running with a new generation, for resume. */
export async function workflowRestart(q: Queryable, id: string, reopened: number): Promise<number> {
  const { rows } = await q.query<{ generation: number }>(
    `UPDATE workflows SET state = 'running', error = NULL, finished_at = NULL, failed_nodes = 0,
       generation = generation + 1, unfinished = unfinished + $2, updated_at = now()
     WHERE id = $1
     RETURNING generation`,
    [id, reopened],
  );
  return rows[0]?.generation ?? 0;
}
