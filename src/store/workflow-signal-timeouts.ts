/**
 * Applies the timeouts of signal nodes that are due: every worker that runs maintenance calls this
 * each pass (and a program that runs no worker, through SignalTimer). Each timeout is applied under
 * its workflow's row lock, taken SKIP LOCKED and rechecked there, so two processes never apply one
 * twice and never queue behind each other or behind completions. Deadlines are judged by the
 * database's clock, like leases, so a process with a skewed clock changes nothing.
 */
import { withTransaction, type Pool } from './pool.ts';
import { workflowNodeTimedOut } from './workflow-nodes.ts';
import { workflowSignalTimeouts } from './workflow-release.ts';

const BATCH = 500;

/** One sweep: applies every timeout due by `asOf` (the database's now when null); returns how many. */
export async function signalTimeoutsFire(pool: Pool, asOf: Date | null = null): Promise<number> {
  let total = 0;
  for (;;) {
    const due = await workflowNodeTimedOut(pool, asOf, BATCH);
    if (due.length === 0) return total;
    const byWorkflow = new Map<string, number[]>();
    for (const d of due) byWorkflow.set(d.workflow_id, [...(byWorkflow.get(d.workflow_id) ?? []), d.id]);
    let skipped = 0;
    for (const ids of byWorkflow.values()) {
      const r = await withTransaction(pool, (tx) => workflowSignalTimeouts(tx, ids, asOf));
      total += r.succeeded + r.failed;
      if (r.skipped) skipped++;
    }
    // What another transaction held is still due: the next sweep takes it (reading it again now
    // could spin on the same locked rows).
    if (due.length < BATCH || skipped > 0) return total;
  }
}
