/**
 * The list of workflows a person scrolls: newest first, one tenant's or all, optionally in one state.
 * Each item comes from the workflow's own row (counters kept by every completion), so a page costs
 * one index range however large its workflows are; per-node detail is `status`.
 */
import type { Queryable } from '../store/pool.ts';
import { workflowSearch, type WorkflowCursor } from '../store/workflow-search.ts';
import { WorkflowState } from '../store/workflows.ts';
import { workflowInvalid } from './definition.ts';

export interface WorkflowSummary {
  id: string;
  name: string;
  tenantId: string;
  state: WorkflowState;
  failurePolicy: 'fail_fast' | 'continue';
  nodeCount: number;
  /** Nodes not yet succeeded, failed, skipped or cancelled. */
  unfinished: number;
  failedNodes: number;
  generation: number;
  error: string | null;
  startedAt: Date;
  finishedAt: Date | null;
}

export interface WorkflowListOptions {
  tenantId?: string;
  state?: WorkflowState;
  /** `next` of the previous page. */
  after?: string;
  limit?: number;
}

export interface WorkflowPage {
  items: WorkflowSummary[];
  /** Pass as `after` for the next page; null on the last page. */
  next: string | null;
}

export const MAX_LIST_PAGE = 1000;
const STATES = Object.values(WorkflowState);

function encodeCursor(c: WorkflowCursor): string {
  return Buffer.from(JSON.stringify([c.at, c.id])).toString('base64url');
}

function decodeCursor(text: string): WorkflowCursor {
  try {
    const value: unknown = JSON.parse(Buffer.from(text, 'base64url').toString('utf8'));
    if (
      Array.isArray(value) &&
      value.length === 2 &&
      typeof value[0] === 'string' &&
      typeof value[1] === 'string' &&
      !Number.isNaN(Date.parse(value[0]))
    ) {
      return { at: value[0], id: value[1] };
    }
  } catch {
    // Falls through to the error below: any text that is not a cursor we gave out.
  }
  throw workflowInvalid('after', 'is not a cursor from a previous page (`next`)');
}

export async function workflowList(q: Queryable, options: WorkflowListOptions = {}): Promise<WorkflowPage> {
  const limit = options.limit ?? 100;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_LIST_PAGE) {
    throw workflowInvalid('limit', `must be an integer from 1 to ${MAX_LIST_PAGE}, got ${limit}`);
  }
  if (options.state !== undefined && !STATES.includes(options.state)) {
    throw workflowInvalid('state', `must be one of ${STATES.join(', ')}`);
  }
  const rows = await workflowSearch(q, {
    tenantId: options.tenantId,
    state: options.state,
    after: options.after === undefined ? undefined : decodeCursor(options.after),
    limit,
  });
  const last = rows.at(-1);
  return {
    items: rows.map((w) => ({
      id: w.id,
      name: w.name,
      tenantId: w.tenant_id,
      state: w.state,
      failurePolicy: w.failure_policy,
      nodeCount: w.node_count,
      unfinished: w.unfinished,
      failedNodes: w.failed_nodes,
      generation: w.generation,
      error: w.error,
      startedAt: w.created_at,
      finishedAt: w.finished_at,
    })),
    next:
      rows.length === limit && last !== undefined ? encodeCursor({ at: last.cursor_at, id: last.id }) : null,
  };
}
