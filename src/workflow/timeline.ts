/**
 * A workflow's timeline (`client.workflows.timeline`): per node, when it was released, when its job
 * first started (its first attempt) and when it last finished, for one page of nodes in key order
 * or a selection by key, and the critical path. A request reads what it returns and no more, so a
 * 100,000-node workflow answers as fast as a small one (test/workflow/timeline.test.ts).
 */
import type { JobState } from '../store/jobs.ts';
import type { Queryable } from '../store/pool.ts';
import type { NodeState } from '../store/workflow-nodes.ts';
import {
  workflowTimelineByKeys,
  workflowTimelineCriticalPath,
  workflowTimelinePage,
  type TimelineRow,
} from '../store/workflow-timeline.ts';
import { workflowGet, type WorkflowState } from '../store/workflows.ts';
import { workflowInvalid } from './definition.ts';

/** Most nodes one timeline request returns, as a page or a selection. */
export const TIMELINE_PAGE_MAX = 1_000;
/** Most nodes of the critical path returned: the ones nearest its end. A step is one index lookup. */
export const TIMELINE_PATH_MAX = 1_000;

export interface TimelineNode {
  key: string;
  type: 'job' | 'signal';
  state: NodeState;
  jobId: number | null;
  jobState: JobState | null;
  /** Attempts of its current job so far (null before its job exists). */
  attempts: number | null;
  /** The dependency whose success released it: its parent that finished last. Null for a root. */
  releasedBy: string | null;
  /** When its dependencies were all met (its job was enqueued, or its signal wait began). */
  releasedAt: Date | null;
  /** Its job's first attempt's start; a signal node's wait's start. */
  startedAt: Date | null;
  /** Its job's last attempt's end, once the node is finished (null while it runs or retries). */
  finishedAt: Date | null;
  /** On the critical path (as far as the path returned reaches). */
  critical: boolean;
}

export interface WorkflowTimeline {
  id: string;
  state: WorkflowState;
  nodeCount: number;
  startedAt: Date;
  finishedAt: Date | null;
  /**
   * Root first: the chain of nodes whose ends decided the workflow's end (so far, while it runs),
   * each released by the one before it. At most `pathLimit` nodes, those nearest its end.
   */
  criticalPath: TimelineNode[];
  /** Whether criticalPath reaches back to a root (false when `pathLimit` cut it). */
  criticalPathComplete: boolean;
  /** The page or the selection asked for, in key order. */
  nodes: TimelineNode[];
  /** For the next page: pass as `after`; null on the last page and for a selection. */
  next: string | null;
}

export interface TimelineOptions {
  /** A page of nodes in key order after this key (exclusive). */
  after?: string;
  /** Nodes per page, 0 (the critical path only) to 1,000; default 200. */
  limit?: number;
  /** Instead of a page: these nodes (up to 1,000 keys). */
  keys?: readonly string[];
  /** Most nodes of the critical path, 0 to 1,000; default 1,000. */
  pathLimit?: number;
}

function nodeOf(r: TimelineRow, critical: ReadonlySet<string>): TimelineNode {
  return {
    key: r.key,
    type: r.type,
    state: r.state,
    jobId: r.job_id === null ? null : Number(r.job_id),
    jobState: r.job_state as JobState | null,
    attempts: r.attempts,
    releasedBy: r.released_by,
    releasedAt: r.released_at,
    startedAt: r.started_at,
    finishedAt: r.finished_at,
    critical: critical.has(r.key),
  };
}

function bounded(field: string, value: number | undefined, fallback: number, max: number): number {
  if (value === undefined) return fallback;
  if (!Number.isInteger(value) || value < 0 || value > max) {
    throw workflowInvalid(field, `must be an integer from 0 to ${max}, got ${String(value)}`);
  }
  return value;
}

/** The timeline, or null when there is no such workflow. Bad options throw WorkflowValidationError. */
export async function workflowTimelineGet(
  q: Queryable,
  id: string,
  options: TimelineOptions = {},
): Promise<WorkflowTimeline | null> {
  const limit = bounded('limit', options.limit, 200, TIMELINE_PAGE_MAX);
  const pathLimit = bounded('pathLimit', options.pathLimit, TIMELINE_PATH_MAX, TIMELINE_PATH_MAX);
  const keys = options.keys;
  if (keys !== undefined) {
    if (options.after !== undefined) throw workflowInvalid('keys', 'give keys or after, not both');
    if (keys.length > TIMELINE_PAGE_MAX) {
      throw workflowInvalid('keys', `at most ${TIMELINE_PAGE_MAX} keys, got ${keys.length}`);
    }
  }
  const w = await workflowGet(q, id);
  if (w === null) return null;
  const path =
    pathLimit === 0 ? { rows: [], complete: false } : await workflowTimelineCriticalPath(q, id, pathLimit);
  const critical = new Set(path.rows.map((r) => r.key));
  let rows: TimelineRow[] = [];
  let next: string | null = null;
  if (keys !== undefined) rows = await workflowTimelineByKeys(q, id, [...new Set(keys)]);
  else if (limit > 0) {
    rows = await workflowTimelinePage(q, id, options.after ?? null, limit);
    next = rows.length === limit ? (rows.at(-1)?.key ?? null) : null;
  }
  return {
    id: w.id,
    state: w.state,
    nodeCount: w.node_count,
    startedAt: w.created_at,
    finishedAt: w.finished_at,
    criticalPath: path.rows.map((r) => nodeOf(r, critical)),
    criticalPathComplete: path.complete,
    nodes: rows.map((r) => nodeOf(r, critical)),
    next,
  };
}
