/**
 * The graph side of a workflow's node listing: each listed node's parents (`dependsOn`). Edges are
 * stored as each node's array of children (release reads children), and nothing indexes them by
 * child; an index, or a parents array beside it, would slow every submit of 100,000 nodes for a read
 * only the listing needs. So the parents of a page are found from the parent side: the workflow's
 * nodes by `(workflow_id, …)` index, keeping each whose children include a node of the page. That
 * costs one pass over the workflow's rows per page: nothing for the drawable workflows (up to a few
 * hundred nodes) the dashboard asks for, linear for large ones.
 */
import type { Queryable } from './pool.ts';

/** Parent keys (sorted) of each of `keys` in `workflowId`; a key without parents maps to `[]`. */
export async function workflowNodeParents(
  q: Queryable,
  workflowId: string,
  keys: string[],
): Promise<Map<string, string[]>> {
  const out = new Map<string, string[]>(keys.map((k) => [k, []]));
  if (keys.length === 0) return out;
  const { rows } = await q.query<{ child: string; parents: string[] }>(
    `WITH page AS (
       SELECT id, key FROM workflow_nodes WHERE workflow_id = $1 AND key = ANY($2::text[])
     )
     SELECT c.key AS child, array_agg(p.key ORDER BY p.key) AS parents
     FROM workflow_nodes p, unnest(p.children) AS e(child_id), page c
     WHERE p.workflow_id = $1 AND p.children && ARRAY(SELECT id FROM page) AND c.id = e.child_id
     GROUP BY c.key`,
    [workflowId, keys],
  );
  for (const r of rows) out.set(r.child, r.parents);
  return out;
}
