/** Statements on `workflow_signals`: one row per (workflow, signal name), so a repeat is a no-op. */
import type { Queryable } from './pool.ts';

/** Records a signal; returns false when the workflow already received one of this name. */
export async function workflowSignalInsert(
  q: Queryable,
  workflowId: string,
  name: string,
  payload: unknown,
): Promise<boolean> {
  const { rowCount } = await q.query(
    `INSERT INTO workflow_signals (workflow_id, name, payload) VALUES ($1, $2, $3::jsonb)
     ON CONFLICT (workflow_id, name) DO NOTHING`,
    [workflowId, name, JSON.stringify(payload ?? null)],
  );
  return rowCount === 1;
}
