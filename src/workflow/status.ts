/**
 * What a person asks of a workflow: its state, nodes per state, the critical path so far, start and
 * end; and its nodes page by page. Counting reads one index range of the workflow (about 20 ms at
 * 100,000 nodes); the critical path follows one link per step of its own length.
 */
import type { Queryable } from '../store/pool.ts';
import type { JobState } from '../store/jobs.ts';
import {
  workflowNodeCountByState,
  workflowNodeCriticalPath,
  workflowNodeList,
  type NodeState,
  type WorkflowNodeListRow,
} from '../store/workflow-nodes.ts';
import { workflowGet, type WorkflowState } from '../store/workflows.ts';
import { workflowInvalid } from './definition.ts';

export interface WorkflowStatus {
  id: string;
  name: string;
  tenantId: string;
  state: WorkflowState;
  failurePolicy: 'fail_fast' | 'continue';
  error: string | null;
  /** Resumes so far + 1. */
  generation: number;
  nodeCount: number;
  /** Nodes per node state; `queued` nodes are also split by their job's state in `jobs`. */
  nodes: Record<NodeState, number>;
  jobs: Record<string, number>;
  startedAt: Date;
  finishedAt: Date | null;
  /** From a root to the node that succeeded last, each node released by the one before it. */
  criticalPath: { node: string; releasedAt: Date | null; startedAt: Date | null; finishedAt: Date | null }[];
}

/** One node of a workflow as the client returns it. */
export interface WorkflowNode {
  key: string;
  type: 'job' | 'signal';
  state: NodeState;
  /** Dependencies not yet succeeded. */
  pendingDeps: number;
  /** The node's job once released (job nodes only). */
  jobId: number | null;
  jobState: JobState | null;
  attempt: number | null;
  /** Times the node has been released (a resume runs it again). */
  runs: number;
  releasedAt: Date | null;
  /** Its job's first attempt's start. */
  startedAt: Date | null;
  finishedAt: Date | null;
  error: string | null;
  output: unknown;
}

function nodeOf(row: WorkflowNodeListRow): WorkflowNode {
  return {
    key: row.key,
    type: row.type,
    state: row.state,
    pendingDeps: row.pending_deps,
    jobId: row.job_id,
    jobState: row.job_state as JobState | null,
    attempt: row.attempt,
    runs: row.runs,
    releasedAt: row.released_at,
    startedAt: row.started_at,
    finishedAt: row.finished_at,
    error: row.error,
    output: row.output,
  };
}

export interface NodePage {
  nodes: WorkflowNode[];
  /** Pass as `after` for the next page; null on the last page. */
  next: string | null;
}

const NODE_STATES: NodeState[] = [
  'pending',
  'queued',
  'waiting',
  'succeeded',
  'failed',
  'skipped',
  'cancelled',
];
export const MAX_PAGE = 10_000;

export async function workflowStatusGet(q: Queryable, id: string): Promise<WorkflowStatus | null> {
  const w = await workflowGet(q, id);
  if (w === null) return null;
  const nodes = Object.fromEntries(NODE_STATES.map((s) => [s, 0])) as Record<NodeState, number>;
  const jobs: Record<string, number> = {};
  for (const row of await workflowNodeCountByState(q, id)) {
    nodes[row.state as NodeState] += row.n;
    if (row.job_state !== null) jobs[row.job_state] = (jobs[row.job_state] ?? 0) + row.n;
  }
  const path = w.last_succeeded_node === null ? [] : await workflowNodeCriticalPath(q, w.last_succeeded_node);
  return {
    id: w.id,
    name: w.name,
    tenantId: w.tenant_id,
    state: w.state,
    failurePolicy: w.failure_policy,
    error: w.error,
    generation: w.generation,
    nodeCount: w.node_count,
    nodes,
    jobs,
    startedAt: w.created_at,
    finishedAt: w.finished_at,
    criticalPath: path.map((p) => ({
      node: p.key,
      releasedAt: p.released_at,
      startedAt: p.started_at,
      finishedAt: p.finished_at,
    })),
  };
}

export async function workflowNodesPage(
  q: Queryable,
  id: string,
  options: { after?: string; state?: NodeState; limit?: number } = {},
): Promise<NodePage> {
  const limit = options.limit ?? 1000;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE) {
    throw workflowInvalid('limit', `must be an integer from 1 to ${MAX_PAGE}, got ${limit}`);
  }
  if (options.state !== undefined && !NODE_STATES.includes(options.state)) {
    throw workflowInvalid('state', `must be one of ${NODE_STATES.join(', ')}`);
  }
  const rows = await workflowNodeList(q, id, {
    after: options.after ?? null,
    state: options.state ?? null,
    limit,
  });
  const nodes = rows.map(nodeOf);
  return { nodes, next: nodes.length === limit ? (nodes[nodes.length - 1]?.key ?? null) : null };
}
