/**
 * Statements on `workflow_nodes`. A node's edges are the ids of its children, an array on its own
 * row (migration 0014). Every statement takes arrays of ids and works on a whole batch at once
 * (`= ANY($1)` on an index), never one node per statement: a completion batch of 1,000 jobs costs the
 * same handful of statements as a batch of one.
 */
import { arrayElement, arrayLiteral } from './array-literal.ts';
import { ownedAttemptSql } from './attempt-sql.ts';
import { COPY_CHUNK_ROWS, COPY_NULL, copyIn, copyInt, copyJson, copyText } from './copy-text.ts';
import type { PoolClient, Queryable } from './pool.ts';
import { workflowJobKeySql } from './job-key.ts';
import { jobEndedCountsAdd } from './job-ended-counts.ts';
import type { JobClaimed, ReleaseTake } from './jobs.ts';
import {
  OWNING_WORKFLOWS,
  WORKFLOW_PROGRESS_SET,
  type WorkflowLockRow,
  type WorkflowState,
} from './workflows.ts';

export const NodeState = {
  pending: 'pending',
  queued: 'queued',
  waiting: 'waiting',
  succeeded: 'succeeded',
  failed: 'failed',
  skipped: 'skipped',
  cancelled: 'cancelled',
} as const;
export type NodeState = (typeof NodeState)[keyof typeof NodeState];

/** Each node's children, compressed: node i's are index[start[i] .. start[i + 1]). */
export interface NodeChildren {
  start: Int32Array;
  index: Int32Array;
}

export interface WorkflowNodeInsert {
  key: string;
  type: 'job' | 'signal';
  queue: string | null;
  kind: string | null;
  payload: unknown;
  priority: number;
  maxAttempts: number;
  timeoutMs: number | null;
  signalName: string | null;
  signalTimeoutMs: number | null;
  onTimeout: 'fail' | 'default' | null;
  defaultOutput: unknown;
  /** Indexes into the same array. */
  parents: number[];
}

/** A node row as the release code sees it. */
export interface NodeRef {
  id: number;
  workflow_id: string;
  type: 'job' | 'signal';
}

/** A node that just failed, with what its workflow's error names: its key and why. */
export interface FailedNode extends NodeRef {
  key: string;
  error: string | null;
}

/**
 * Ids one nextval of workflow_nodes' identity sequence stands for: its INCREMENT BY (migration 0014).
 * A submission draws one value per 1,024 nodes and owns v .. v + 1023 of each, so it knows every id
 * before it writes and can send children arrays and roots as plain values.
 */
const NODE_ID_BLOCK = 1024;
/** The COPY text rows of a workflow's nodes, a chunk of rows at a time. */
function* copyRows(
  workflowId: string,
  nodes: WorkflowNodeInsert[],
  children: NodeChildren,
  id: (i: number) => number,
  jobIds: (number | null)[],
): Generator<string> {
  const workflow = copyText(workflowId);
  let chunk = '';
  for (let i = 0; i < nodes.length; i++) {
    const n = nodes[i] as WorkflowNodeInsert;
    const from = children.start[i] as number;
    const to = children.start[i + 1] as number;
    let ids = COPY_NULL;
    if (to > from) {
      ids = `{${id(children.index[from] as number)}`;
      for (let c = from + 1; c < to; c++) ids += `,${id(children.index[c] as number)}`;
      ids += '}';
    }
    chunk +=
      `${id(i)}\t${workflow}\t${copyText(n.key)}\t${n.type}\t${n.parents.length}\t${copyText(n.queue)}\t` +
      `${copyText(n.kind)}\t${copyJson(n.payload)}\t${n.priority}\t${n.maxAttempts}\t${copyInt(n.timeoutMs)}\t` +
      `${copyText(n.signalName)}\t${copyInt(n.signalTimeoutMs)}\t${copyText(n.onTimeout)}\t` +
      `${copyJson(n.defaultOutput)}\t${ids}\t${copyInt(jobIds[i] ?? null)}\n`;
    if ((i + 1) % COPY_CHUNK_ROWS === 0) {
      yield chunk;
      chunk = '';
    }
  }
  if (chunk !== '') yield chunk;
}

/**
 * Writes every node of a workflow, each with the ids of its children, with one COPY (on the caller's
 * connection, inside its transaction). Returns the nodes with no dependencies, which the caller
 * releases in the same transaction.
 *
 * Each job node gets the id its first job will have now, so the release that creates the job leaves
 * every indexed column as it was and its update is HOT (migration 0025). The ids go out highest node
 * first (`heights`): jobs released together are claimed and taken in id order, so a node with a long
 * chain below it starts before the leaves released with it.
 *
 * Measured at 100,000 nodes and 175,000 edges (loaded machine, back to back): one INSERT of `unnest`
 * arrays into nodes plus an edge table took 5.9-7.2 s, of which 1.3-2 s only to turn 16 arrays into
 * parameter text in the client; COPY of the same nodes with children arrays, 2.5-4.4 s.
 */
export async function workflowNodeInsertMany(
  q: Pick<PoolClient, 'query'>,
  workflowId: string,
  nodes: WorkflowNodeInsert[],
  children: NodeChildren,
  heights: Int32Array,
): Promise<NodeRef[]> {
  const { rows } = await q.query<{ start: number }>(
    `SELECT nextval('workflow_nodes_id_seq') AS start FROM generate_series(1, $1::int)`,
    [Math.ceil(nodes.length / NODE_ID_BLOCK)],
  );
  const starts = rows.map((r) => r.start).sort((a, b) => a - b);
  const id = (i: number): number => (starts[Math.floor(i / NODE_ID_BLOCK)] as number) + (i % NODE_ID_BLOCK);
  const jobNodes = nodes.flatMap((n, i) => (n.type === 'job' ? [i] : []));
  jobNodes.sort((a, b) => (heights[b] as number) - (heights[a] as number) || a - b);
  const drawn = await jobIdDraw(q, jobNodes.length);
  const jobIds = new Array<number | null>(nodes.length).fill(null);
  jobNodes.forEach((node, k) => (jobIds[node] = drawn[k] as number));
  await copyIn(
    q,
    `workflow_nodes (id, workflow_id, key, type, pending_deps, queue, kind, payload, priority, max_attempts,
                     timeout_ms, signal_name, signal_timeout_ms, on_timeout, default_output, children, job_id)`,
    copyRows(workflowId, nodes, children, id, jobIds),
  );
  const roots: NodeRef[] = [];
  nodes.forEach((n, i) => {
    if (n.parents.length === 0) roots.push({ id: id(i), workflow_id: workflowId, type: n.type });
  });
  return roots;
}

/** `n` ids from the jobs' sequence, ascending; one text value, not `n` rows (~0.1 s at 100,000). */
async function jobIdDraw(q: Pick<PoolClient, 'query'>, n: number): Promise<number[]> {
  if (n === 0) return [];
  const { rows } = await q.query<{ ids: string }>(
    `SELECT string_agg(id::text, ',' ORDER BY id) AS ids
     FROM (SELECT nextval('jobs_id_seq') AS id FROM generate_series(1, $1::int)) s`,
    [n],
  );
  return (rows[0]?.ids ?? '').split(',').map(Number);
}

/** Marks the nodes of these jobs failed, with the job's last error. */
export async function workflowNodeFailByJobs(q: Queryable, jobIds: number[]): Promise<FailedNode[]> {
  const { rows } = await q.query<FailedNode>(
    // A job cancelled while it waited has no error of its own: the node says what happened.
    `UPDATE workflow_nodes n SET state = 'failed', finished_at = now(),
       error = coalesce(j.last_error, 'job ' || j.id || ' ' || j.state)
     FROM jobs j
     WHERE n.job_id = ANY($1::bigint[]) AND n.state = 'queued' AND j.id = n.job_id
     RETURNING n.id, n.workflow_id, n.type, n.key, n.error`,
    [arrayLiteral(jobIds)],
  );
  return rows;
}

/**
 * The nodes of these re-run jobs (dead letter retry) follow their job again: failed or cancelled
 * nodes whose current job it is go back to 'queued'. Returns them, with whether each had failed.
 */
export async function workflowNodeRequeueByJobs(
  q: Queryable,
  jobIds: number[],
): Promise<(NodeRef & { was_failed: boolean })[]> {
  const { rows } = await q.query<NodeRef & { was_failed: boolean }>(
    `UPDATE workflow_nodes n SET state = 'queued', finished_at = NULL, error = NULL
     FROM workflow_nodes o
     WHERE n.job_id = ANY($1::bigint[]) AND n.state IN ('failed', 'cancelled') AND o.id = n.id
     RETURNING n.id, n.workflow_id, n.type, o.state = 'failed' AS was_failed`,
    [arrayLiteral(jobIds)],
  );
  return rows;
}

/** Skipped descendants of these nodes become pending again (their skipping ancestor re-runs). */
export async function workflowNodeUnskipDescendants(q: Queryable, nodeIds: number[]): Promise<number> {
  const { rowCount } = await q.query(
    `WITH RECURSIVE down(id) AS (
       SELECT c.id FROM workflow_nodes p, unnest(p.children) AS c(id) WHERE p.id = ANY($1::bigint[])
       UNION
       SELECT c.id FROM down JOIN workflow_nodes p ON p.id = down.id, unnest(p.children) AS c(id)
     )
     UPDATE workflow_nodes n SET state = 'pending', finished_at = NULL
     FROM down WHERE n.id = down.id AND n.state = 'skipped'`,
    [nodeIds],
  );
  return rowCount ?? 0;
}

/** The failed nodes of a workflow. */
export async function workflowNodeFailedIds(q: Queryable, workflowId: string): Promise<number[]> {
  const { rows } = await q.query<{ id: number }>(
    `SELECT id FROM workflow_nodes WHERE workflow_id = $1 AND state = 'failed'`,
    [workflowId],
  );
  return rows.map((r) => r.id);
}

/** A release statement's rows: one per ready child, taken job, locked workflow or job written. */
interface ReleaseRow {
  kind: 'ready' | 'taken' | 'locked' | 'done';
  id: number | null;
  workflow_id: string;
  type: NodeRef['type'];
  job: JobClaimed | null;
  state: WorkflowState | null;
  failure_policy: WorkflowLockRow['failure_policy'] | null;
}

/**
 * What every release does after its parents `p` (id, workflow_id, type, children) are known: each
 * child is decremented once per finished parent, and a job child that reaches zero in one of the
 * `running` workflows (SQL for an array of their ids) is released by the same update: its job is
 * created (with the id drawn at submit on its first run) and the node queued; the parent that brings
 * a child to zero is recorded as its critical-path link. $2-$4 are the take's owner, lease and room.
 *
 * The caller holds the children's workflows locked against every writer of their nodes but node
 * successes written alone (workflowNodeJobsSucceed), which meet here on a shared child: the later
 * update waits for the earlier to commit and then reads the child's new counter (READ COMMITTED's
 * recheck), so exactly one sees it reach zero. No child is locked ahead of its update: locking them
 * first took a sixth of a node-success statement (1.9 of 11.5 ms for 313 nodes). Children are
 * joined by id alone: also matching them by ANY(ARRAY(children)) let the planner loop that array once
 * per child (102 s for the 30,300 children of one node). One update per child instead of two (a
 * decrement, then the release): the mixture's root updated each of its 30,300 children twice.
 */
function releaseCtes(running: string): string {
  // A child is released when this decrement is its last and it is a job node of a running workflow.
  const go = `(c.pending_deps = d.n AND c.state = 'pending' AND c.type = 'job' AND c.workflow_id = ANY(${running}))`;
  return `d AS MATERIALIZED (
       SELECT c.id AS child_id, count(*)::int AS n, max(p.id) AS parent
       FROM p, unnest(p.children) AS c(id)
       GROUP BY c.id
       -- In id order, which the update keeps (a loop over d): two releases that share children
       -- wait for each other in one order and never deadlock.
       ORDER BY c.id
     ), u AS (
       UPDATE workflow_nodes c SET
         pending_deps = c.pending_deps - d.n,
         released_by = CASE WHEN c.pending_deps = d.n THEN d.parent ELSE c.released_by END,
         state = CASE WHEN ${go} THEN 'queued' ELSE c.state END,
         job_id = CASE WHEN NOT ${go} THEN c.job_id WHEN c.runs = 0 AND c.job_id IS NOT NULL THEN c.job_id
                       ELSE nextval('jobs_id_seq') END,
         runs = CASE WHEN ${go} THEN c.runs + 1 ELSE c.runs END,
         released_at = CASE WHEN ${go} THEN now() ELSE c.released_at END,
         finished_at = CASE WHEN ${go} THEN NULL ELSE c.finished_at END,
         error = CASE WHEN ${go} THEN NULL ELSE c.error END
       FROM d
       WHERE c.id = d.child_id
       -- Released now: a child still counting down is pending, never queued, so queued at zero is
       -- this update's release.
       RETURNING c.id, c.workflow_id, c.type, c.state, c.pending_deps,
                 c.state = 'queued' AND c.pending_deps = 0 AS go, c.job_id, c.runs, c.queue, c.kind,
                 c.payload, c.priority, c.max_attempts, c.timeout_ms
     ), j AS (
       -- A released job the completing worker has room for starts as its claim would make it
       -- (CLAIM_UPDATE): one fewer claim round trip per step of a chain. Never under a cluster-wide
       -- or tenant limit nor in a paused queue, as the lock-free claim (jobClaimById).
       INSERT INTO jobs (id, queue, kind, tenant_id, payload, priority, max_attempts, timeout_ms, idempotency_key,
                         key_generated, state, attempt, lease_owner, lease_expires_at, started_at, heartbeat_at)
       SELECT t.job_id, t.queue, t.kind, t.tenant_id, t.payload, t.priority, t.max_attempts, t.timeout_ms,
              ${workflowJobKeySql('t.workflow_id', 't.id', 't.runs')}, true,
              CASE WHEN t.take THEN 'running' ELSE 'available' END, CASE WHEN t.take THEN 1 ELSE 0 END,
              CASE WHEN t.take THEN $2 END, CASE WHEN t.take THEN now() + make_interval(secs => $3 / 1000.0) END,
              CASE WHEN t.take THEN now() END, CASE WHEN t.take THEN now() END
       -- The workflows joined below the window: joined above it, the window over every released
       -- child ran again for each workflow row the plan read (6,300 children: 7.8 ms a time).
       FROM (SELECT u.*, w.tenant_id,
                    row_number() OVER (PARTITION BY u.queue ORDER BY u.priority DESC, u.job_id)
                      <= coalesce(($4::jsonb ->> u.queue)::int, 0)
                    AND NOT EXISTS (SELECT 1 FROM queues q WHERE q.name = u.queue
                                      AND (q.max_running IS NOT NULL OR q.paused_at IS NOT NULL))
                    AND NOT EXISTS (SELECT 1 FROM tenants tn WHERE tn.max_running IS NOT NULL) AS take
               FROM u JOIN workflows w ON w.id = u.workflow_id WHERE u.go) t
       RETURNING id, queue, kind, tenant_id, payload, attempt, max_attempts, timeout_ms, heartbeat_ms,
                 idempotency_key, state
     )`;
}

/** The rows every release returns: children that reached zero but were not released, and taken jobs. */
const RELEASE_ROWS = `
     SELECT 'ready' AS kind, id, workflow_id, type, NULL::json AS job, NULL AS state, NULL AS failure_policy
       FROM u WHERE NOT go AND pending_deps = 0 AND state = 'pending'
     UNION ALL
     SELECT 'taken', NULL, NULL, NULL,
            json_build_object('id', j.id, 'queue', j.queue, 'kind', j.kind, 'tenantId', j.tenant_id,
              'payload', j.payload, 'attempt', j.attempt, 'maxAttempts', j.max_attempts,
              'timeoutMs', coalesce(j.timeout_ms, (SELECT q.timeout_ms FROM queues q WHERE q.name = j.queue)),
              'heartbeatMs', j.heartbeat_ms, 'idempotencyKey', j.idempotency_key, 'startLagMs', 0),
            NULL, NULL
       FROM j WHERE j.state = 'running'`;

function releaseParams(ids: number[], take: ReleaseTake | undefined): (string | number | null)[] {
  return [arrayLiteral(ids), take?.owner ?? null, take?.leaseMs ?? 0, JSON.stringify(take?.room ?? {})];
}

/** Sorts a release's rows; the taken jobs go to `take`, counted off its room. */
function releaseRead(
  rows: ReleaseRow[],
  take: ReleaseTake | undefined,
): Record<ReleaseRow['kind'], ReleaseRow[]> {
  const out: Record<ReleaseRow['kind'], ReleaseRow[]> = { ready: [], taken: [], locked: [], done: [] };
  for (const row of rows) {
    out[row.kind].push(row);
    if (row.kind === 'taken' && row.job !== null && take !== undefined) {
      take.taken.push(row.job);
      take.room[row.job.queue] = (take.room[row.job.queue] ?? 0) - 1;
    }
  }
  return out;
}

const nodeRef = (r: ReleaseRow): NodeRef => ({
  id: r.id as number,
  workflow_id: r.workflow_id,
  type: r.type,
});

/**
 * Releases the children of these nodes, which succeeded earlier in the caller's transaction (signal
 * nodes, a resume). Returns the children that reached zero but were not released here (signal nodes,
 * and nodes of workflows that are not running), for the caller to handle.
 */
export async function workflowNodeChildrenRelease(
  q: Queryable,
  parentIds: number[],
  running: string[],
  take?: ReleaseTake,
): Promise<NodeRef[]> {
  const { rows } = await q.query<ReleaseRow>(
    // The ids go through ANY(ARRAY(subquery)), whose size the planner can not see: given the 1,000
    // ids of a completion batch as a literal array, it chose a seq scan and a hash join over every
    // workflow_nodes row (353 ms at 100,000 nodes, EXPLAIN ANALYZE); with it, primary-key scans.
    `WITH p AS MATERIALIZED (
       SELECT id, workflow_id, type, children FROM workflow_nodes
       WHERE id = ANY(ARRAY(SELECT unnest($1::bigint[])))
     ), ${releaseCtes('$5::text[]')}
     ${RELEASE_ROWS}
     ORDER BY id`,
    [...releaseParams(parentIds, take), running],
  );
  return releaseRead(rows, take).ready.map(nodeRef);
}

/** The attempts a completion finishes itself: `owner` still holds them, at these attempts (by id). */
export interface JobsFinish {
  owner: string;
  attempts: number[];
}

/**
 * A completion's whole workflow part in one statement. With `finish`, it first marks the jobs
 * succeeded (the attempts `finish.owner` still holds; ids ascending, `finish.attempts` in the same
 * order); without, the jobs were marked by the caller. Then it locks the workflows owning them (in
 * id order), marks their nodes succeeded (only those still queued: a second report is a no-op),
 * releases the nodes' children as workflowNodeChildrenRelease does, and moves the workflows' counters
 * (WORKFLOW_PROGRESS_SET), which may end them. Returns the jobs written, the locked workflows and the
 * children left for the caller.
 *
 * `alone`: the statement is its own transaction (no BEGIN, no COMMIT), so the workflow rows it
 * updates are free again as it ends instead of a COMMIT round trip later. It locks its workflows FOR
 * KEY SHARE, beside other such successes of the same workflows: they meet only on a shared child,
 * which each updates in id order, the later one after the earlier commits and from its counter
 * (releaseCtes), and on the counters, locked last and in id order. A child it would leave to the
 * caller in a running workflow (a signal node) makes it fail with NEEDS_TRANSACTION and keep nothing.
 * Without `alone` it locks them FOR UPDATE, as every other transition does, so it runs by itself and
 * the caller's further statements (propagate) meet no other writer of the nodes.
 *
 * `workflows` (alone): the workflows that own the jobs, as the jobs' keys name them, locked without
 * looking them up through the nodes (~5 % of the statement). Should a job of the batch not be a
 * queued node of one of them (a key that named another workflow; a node already finished), the
 * statement fails as above and keeps nothing.
 *
 * Four round trips of the completion's transaction fewer than a statement each. $1 the job ids,
 * $2-$4 the take (releaseCtes; $2 is also the owner), then the attempts with `finish`, then `alone`,
 * then `workflows`.
 */
export async function workflowNodeJobsSucceed(
  q: Queryable,
  jobIds: number[],
  take?: ReleaseTake,
  finish?: JobsFinish,
  how: { alone?: boolean; workflows?: string[] } = {},
): Promise<{ written: number[]; locked: WorkflowLockRow[]; ready: NodeRef[] }> {
  const alone = how.alone === true;
  const named = alone && how.workflows !== undefined;
  const done =
    finish === undefined
      ? `SELECT unnest($1::bigint[]) AS id`
      : `UPDATE jobs j SET state = 'succeeded', finished_at = now(), lease_expires_at = NULL
         WHERE ${ownedAttemptSql('$1', '$5', '$2')}
         RETURNING j.id`;
  const params: (string | number | boolean | null)[] = releaseParams(jobIds, take);
  if (finish !== undefined) {
    // The owner checked is the finishing worker, which is also the one that takes released jobs.
    params[1] = finish.owner;
    params.push(arrayLiteral(finish.attempts));
  }
  params.push(alone);
  const aloneParam = `$${params.length}::boolean`;
  if (named) params.push(arrayLiteral((how.workflows ?? []).map(arrayElement)));
  const owning = named
    ? `w.id = ANY ($${params.length}::text[]) AND w.pruned_at IS NULL`
    : OWNING_WORKFLOWS('job_id', 'ARRAY(SELECT id FROM done)');
  const running = `ARRAY(SELECT id FROM lk WHERE state = 'running')`;
  const { rows } = await q.query<ReleaseRow>({
    // Named, so each connection plans it once: planning it on every run cost ~18 % of the
    // database's CPU over a 20,000-node workflow.
    name: `workflowNodeJobsSucceed:${finish === undefined ? 'marked' : 'finish'}:${alone ? 'alone' : 'tx'}${named ? ':named' : ''}`,
    text: `WITH done AS MATERIALIZED (
       ${done}
     ), lk AS MATERIALIZED (
       SELECT w.id, w.state, w.failure_policy FROM workflows w
       WHERE ${owning}
       ORDER BY w.id
       FOR ${alone ? 'KEY SHARE' : 'UPDATE'} OF w
     ), p AS (
       UPDATE workflow_nodes SET state = 'succeeded', finished_at = now()
       WHERE job_id = ANY(ARRAY(SELECT id FROM done)) AND state = 'queued'
         AND workflow_id = ANY(ARRAY(SELECT id FROM lk))
       RETURNING id, workflow_id, type, children
     ), ${releaseCtes(running)}, pr AS (
       -- Last, once every child is written (it reads u), the counters' rows in id order.
       UPDATE workflows w SET ${WORKFLOW_PROGRESS_SET}
       FROM (SELECT workflow_id AS id, count(*)::int AS finished, 0 AS failed, max(id) AS last
             FROM p GROUP BY workflow_id) d
       WHERE w.id = d.id AND w.id = ANY(ARRAY(
         SELECT c.id FROM workflows c
         WHERE c.id = ANY(ARRAY(SELECT id FROM lk)) AND (SELECT count(*) FROM u) >= 0
         ORDER BY c.id FOR NO KEY UPDATE))
       RETURNING w.id
     )
     ${RELEASE_ROWS}
     UNION ALL
     SELECT 'locked', NULL, id, NULL, NULL, state, failure_policy FROM lk
     UNION ALL
     SELECT 'done', id, NULL, NULL, NULL, NULL, NULL FROM done
     UNION ALL
     -- Never a row: alone, a signal node released in a running workflow fails the statement.
     SELECT 'ready', id, workflow_id, type, NULL, NULL, NULL FROM u
      WHERE NOT go AND pending_deps = 0 AND state = 'pending'
        AND CASE WHEN ${aloneParam} AND type = 'signal' AND workflow_id = ANY(${running})
                 THEN tidemark_release_needs_transaction(id) ELSE false END${
                   named
                     ? `
     UNION ALL
     -- Never a row: a job of the batch that is no named workflow's queued node fails it too, to be
     -- written the longer way (a node whose key named another workflow would be left queued).
     SELECT 'ready', NULL, NULL, NULL, NULL, NULL, NULL
      WHERE CASE WHEN (SELECT count(*) FROM p) < (SELECT count(*) FROM done)
                 THEN tidemark_release_needs_transaction(NULL) ELSE false END`
                     : ''
                 }
     ORDER BY id`,
    values: params,
  });
  const out = releaseRead(rows, take);
  return {
    written: out.done.map((r) => r.id as number),
    locked: out.locked.map((r) => ({
      id: r.workflow_id,
      state: r.state as WorkflowState,
      failure_policy: r.failure_policy as WorkflowLockRow['failure_policy'],
    })),
    ready: out.ready.map(nodeRef),
  };
}

/**
 * Creates the jobs of these ready job nodes and marks the nodes queued, in one statement. Job ids
 * are drawn from the jobs sequence first so each node learns its job without a second lookup. The
 * job's idempotency key is `workflow:<workflow id>:<node id>:<run>` (store/job-key.ts).
 */
export async function workflowNodeJobsCreate(q: Queryable, nodeIds: number[]): Promise<number> {
  if (nodeIds.length === 0) return 0;
  const { rowCount } = await q.query(
    `WITH r AS MATERIALIZED (
       SELECT n.id AS node_id,
              CASE WHEN n.runs = 0 AND n.job_id IS NOT NULL THEN n.job_id ELSE nextval('jobs_id_seq') END AS job_id,
              n.runs + 1 AS run,
              n.queue, n.kind, w.tenant_id, n.payload, n.priority, n.max_attempts, n.timeout_ms, n.workflow_id
       FROM workflow_nodes n JOIN workflows w ON w.id = n.workflow_id
       WHERE n.id = ANY($1::bigint[]) AND n.type = 'job' AND n.state = 'pending'
     ), j AS (
       INSERT INTO jobs (id, queue, kind, tenant_id, payload, priority, max_attempts, timeout_ms, idempotency_key,
                         key_generated)
       SELECT job_id, queue, kind, tenant_id, payload, priority, max_attempts, timeout_ms,
              ${workflowJobKeySql('workflow_id', 'node_id', 'run')}, true
       FROM r
     )
     UPDATE workflow_nodes n SET state = 'queued', job_id = r.job_id, runs = r.run, released_at = now(),
       finished_at = NULL, error = NULL
     FROM r
     WHERE n.id = r.node_id AND n.id = ANY($1::bigint[])`,
    [nodeIds],
  );
  return rowCount ?? 0;
}

/** Puts released signal nodes into 'waiting', starting their timeout. */
export async function workflowNodeWaitStart(q: Queryable, nodeIds: number[]): Promise<void> {
  if (nodeIds.length === 0) return;
  await q.query(
    `UPDATE workflow_nodes SET state = 'waiting', released_at = now(), finished_at = NULL, error = NULL,
       waiting_until = now() + signal_timeout_ms * interval '1 millisecond'
     WHERE id = ANY($1::bigint[]) AND type = 'signal' AND state = 'pending'`,
    [nodeIds],
  );
}

/** Succeeds those of these waiting signal nodes whose signal has been received; its payload is the output. */
export async function workflowNodeSucceedSignalled(q: Queryable, nodeIds: number[]): Promise<NodeRef[]> {
  if (nodeIds.length === 0) return [];
  const { rows } = await q.query<NodeRef>(
    `UPDATE workflow_nodes n SET state = 'succeeded', finished_at = now(), output = s.payload,
       waiting_until = NULL
     FROM workflow_signals s
     WHERE n.id = ANY($1::bigint[]) AND n.state = 'waiting'
       AND s.workflow_id = n.workflow_id AND s.name = n.signal_name
     RETURNING n.id, n.workflow_id, n.type`,
    [nodeIds],
  );
  return rows;
}

/** The signal names a workflow's nodes declare, sorted (through workflow_nodes_signal_idx). */
export async function workflowNodeSignalNames(q: Queryable, workflowId: string): Promise<string[]> {
  const { rows } = await q.query<{ name: string }>(
    `SELECT DISTINCT signal_name AS name FROM workflow_nodes
      WHERE workflow_id = $1 AND signal_name IS NOT NULL ORDER BY 1`,
    [workflowId],
  );
  return rows.map((r) => r.name);
}

/** The waiting nodes of a workflow that wait for this signal name. */
export async function workflowNodeWaitingFor(
  q: Queryable,
  workflowId: string,
  name: string,
): Promise<number[]> {
  const { rows } = await q.query<{ id: number }>(
    `SELECT id FROM workflow_nodes WHERE workflow_id = $1 AND state = 'waiting' AND signal_name = $2`,
    [workflowId, name],
  );
  return rows.map((r) => r.id);
}

/** Waiting nodes whose timeout has passed at `asOf` (the database's clock when null), oldest first. */
export async function workflowNodeTimedOut(
  q: Queryable,
  asOf: Date | null,
  limit: number,
): Promise<{ id: number; workflow_id: string }[]> {
  const { rows } = await q.query<{ id: number; workflow_id: string }>(
    `SELECT id, workflow_id FROM workflow_nodes
     WHERE state = 'waiting' AND waiting_until IS NOT NULL AND waiting_until <= coalesce($1::timestamptz, now())
     ORDER BY waiting_until
     LIMIT $2`,
    [asOf, limit],
  );
  return rows;
}

/**
 * Applies the timeout of these waiting nodes, rechecked under the workflow's lock: 'default' nodes
 * succeed with their default output, 'fail' nodes fail. Returns both sets.
 */
export async function workflowNodeTimeoutApply(
  q: Queryable,
  nodeIds: number[],
  asOf: Date | null,
): Promise<{ succeeded: NodeRef[]; failed: FailedNode[] }> {
  const { rows } = await q.query<FailedNode & { outcome: 'succeeded' | 'failed' }>(
    `UPDATE workflow_nodes SET
       state = CASE WHEN on_timeout = 'default' THEN 'succeeded' ELSE 'failed' END,
       output = CASE WHEN on_timeout = 'default' THEN default_output END,
       error = CASE WHEN on_timeout = 'default' THEN NULL
                    ELSE format('signal %s not received within %s ms', signal_name, signal_timeout_ms) END,
       finished_at = now(), waiting_until = NULL
     WHERE id = ANY($1::bigint[]) AND state = 'waiting' AND waiting_until <= coalesce($2::timestamptz, now())
     RETURNING id, workflow_id, type, key, error, state AS outcome`,
    [nodeIds, asOf],
  );
  const strip = ({ outcome: _o, ...rest }: FailedNode & { outcome: string }): FailedNode => rest;
  return {
    succeeded: rows.filter((r) => r.outcome === 'succeeded').map(strip),
    failed: rows.filter((r) => r.outcome === 'failed').map(strip),
  };
}

/**
 * Under 'continue': every pending node downstream of these failed nodes can never run, so it is
 * skipped. Returns the number skipped per workflow.
 */
export async function workflowNodeSkipDescendants(
  q: Queryable,
  failedIds: number[],
): Promise<{ workflow_id: string; n: number }[]> {
  const { rows } = await q.query<{ workflow_id: string; n: number }>(
    `WITH RECURSIVE down(id) AS (
       SELECT c.id FROM workflow_nodes p, unnest(p.children) AS c(id) WHERE p.id = ANY($1::bigint[])
       UNION
       SELECT c.id FROM down JOIN workflow_nodes p ON p.id = down.id, unnest(p.children) AS c(id)
     ), u AS (
       UPDATE workflow_nodes n SET state = 'skipped', finished_at = now()
       FROM down WHERE n.id = down.id AND n.state = 'pending'
       RETURNING n.workflow_id
     )
     SELECT workflow_id, count(*)::int AS n FROM u GROUP BY workflow_id`,
    [failedIds],
  );
  return rows;
}

/**
 * Cancels what has not started: pending and waiting nodes, and queued nodes whose job is not running
 * (its job is cancelled in the same statement; a job a worker claimed meanwhile is running and is left
 * to finish). Returns the number of nodes cancelled.
 */
export async function workflowNodeCancelUnstarted(q: Queryable, workflowId: string): Promise<number> {
  const { rows } = await q.query<{ n: number }>(
    `WITH j AS (
       UPDATE jobs SET state = 'cancelled', finished_at = now()
       WHERE id IN (SELECT job_id FROM workflow_nodes WHERE workflow_id = $1 AND state = 'queued')
         AND state IN ('available', 'scheduled', 'failed')
       RETURNING id, queue, state
     ), ${jobEndedCountsAdd('j', 1)}, u AS (
       UPDATE workflow_nodes SET state = 'cancelled', finished_at = now(), waiting_until = NULL
       WHERE workflow_id = $1
         AND (state IN ('pending', 'waiting') OR (state = 'queued' AND job_id IN (SELECT id FROM j)))
       RETURNING 1
     )
     SELECT count(*)::int AS n FROM u`,
    [workflowId],
  );
  return rows[0]?.n ?? 0;
}

/** For resume: failed, skipped and cancelled nodes become pending again. Returns how many. */
export async function workflowNodeReopen(q: Queryable, workflowId: string): Promise<number> {
  const { rowCount } = await q.query(
    `UPDATE workflow_nodes SET state = 'pending', finished_at = NULL, waiting_until = NULL
     WHERE workflow_id = $1 AND state IN ('failed', 'skipped', 'cancelled')`,
    [workflowId],
  );
  return rowCount ?? 0;
}

/** Pending nodes whose dependencies have all succeeded. */
export async function workflowNodeReady(q: Queryable, workflowId: string): Promise<NodeRef[]> {
  const { rows } = await q.query<NodeRef>(
    `SELECT id, workflow_id, type FROM workflow_nodes
     WHERE workflow_id = $1 AND state = 'pending' AND pending_deps = 0 ORDER BY id`,
    [workflowId],
  );
  return rows;
}

/** Node counts per state; queued nodes are split by their job's state (available, running, …). */
export async function workflowNodeCountByState(
  q: Queryable,
  workflowId: string,
): Promise<{ state: string; job_state: string | null; n: number }[]> {
  const { rows } = await q.query<{ state: string; job_state: string | null; n: number }>(
    // A correlated lookup per queued node, not a join: a join may hash the whole jobs table.
    `SELECT n.state,
            CASE WHEN n.state = 'queued' THEN (SELECT j.state FROM jobs j WHERE j.id = n.job_id) END AS job_state,
            count(*)::int AS n
     FROM workflow_nodes n
     WHERE n.workflow_id = $1
     GROUP BY 1, 2`,
    [workflowId],
  );
  return rows;
}

export interface WorkflowNodeListRow {
  key: string;
  type: 'job' | 'signal';
  state: NodeState;
  pending_deps: number;
  job_id: number | null;
  job_state: string | null;
  attempt: number | null;
  runs: number;
  released_at: Date | null;
  started_at: Date | null;
  finished_at: Date | null;
  error: string | null;
  output: unknown;
}

/** One page of a workflow's nodes in key order, after `after` (exclusive), optionally of one state. */
export async function workflowNodeList(
  q: Queryable,
  workflowId: string,
  page: { after: string | null; state: NodeState | null; limit: number },
): Promise<WorkflowNodeListRow[]> {
  const { rows } = await q.query<WorkflowNodeListRow>(
    // started_at is the first attempt's (the job row holds the latest), as the timeline's. A node
    // never released shows no job: its id is drawn at submit but no job has it yet.
    `SELECT n.key, n.type, n.state, n.pending_deps, CASE WHEN n.runs > 0 THEN n.job_id END AS job_id,
            j.state AS job_state, j.attempt, n.runs,
            n.released_at,
            coalesce((SELECT min(a.started_at) FROM job_attempts a WHERE a.job_id = n.job_id), j.started_at)
              AS started_at,
            n.finished_at, coalesce(n.error, j.last_error) AS error, n.output
     FROM workflow_nodes n LEFT JOIN jobs j ON j.id = n.job_id
     WHERE n.workflow_id = $1
       AND ($2::text IS NULL OR n.key > $2)
       AND ($3::text IS NULL OR n.state = $3)
     ORDER BY n.key
     LIMIT $4`,
    [workflowId, page.after, page.state, page.limit],
  );
  return rows;
}

export interface CriticalPathRow {
  key: string;
  released_at: Date | null;
  started_at: Date | null;
  finished_at: Date | null;
}

/**
 * The chain of nodes that ends at `lastNodeId`, each released by the one before it: the critical path
 * so far. Its length is the graph's depth along that chain, not the workflow's size.
 */
export async function workflowNodeCriticalPath(q: Queryable, lastNodeId: number): Promise<CriticalPathRow[]> {
  const { rows } = await q.query<CriticalPathRow>(
    `WITH RECURSIVE p AS (
       SELECT id, key, released_by, job_id, released_at, finished_at, 0 AS depth
       FROM workflow_nodes WHERE id = $1
       UNION ALL
       SELECT n.id, n.key, n.released_by, n.job_id, n.released_at, n.finished_at, p.depth + 1
       FROM workflow_nodes n JOIN p ON n.id = p.released_by
     )
     SELECT p.key, p.released_at, j.started_at, p.finished_at
     FROM p LEFT JOIN jobs j ON j.id = p.job_id
     ORDER BY p.depth DESC`,
    [lastNodeId],
  );
  return rows;
}
