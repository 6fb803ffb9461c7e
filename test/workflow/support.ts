/**
 * A stand-in for the worker's completion path, for testing the workflow store on its own: claim jobs
 * the way a worker does, then record success or final failure in one transaction that also calls the
 * workflow release, exactly as the worker's completion transaction does.
 */
import type { Pool } from '../../src/store/pool.ts';
import { withTransaction } from '../../src/store/pool.ts';
import { workflowJobsFailed, workflowJobsSucceeded } from '../../src/store/workflow-release.ts';

export interface ClaimedJob {
  id: number;
  key: string;
  kind: string;
  payload: unknown;
}

/** Claims available jobs of a workflow (all of them, or those of the named nodes). */
export async function claim(pool: Pool, workflowId: string, nodeKeys?: string[]): Promise<ClaimedJob[]> {
  const { rows } = await pool.query<ClaimedJob>(
    `UPDATE jobs j SET state = 'running', attempt = attempt + 1, started_at = now(),
       lease_owner = 'test', lease_expires_at = now() + interval '1 hour'
     FROM workflow_nodes n
     WHERE n.job_id = j.id AND n.workflow_id = $1 AND j.state = 'available'
       AND ($2::text[] IS NULL OR n.key = ANY($2))
     RETURNING j.id, n.key, j.kind, j.payload`,
    [workflowId, nodeKeys ?? null],
  );
  return rows;
}

export async function succeed(pool: Pool, jobIds: number[]): Promise<void> {
  await withTransaction(pool, async (tx) => {
    await tx.query(
      `UPDATE jobs SET state = 'succeeded', finished_at = now() WHERE id = ANY($1) AND state = 'running'`,
      [jobIds],
    );
    await workflowJobsSucceeded(tx, jobIds);
  });
}

export async function failFinally(pool: Pool, jobIds: number[], error = 'boom'): Promise<void> {
  await withTransaction(pool, async (tx) => {
    await tx.query(
      `UPDATE jobs SET state = 'dead', finished_at = now(), last_error = $2 WHERE id = ANY($1) AND state = 'running'`,
      [jobIds, error],
    );
    await workflowJobsFailed(tx, jobIds);
  });
}

/** Claims and succeeds everything available until nothing is; returns node keys in run order. */
export async function drain(pool: Pool, workflowId: string): Promise<string[]> {
  const ran: string[] = [];
  for (;;) {
    const jobs = await claim(pool, workflowId);
    if (jobs.length === 0) return ran;
    ran.push(...jobs.map((j) => j.key));
    await succeed(
      pool,
      jobs.map((j) => j.id),
    );
  }
}

export async function nodeStates(pool: Pool, workflowId: string): Promise<Record<string, string>> {
  const { rows } = await pool.query<{ key: string; state: string }>(
    'SELECT key, state FROM workflow_nodes WHERE workflow_id = $1 ORDER BY key',
    [workflowId],
  );
  return Object.fromEntries(rows.map((r) => [r.key, r.state]));
}

export async function workflowState(pool: Pool, workflowId: string): Promise<string | undefined> {
  const { rows } = await pool.query<{ state: string }>('SELECT state FROM workflows WHERE id = $1', [
    workflowId,
  ]);
  return rows[0]?.state;
}

export async function availableKeys(pool: Pool, workflowId: string): Promise<string[]> {
  const { rows } = await pool.query<{ key: string }>(
    `SELECT n.key FROM workflow_nodes n JOIN jobs j ON j.id = n.job_id
     WHERE n.workflow_id = $1 AND j.state = 'available' ORDER BY n.key`,
    [workflowId],
  );
  return rows.map((r) => r.key);
}
