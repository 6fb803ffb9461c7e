/**
 * A workflow's timeline: each node's start and end from its job's attempts, for a page of nodes, a
 * selection by key, or the critical path. Every read is bounded by what it returns, whatever the
 * workflow's size: a page is an index range of (workflow_id, key), a selection one probe of it per
 * key, and the critical path one primary-key step per node of the path. Each node's job and its
 * first attempt are primary-key lookups (jobs, job_attempts).
 */
import type { NodeState } from './workflow-nodes.ts';
import type { Queryable } from './pool.ts';

export interface TimelineRow {
  key: string;
  type: 'job' | 'signal';
  state: NodeState;
  job_id: number | null;
  job_state: string | null;
  /** Attempts of the node's current job so far. */
  attempts: number | null;
  /** The parent whose success released it (its last dependency to finish). */
  released_by: string | null;
  released_at: Date | null;
  /** The first attempt's start (a signal node: when it began to wait). */
  started_at: Date | null;
  /** The last attempt's end, once the node is finished. */
  finished_at: Date | null;
}

/** From `n` (workflow_nodes) and `j` (its job, left-joined): the columns of TimelineRow. */
const COLUMNS = `n.key, n.type, n.state, CASE WHEN n.runs > 0 THEN n.job_id END AS job_id, j.state AS job_state, j.attempt AS attempts,
  (SELECT p.key FROM workflow_nodes p WHERE p.id = n.released_by) AS released_by, n.released_at,
  CASE WHEN n.type = 'signal' THEN n.released_at
       -- A retried job's row holds its latest attempt's start; the first is in job_attempts.
       ELSE coalesce((SELECT min(a.started_at) FROM job_attempts a WHERE a.job_id = n.job_id), j.started_at) END
    AS started_at,
  -- A node skipped or cancelled before it started has an end but never ran: no end either.
  CASE WHEN n.state IN ('succeeded', 'failed', 'skipped', 'cancelled')
        AND (CASE WHEN n.type = 'signal' THEN n.released_at ELSE j.started_at END) IS NOT NULL
       THEN coalesce(j.finished_at, n.finished_at) END AS finished_at`;

/** One page of a workflow's nodes in key order, after `after` (exclusive). */
export async function workflowTimelinePage(
  q: Queryable,
  workflowId: string,
  after: string | null,
  limit: number,
): Promise<TimelineRow[]> {
  const { rows } = await q.query<TimelineRow>({
    name: 'workflowTimelinePage',
    text: `SELECT ${COLUMNS}
             FROM workflow_nodes n LEFT JOIN jobs j ON j.id = n.job_id
            WHERE n.workflow_id = $1 AND n.key > coalesce($2, '')
            ORDER BY n.key LIMIT $3`,
    values: [workflowId, after, limit],
  });
  return rows;
}

/** The named nodes of a workflow, in key order; keys it does not have are left out. */
export async function workflowTimelineByKeys(
  q: Queryable,
  workflowId: string,
  keys: readonly string[],
): Promise<TimelineRow[]> {
  if (keys.length === 0) return [];
  const { rows } = await q.query<TimelineRow>({
    name: 'workflowTimelineByKeys',
    // One probe of (workflow_id, key) per key, forced by the LIMIT (a subquery with one is not
    // flattened into a join). As a join, or with key = ANY($2), the generic plan scanned the whole
    // workflow and filtered: statistics of many small workflows say a workflow is a few rows.
    text: `SELECT ${COLUMNS}
             FROM unnest($2::text[]) AS k(key)
            CROSS JOIN LATERAL (SELECT * FROM workflow_nodes w
                                 WHERE w.workflow_id = $1 AND w.key = k.key LIMIT 1) n
             LEFT JOIN jobs j ON j.id = n.job_id
            ORDER BY n.key`,
    values: [workflowId, keys],
  });
  return rows;
}

/**
 * The critical path, root first: the chain that ends at the node that finished last (the last to
 * succeed, or a failed node that finished after it) and steps back, at each node, to the parent whose
 * success released it, which is its dependency that finished last (recorded at release as
 * released_by). At most `limit` nodes, the ones nearest the end; `complete` says whether the chain
 * reached a root. For a running workflow, the path so far.
 */
export async function workflowTimelineCriticalPath(
  q: Queryable,
  workflowId: string,
  limit: number,
): Promise<{ rows: TimelineRow[]; complete: boolean }> {
  const { rows } = await q.query<TimelineRow & { depth: number; parent_id: string | null }>({
    name: 'workflowTimelineCriticalPath',
    // The succeeded candidate is the workflow row's last_succeeded_node. Failed ones are looked for
    // only when the row counts any: no index has a node's state (migration 0025), so that read goes
    // through every node of the workflow.
    text: `WITH RECURSIVE last AS (
             SELECT c.id FROM (
               SELECT n.id, n.finished_at FROM workflows w JOIN workflow_nodes n ON n.id = w.last_succeeded_node
                WHERE w.id = $1
               UNION ALL
               (SELECT n.id, n.finished_at FROM workflow_nodes n
                 WHERE n.workflow_id = $1 AND n.state = 'failed'
                   AND (SELECT w.failed_nodes FROM workflows w WHERE w.id = $1) > 0
                 ORDER BY n.finished_at DESC NULLS LAST LIMIT 1)
             ) c
             ORDER BY c.finished_at DESC NULLS LAST LIMIT 1
           ), path AS (
             SELECT n.id, n.released_by, 1 AS depth FROM workflow_nodes n WHERE n.id = (SELECT id FROM last)
             UNION ALL
             SELECT n.id, n.released_by, path.depth + 1
               FROM path JOIN workflow_nodes n ON n.id = path.released_by
              WHERE path.depth < $2
           )
           SELECT ${COLUMNS}, path.depth, path.released_by::text AS parent_id
             FROM path JOIN workflow_nodes n ON n.id = path.id LEFT JOIN jobs j ON j.id = n.job_id
            ORDER BY path.depth DESC`,
    values: [workflowId, limit],
  });
  const root = rows[0];
  return {
    rows: rows.map(({ depth: _depth, parent_id: _parent, ...r }) => r),
    complete: root === undefined || root.parent_id === null,
  };
}
