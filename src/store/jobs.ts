/**
 * The statements on `jobs`: claim, finish (only while the caller still owns the attempt), heartbeat,
 * promote, reap, cancel, retry, and the reads behind the job client. Enqueue is in job-insert.ts.
 *
 * Batch statements take arrays and select their rows with `id = ANY($1::bigint[])`: at 1,000 rows a
 * batch that keeps the planner on the primary key (~6 ms per 1,000), where `UPDATE … FROM unnest(…)`
 * alone flips to a hash join over the whole table and falls ~10× (DESIGN.md, "Measured on this
 * machine"). Where a batch must match (id, attempt) pairs, the pairs are not joined in but looked up
 * by binary search (sortedById, below).
 *
 * A batch claim is sent unnamed, so PostgreSQL plans each run against the table as it is then: a
 * generic plan cached while the table was empty keeps seq-scanning it when a burst arrives (claims of
 * 150–400 ms instead of ~15; test: burst-plan). A claim loop's timed poll of an idle queue is the
 * exception (JobClaimParams.poll): it keeps a named statement, since planning costs ~1.3 ms against
 * ~0.4 ms for a cached empty poll, run by each loop every second; the price is that such a poll may
 * scan a table that filled since its plan was made, until the next autovacuum of jobs. The other
 * statements keep their cached plans: planning every run added ~0.3 ms to enqueue-to-start.
 */
import pg from 'pg';
import { arrayLiteral } from './array-literal.ts';
import { ownedAttemptSql } from './attempt-sql.ts';
import { jobEndedCountsAdd, jobEndedCountsAddRows } from './job-ended-counts.ts';
import { withTransaction, type Queryable } from './pool.ts';
import {
  workflowJobsFailed,
  workflowJobsLock,
  workflowJobsRetried,
  workflowJobsSucceeded,
  workflowJobsSucceededAlone,
} from './workflow-release.ts';

export const JobState = {
  scheduled: 'scheduled',
  available: 'available',
  running: 'running',
  succeeded: 'succeeded',
  failed: 'failed',
  dead: 'dead',
  cancelled: 'cancelled',
} as const;
export type JobState = (typeof JobState)[keyof typeof JobState];

export interface JobRow {
  id: number;
  queue: string;
  kind: string;
  tenantId: string;
  payload: unknown;
  priority: number;
  state: JobState;
  runAt: Date;
  attempt: number;
  maxAttempts: number;
  timeoutMs: number | null;
  heartbeatMs: number | null;
  backoffBaseMs: number | null;
  backoffMaxMs: number | null;
  idempotencyKey: string;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  progress: unknown;
  heartbeatAt: Date | null;
  lastError: string | null;
  scheduleId: string | null;
  cancelRequestedAt: Date | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
}

/**
 * A job as its readers see it. lease_owner outlives a success as the record of who ran it (migration
 * 0019); leaseOwner is the holder of a live lease, so only a running job has one.
 */
export const JOB_COLUMNS = `id, queue, kind, tenant_id AS "tenantId", payload, priority, state, run_at AS "runAt",
  attempt, max_attempts AS "maxAttempts", timeout_ms AS "timeoutMs", heartbeat_ms AS "heartbeatMs",
  backoff_base_ms AS "backoffBaseMs", backoff_max_ms AS "backoffMaxMs", idempotency_key AS "idempotencyKey",
  CASE WHEN state = 'running' THEN lease_owner END AS "leaseOwner", lease_expires_at AS "leaseExpiresAt",
  progress, heartbeat_at AS "heartbeatAt",
  last_error AS "lastError", schedule_id AS "scheduleId", cancel_requested_at AS "cancelRequestedAt",
  created_at AS "createdAt", started_at AS "startedAt", finished_at AS "finishedAt"`;

/** Pending states a job can still leave by being claimed (after promotion, for the first two). */
export const PENDING_STATES: readonly JobState[] = ['scheduled', 'available', 'failed'];

// ---------------------------------------------------------------------------------------------
// Claim

export interface JobClaimed {
  id: number;
  queue: string;
  kind: string;
  tenantId: string;
  payload: unknown;
  attempt: number;
  maxAttempts: number;
  /** The job's own timeout, else its queue's; null: none. */
  timeoutMs: number | null;
  heartbeatMs: number | null;
  idempotencyKey: string;
  /**
   * started_at − run_at by the database's clock, in ms. The two times themselves are not returned:
   * parsing them took 116 ms of Node time in a 50,000-job drain (CPU profile), for nothing.
   */
  startLagMs: number;
}

/**
 * What a completing worker may take of the jobs its completion releases (workflowNodeChildrenRelease):
 * up to `room[queue]` per queue, leased to `owner` for `leaseMs`. The taken jobs are appended to
 * `taken` and `room` counts down, across every release of the transaction.
 */
export interface ReleaseTake {
  owner: string;
  leaseMs: number;
  room: Record<string, number>;
  taken: JobClaimed[];
}

export interface JobClaimParams {
  queue: string;
  limit: number;
  owner: string;
  leaseMs: number;
  /** Tenants after this one (in id order) go first, so more tenants than `limit` still rotate. */
  tenantCursor: string;
  /**
   * A claim loop's timed poll of a queue it last found short (not a wake-up, nor the claim after a
   * full batch): sent as a named statement, whose cached plan answers the usual "nothing" cheaply.
   * Every other claim is planned on its run (see the top of this file). Default false.
   */
  poll?: boolean;
  /**
   * true: the caller holds the queue's claim lock (jobClaimLock) in this transaction, and the claim
   * enforces the queue's cluster-wide max_running and tenant quotas. false: the lock-free fast path,
   * which claims nothing while any such limit applies, so it can never exceed one.
   */
  limited: boolean;
}

/** The claim's write, with $1 the queue, $3 the owner and $4 the default lease in ms. */
const CLAIM_UPDATE = `UPDATE jobs j
      SET state = 'running', attempt = j.attempt + 1, lease_owner = $3,
          lease_expires_at = now() + make_interval(secs => coalesce(j.heartbeat_ms * 3, $4) / 1000.0),
          started_at = now(), heartbeat_at = now(), finished_at = NULL`;
/**
 * The claim's transaction commits without waiting for its WAL flush (is_local: the setting ends with
 * it); see jobClaimBatch for why a claim may.
 */
const CLAIM_COMMIT = `AND (SELECT set_config('synchronous_commit', 'off', true)) IS NOT NULL`;
const CLAIM_RETURNING = `RETURNING j.id, j.queue, j.kind, j.tenant_id AS "tenantId", j.payload, j.attempt,
                j.max_attempts AS "maxAttempts",
                -- $1, not j.queue (the same here): one lookup per claim instead of one per row.
                coalesce(j.timeout_ms, (SELECT q.timeout_ms FROM queues q WHERE q.name = $1)) AS "timeoutMs",
                j.heartbeat_ms AS "heartbeatMs", j.idempotency_key AS "idempotencyKey",
                (extract(epoch FROM j.started_at - j.run_at) * 1000)::float8 AS "startLagMs"`;

/**
 * Claims up to `limit` available jobs of one queue in one statement, fairly across tenants: the
 * tenants with work are found with a skip scan of jobs_available_idx (one index descent each), every
 * tenant gets an equal share of the batch (ceil(limit / tenants)) from the head of its own line, and
 * rows are taken round-robin (first of every tenant, then second, …). A backlog of 100,000 from one
 * tenant therefore never delays another tenant's single job by more than one batch.
 *
 * The claim commits asynchronously (synchronous_commit off for its own transaction only): the
 * handler starts without waiting for a WAL flush, which under load is most of the claim's time
 * (enqueue → handler start p50 about halved). What a database crash can cost: a claim made in the
 * last few hundred ms before it is lost, so the job is available again with its earlier attempt
 * number and runs again, which at-least-once already allows. The lost attempt can not write: its
 * finish needs the job still running under this owner and attempt, and a worker that claims the
 * same attempt again drops its older run of it (Worker: a job claimed again). Whatever commits
 * durably after the claim (its completion, a heartbeat) flushes the claim's WAL with its own.
 */
export async function jobClaimBatch(db: Queryable, p: JobClaimParams): Promise<JobClaimed[]> {
  const result = await db.query<JobClaimed>({
    ...(p.poll === true ? { name: 'tidemark_job_claim_poll' } : {}),
    text: `WITH RECURSIVE
      after_cursor AS (
        (SELECT tenant_id FROM jobs WHERE queue = $1 AND state = 'available' AND tenant_id > $5
         ORDER BY tenant_id LIMIT 1)
        UNION ALL
        SELECT (SELECT j.tenant_id FROM jobs j WHERE j.queue = $1 AND j.state = 'available'
                AND j.tenant_id > a.tenant_id ORDER BY j.tenant_id LIMIT 1)
        FROM after_cursor a WHERE a.tenant_id IS NOT NULL
      ),
      from_start AS (
        (SELECT tenant_id FROM jobs WHERE queue = $1 AND state = 'available' ORDER BY tenant_id LIMIT 1)
        UNION ALL
        SELECT (SELECT j.tenant_id FROM jobs j WHERE j.queue = $1 AND j.state = 'available'
                AND j.tenant_id > s.tenant_id ORDER BY j.tenant_id LIMIT 1)
        FROM from_start s WHERE s.tenant_id IS NOT NULL AND s.tenant_id <= $5
      ),
      lines AS MATERIALIZED (
        SELECT tenant_id, pass FROM (
          (SELECT tenant_id, 0 AS pass FROM after_cursor WHERE tenant_id IS NOT NULL LIMIT $2)
          UNION ALL
          (SELECT tenant_id, 1 AS pass FROM from_start WHERE tenant_id IS NOT NULL AND tenant_id <= $5 LIMIT $2)
        ) t
        -- A paused queue (0023): a one-time filter, so nothing below is read or locked.
        WHERE NOT EXISTS (SELECT 1 FROM queues q WHERE q.name = $1 AND q.paused_at IS NOT NULL)
        LIMIT $2
      ),
      share AS (SELECT ceil($2::float8 / greatest(count(*), 1))::int AS k FROM lines),
      room AS (
        SELECT l.tenant_id, l.pass,
               CASE WHEN $6::boolean THEN coalesce(
                 (SELECT t.max_running - (SELECT count(*) FROM jobs r WHERE r.state = 'running' AND r.lease_expires_at IS NOT NULL
                                                        AND r.tenant_id = l.tenant_id)
                  FROM tenants t WHERE t.id = l.tenant_id AND t.max_running IS NOT NULL), $2)
               ELSE $2 END AS room
        FROM lines l
      ),
      candidates AS (
        SELECT c.id, c.ctid AS tid, c.tenant_id, c.priority, c.run_at, r.pass,
               row_number() OVER (PARTITION BY c.tenant_id ORDER BY c.priority DESC, c.run_at, c.id) AS rn
        FROM room r CROSS JOIN LATERAL (
          SELECT j.id, j.ctid, j.tenant_id, j.priority, j.run_at FROM jobs j
          WHERE j.queue = $1 AND j.tenant_id = r.tenant_id AND j.state = 'available' AND j.run_at <= now()
            -- buffer_one (0008): a buffered job waits until its predecessor has finished (or is gone).
            -- Filtered in the scan, so the jobs behind it are still taken.
            AND (j.after_job_id IS NULL OR tidemark_job_finished(j.after_job_id))
          ORDER BY j.priority DESC, j.run_at, j.id
          LIMIT greatest(0, least((SELECT k FROM share), r.room))
          -- Locked while scanning, so rows another worker holds are skipped and the scan goes on
          -- past them: concurrent claimers of one queue each get a full batch, not the same head.
          FOR UPDATE SKIP LOCKED
        ) c
      ),
      queue_room AS (
        SELECT CASE WHEN $6::boolean THEN coalesce(
                 (SELECT q.max_running - (SELECT count(*) FROM jobs r WHERE r.queue = $1 AND r.state = 'running'
                                                        AND r.lease_expires_at IS NOT NULL)
                  FROM queues q WHERE q.name = $1 AND q.max_running IS NOT NULL), $2)
               WHEN EXISTS (SELECT 1 FROM queues q WHERE q.name = $1 AND q.max_running IS NOT NULL)
                 OR EXISTS (SELECT 1 FROM tenants t WHERE t.max_running IS NOT NULL) THEN 0
               ELSE $2 END AS n
      ),
      -- Round-robin over tenants: every tenant's first job, then every tenant's second, and so on.
      -- Rows locked above but not picked are unlocked when the statement's transaction ends.
      picked AS (
        SELECT tid FROM candidates
        ORDER BY rn, pass, tenant_id
        LIMIT greatest(0, least($2, (SELECT n FROM queue_room)))
      )
      ${CLAIM_UPDATE}
      -- By the row versions locked above (a TID scan): a locked row can not move, and the primary
      -- key would be descended again for every row (1.4 against 0.5 ms per 1,000). A row another
      -- transaction changed after this statement's snapshot was locked in its new version, which
      -- the snapshot does not see: it is left for the next claim, never claimed twice.
      -- The state as an InitPlan, and the IN list only to prune to jobs_open: a plain state =
      -- 'available' lets the planner scan jobs_available_idx instead, testing each entry against
      -- every TID, which statistics taken while the queue was idle make look cheaper (1,000 of a
      -- burst of 5,000: 73 ms against 12; test: burst-plan).
      WHERE j.ctid = ANY (ARRAY(SELECT tid FROM picked)) AND j.state IN ('available', 'running')
        AND j.state = (SELECT 'available')
        ${CLAIM_COMMIT}
      ${CLAIM_RETURNING}`,
    values: [p.queue, p.limit, p.owner, p.leaseMs, p.tenantCursor, p.limited],
  });
  return result.rows;
}

export interface JobClaimByIdParams {
  id: number;
  queue: string;
  owner: string;
  leaseMs: number;
}

/**
 * Claims one job named by its wake-up (migration 0017), if it is still available and due: a
 * primary-key lookup instead of the fair-share scan. Only for a queue with no cluster-wide limit
 * while no tenant quota exists (it counts nothing), and only by a worker whose claim loops found
 * the queue empty, so no job that waits longer is passed over. Empty when another worker was first.
 */
export async function jobClaimById(db: Queryable, p: JobClaimByIdParams): Promise<JobClaimed[]> {
  const result = await db.query<JobClaimed>({
    name: 'tidemark_job_claim_by_id',
    // The state on the update too: without it the plan holds every partition of jobs, each slice
    // of finished jobs locked and opened on every claim (p50 enqueue → start 1.18x with 35 slices).
    text: `${CLAIM_UPDATE}
      WHERE j.id = (SELECT id FROM jobs WHERE id = $2 AND queue = $1 AND state = 'available' AND run_at <= now()
                      AND (after_job_id IS NULL OR tidemark_job_finished(after_job_id))
                    FOR UPDATE SKIP LOCKED)
        AND j.state = 'available'
        AND NOT EXISTS (SELECT 1 FROM queues q WHERE q.name = $1 AND (q.max_running IS NOT NULL OR q.paused_at IS NOT NULL))
        AND NOT EXISTS (SELECT 1 FROM tenants t WHERE t.max_running IS NOT NULL)
        ${CLAIM_COMMIT}
      ${CLAIM_RETURNING}`,
    values: [p.queue, p.id, p.owner, p.leaseMs],
  });
  return result.rows;
}

/**
 * Serialises limited claims for one queue (in the caller's transaction, until it ends): counting
 * running jobs and claiming must not interleave between workers, or two could each see one free slot
 * and both take it. Queues without limits never take it. Tenant quotas span queues, so while any
 * exists, every limited claim also takes one cluster-wide tenant lock (after the queue's, always in
 * this order, so two claimers can not deadlock).
 */
export async function jobClaimLock(db: Queryable, queue: string, tenantQuotas: boolean): Promise<void> {
  await db.query(
    `SELECT pg_advisory_xact_lock(hashtext('tidemark.claim:' || $1))${
      tenantQuotas ? `, pg_advisory_xact_lock(hashtext('tidemark.claim.tenants'))` : ''
    }`,
    [queue],
  );
}

export interface ClaimLimits {
  /** Queues (of those asked about) with a cluster-wide max_running. */
  limitedQueues: Set<string>;
  /** Queues (of those asked about) paused cluster-wide: every claim skips them. */
  pausedQueues: Set<string>;
  tenantQuotas: boolean;
}

export async function jobClaimLimitsGet(db: Queryable, queues: readonly string[]): Promise<ClaimLimits> {
  const result = await db.query<{ limited: string[]; paused: string[]; quotas: boolean }>(
    `SELECT coalesce((SELECT array_agg(name) FROM queues WHERE name = ANY ($1::text[]) AND max_running IS NOT NULL), '{}') AS limited,
            coalesce((SELECT array_agg(name) FROM queues WHERE name = ANY ($1::text[]) AND paused_at IS NOT NULL), '{}') AS paused,
            EXISTS (SELECT 1 FROM tenants WHERE max_running IS NOT NULL) AS quotas`,
    [queues],
  );
  const row = result.rows[0];
  return {
    limitedQueues: new Set(row?.limited ?? []),
    pausedQueues: new Set(row?.paused ?? []),
    tenantQuotas: row?.quotas ?? false,
  };
}

// ---------------------------------------------------------------------------------------------
// Finish: success, failure, release. Each writes only rows still running under (owner, attempt).

export interface AttemptRef {
  id: number;
  attempt: number;
}

/**
 * A batch of attempts as the finishing statements take it: sorted by job id, one per job (a job
 * twice in a batch keeps its later attempt). Each statement finds its rows through the primary key
 * (`j.id = ANY ($1)`) and a row's own entries by binary search over the sorted ids:
 * `width_bucket(j.id, $1)` is the position of j.id among them, so `($2::int[])[that]` is its attempt.
 *
 * Not a join with `unnest` of the arrays: the planner estimates that at 10 rows and, with statistics
 * taken while nothing ran, the jobs side at 1, and then picked plans that compared every running job
 * with every entry of the batch (a nested loop over 1,000 × 2,000 pairs took 300 ms per completion of
 * 1,000; the cached generic plan of the join with `= ANY`, 160 ms). This plan has no join to get wrong.
 */
function sortedById<T extends AttemptRef>(refs: readonly T[]): T[] {
  const sorted = [...refs].sort((a, b) => a.id - b.id || a.attempt - b.attempt);
  return sorted.filter((r, i) => sorted[i + 1]?.id !== r.id);
}

/** The condition of the finishing statements: the attempt in the batch (ids $1, attempts $2), still owned. */
const ownedAttempt = (owner: string): string => ownedAttemptSql('$1', '$2', owner);

/**
 * Marks attempts succeeded, in the caller's transaction, with the workflow part of any that are
 * workflow nodes' jobs in the same statement (workflowJobsSucceeded). The row is the record of its
 * successful attempt: lease_owner keeps the worker, started_at and finished_at its span
 * (job_attempt_history, migration 0019). Returns the ids written; an id missing from the result was
 * no longer owned (lease lost, reaped, or already finished).
 *
 * `alone`: as one statement outside a transaction (workflowJobsSucceededAlone), given the pool; a
 * batch whose release takes a transaction then fails with nothing kept (needsTransaction).
 * `workflows`, alone: the workflows the jobs' keys name, locked without looking them up.
 */
export async function jobCompleteMany(
  db: Queryable,
  owner: string,
  refs: readonly AttemptRef[],
  take?: ReleaseTake,
  options: { alone?: boolean; workflows?: string[] } = {},
): Promise<number[]> {
  if (refs.length === 0) return [];
  const batch = sortedById(refs);
  const ids = batch.map((r) => r.id);
  const finish = { owner, attempts: batch.map((r) => r.attempt) };
  return options.alone === true
    ? workflowJobsSucceededAlone(db, ids, take, finish, options.workflows)
    : workflowJobsSucceeded(db, ids, take, finish);
}

/**
 * As jobCompleteMany for jobs that are no workflow's nodes, as a statement of its own (autocommit):
 * one round trip where jobCompleteMany's transaction takes three (BEGIN, the statement, COMMIT), so
 * an idle worker's completion of one job keeps the database and this process busy for a third of
 * the exchanges. The condition on workflow_nodes keeps it exact: a node's job among them is left
 * running and not returned, for jobCompleteMany to finish with its release. Returns the ids written.
 */
export async function jobCompleteOutsideWorkflows(
  db: Queryable,
  owner: string,
  refs: readonly AttemptRef[],
): Promise<number[]> {
  if (refs.length === 0) return [];
  const batch = sortedById(refs);
  const result = await db.query<{ id: number }>({
    name: 'tidemark_job_complete_outside_workflows',
    text: `UPDATE jobs j SET state = 'succeeded', finished_at = now(), lease_expires_at = NULL
      WHERE ${ownedAttempt('$3')}
        AND NOT EXISTS (SELECT 1 FROM workflow_nodes n WHERE n.job_id = j.id)
      RETURNING j.id`,
    values: [arrayLiteral(batch.map((r) => r.id)), arrayLiteral(batch.map((r) => r.attempt)), owner],
  });
  return result.rows.map((r) => r.id);
}

export const AttemptOutcome = {
  succeeded: 'succeeded',
  failed: 'failed',
  timedOut: 'timed_out',
  cancelled: 'cancelled',
  leaseLost: 'lease_lost',
  released: 'released',
} as const;
export type AttemptOutcome = (typeof AttemptOutcome)[keyof typeof AttemptOutcome];

export interface AttemptFailure extends AttemptRef {
  outcome: 'failed' | 'timed_out' | 'cancelled';
  error: string;
  /** false: dead at once (a non-retryable error), whatever attempts remain. */
  retryable: boolean;
  /** The retry waits at least this long, when the backoff chose sooner (RetryAfterError). */
  retryAfterMs?: number;
}

export interface JobFailed {
  id: number;
  state: JobState;
  runAt: Date;
}

/**
 * Records failed attempts. Each job goes to `cancelled` (cancel requested or the attempt was
 * cancelled), `dead` (non-retryable or attempts exhausted) or `failed` with run_at pushed out by the
 * backoff (job override, else queue, else 1 s base and 1 h cap), or by the attempt's retryAfterMs
 * when that is longer.
 */
export async function jobFailMany(
  db: Queryable,
  owner: string,
  failures: readonly AttemptFailure[],
): Promise<JobFailed[]> {
  if (failures.length === 0) return [];
  const batch = sortedById(failures);
  const result = await db.query<JobFailed & { queue: string }>({
    name: 'tidemark_job_fail_many',
    text: `WITH mine AS (
        SELECT j.id, width_bucket(j.id, $1::bigint[]) AS i FROM jobs j
        WHERE ${ownedAttempt('$6')}
        FOR UPDATE OF j
      ),
      next AS (
        SELECT j.id, ($3::text[])[m.i] AS outcome, ($4::text[])[m.i] AS error, j.started_at,
               CASE WHEN ($3::text[])[m.i] = 'cancelled' OR j.cancel_requested_at IS NOT NULL THEN 'cancelled'
                    WHEN NOT ($5::boolean[])[m.i] OR j.attempt >= j.max_attempts THEN 'dead'
                    ELSE 'failed' END AS state,
               now() + make_interval(secs => greatest(tidemark_backoff_ms(j.attempt,
                 coalesce(j.backoff_base_ms, q.backoff_base_ms, 1000),
                 coalesce(j.backoff_max_ms, q.backoff_max_ms, 3600000)), ($7::float8[])[m.i]) / 1000.0)
                 AS retry_at
        -- The state named again below: by id alone the plan would hold every slice of finished jobs.
        FROM mine m JOIN jobs j ON j.id = m.id AND j.state = 'running' LEFT JOIN queues q ON q.name = j.queue
      ),
      done AS (
        UPDATE jobs j SET state = n.state, last_error = n.error, lease_owner = NULL, lease_expires_at = NULL,
               run_at = CASE WHEN n.state = 'failed' THEN n.retry_at ELSE j.run_at END,
               finished_at = CASE WHEN n.state = 'failed' THEN NULL ELSE now() END
        FROM next n WHERE j.id = n.id AND j.state = 'running'
        RETURNING j.id, j.queue, j.attempt, j.state, j.run_at, n.outcome, n.error, n.started_at
      ),
      history AS (
        INSERT INTO job_attempts (job_id, attempt, worker, started_at, finished_at, outcome, error)
        SELECT id, attempt, $6, started_at, now(), outcome, error FROM done
      )
      SELECT id, queue, state, run_at AS "runAt" FROM done`,
    values: [
      arrayLiteral(batch.map((f) => f.id)),
      arrayLiteral(batch.map((f) => f.attempt)),
      batch.map((f) => f.outcome),
      batch.map((f) => f.error),
      batch.map((f) => f.retryable),
      owner,
      arrayLiteral(batch.map((f) => f.retryAfterMs ?? 'NULL')),
    ],
  });
  // Workflow nodes whose job will not run again fail under their workflow's policy, in this same
  // transaction: the caller must pass one (not the pool) for the two to commit together.
  await workflowJobsFailed(db, finalIds(result.rows));
  await jobEndedCountsAddRows(db, result.rows);
  return result.rows.map(({ id, state, runAt }) => ({ id, state, runAt }));
}

/**
 * Hands running jobs back at shutdown: available again at once, the attempt recorded as `released`.
 * A release is not the job's failure, so max_attempts grows by one to keep its retry budget whole.
 */
export async function jobReleaseMany(
  db: Queryable,
  owner: string,
  refs: readonly AttemptRef[],
): Promise<number[]> {
  return jobsHandBack(db, owner, refs, {
    set: 'run_at = now(), max_attempts = j.max_attempts + 1',
    where: '',
    after: `history AS (
        INSERT INTO job_attempts (job_id, attempt, worker, started_at, finished_at, outcome, error)
        SELECT id, attempt, $3, started_at, now(), 'released', 'worker shut down before the handler finished'
        FROM done
      ),`,
  });
}

/**
 * Hands back jobs a worker claimed ahead of its free slots and never started (at stop, or after
 * waiting too long): available again with the attempt number and run_at they had before the claim,
 * so a claim that ran nothing costs no attempt, leaves no history and keeps the job's place in line.
 * Jobs with a cancel pending are left running for the caller to record as cancelled (jobFailMany);
 * returns the ids handed back.
 */
export async function jobUnclaimMany(
  db: Queryable,
  owner: string,
  refs: readonly AttemptRef[],
): Promise<number[]> {
  return jobsHandBack(db, owner, refs, {
    set: 'attempt = j.attempt - 1, started_at = NULL, heartbeat_at = NULL',
    where: 'AND j.cancel_requested_at IS NULL',
    after: '',
  });
}

/**
 * Makes owned attempts available again, with `set` for what else changes and `after` for CTEs that
 * read `done`, and wakes their queues' workers; returns the ids handed back.
 */
async function jobsHandBack(
  db: Queryable,
  owner: string,
  refs: readonly AttemptRef[],
  how: { set: string; where: string; after: string },
): Promise<number[]> {
  if (refs.length === 0) return [];
  const batch = sortedById(refs);
  const result = await db.query<{ id: number }>(
    `WITH done AS (
        UPDATE jobs j SET state = 'available', lease_owner = NULL, lease_expires_at = NULL, ${how.set}
        WHERE ${ownedAttempt('$3')} ${how.where}
        RETURNING j.id, j.attempt, j.started_at, j.queue
      ),
      ${how.after}
      wake AS (SELECT pg_notify('tidemark_jobs', queue) FROM (SELECT DISTINCT queue FROM done) d)
      SELECT id FROM done WHERE (SELECT count(*) FROM wake) >= 0`,
    [arrayLiteral(batch.map((r) => r.id)), arrayLiteral(batch.map((r) => r.attempt)), owner],
  );
  return result.rows.map((r) => r.id);
}

// ---------------------------------------------------------------------------------------------
// Leases: heartbeats and the reaper

export interface LeaseRenewed {
  id: number;
  cancelRequested: boolean;
}

/**
 * Extends the leases of attempts this worker still owns (each by 3× its heartbeat interval, else
 * `leaseMs`). An attempt missing from the result has lost its lease. Also reports pending cancels,
 * the fallback for a cancel NOTIFY missed while the listening connection was down.
 */
export async function leaseRenewMany(
  db: Queryable,
  owner: string,
  refs: readonly AttemptRef[],
  leaseMs: number,
): Promise<LeaseRenewed[]> {
  if (refs.length === 0) return [];
  const batch = sortedById(refs);
  const result = await db.query<LeaseRenewed>({
    name: 'tidemark_lease_renew_many',
    text: `UPDATE jobs j
      SET lease_expires_at = now() + make_interval(secs => coalesce(j.heartbeat_ms * 3, $4) / 1000.0),
          heartbeat_at = now()
      WHERE ${ownedAttempt('$3')}
      RETURNING j.id, j.cancel_requested_at IS NOT NULL AS "cancelRequested"`,
    values: [arrayLiteral(batch.map((r) => r.id)), arrayLiteral(batch.map((r) => r.attempt)), owner, leaseMs],
  });
  return result.rows;
}

/** A handler's own heartbeat: stores progress (when given) and extends the lease. */
export async function jobHeartbeat(
  db: Queryable,
  owner: string,
  ref: AttemptRef,
  leaseMs: number,
  progress: unknown,
): Promise<LeaseRenewed | undefined> {
  const result = await db.query<LeaseRenewed>(
    `UPDATE jobs j
     SET lease_expires_at = now() + make_interval(secs => coalesce(j.heartbeat_ms * 3, $4) / 1000.0),
         heartbeat_at = now(), progress = CASE WHEN $5::boolean THEN $6::jsonb ELSE j.progress END
     WHERE j.id = $1 AND j.attempt = $2 AND j.state = 'running' AND j.lease_owner = $3
     RETURNING j.id, j.cancel_requested_at IS NOT NULL AS "cancelRequested"`,
    [ref.id, ref.attempt, owner, leaseMs, progress !== undefined, JSON.stringify(progress ?? null)],
  );
  return result.rows[0];
}

/** Jobs that reached a state they never leave on their own: their workflow nodes have failed. */
function finalIds(rows: readonly { id: number; state: JobState }[]): number[] {
  return rows.filter((r) => r.state === 'dead' || r.state === 'cancelled').map((r) => r.id);
}

export interface JobReaped {
  id: number;
  queue: string;
  state: JobState;
  owner: string;
}

/**
 * Returns running jobs whose lease expired (by the database's clock) to the queue as a `lease_lost`
 * attempt: `failed` with backoff, `dead` when attempts are exhausted, `cancelled` when a cancel was
 * pending. Safe to run from every worker at once: rows are taken FOR UPDATE SKIP LOCKED and
 * re-checked, and an owner renewing at the same instant either wins the row lock first (then the
 * lease is no longer expired) or finds the job no longer running and aborts its handler.
 */
export async function jobReapExpired(db: Queryable, limit: number): Promise<JobReaped[]> {
  const result = await db.query<JobReaped>(
    `WITH expired AS (
        -- A running row without a start time (written by hand, a restore) still gets its attempt row,
        -- whose start is required: one such row failed the whole statement and stopped every reap.
        SELECT j.id, j.lease_owner, coalesce(j.started_at, j.heartbeat_at, j.run_at) AS started_at,
               CASE WHEN j.cancel_requested_at IS NOT NULL THEN 'cancelled'
                    WHEN j.attempt >= j.max_attempts THEN 'dead' ELSE 'failed' END AS state,
               now() + make_interval(secs => tidemark_backoff_ms(j.attempt,
                 coalesce(j.backoff_base_ms, q.backoff_base_ms, 1000),
                 coalesce(j.backoff_max_ms, q.backoff_max_ms, 3600000)) / 1000.0) AS retry_at
        FROM jobs j LEFT JOIN queues q ON q.name = j.queue
        WHERE j.state = 'running' AND j.lease_expires_at < now()
        ORDER BY j.lease_expires_at LIMIT $1
        FOR UPDATE OF j SKIP LOCKED
      ),
      done AS (
        UPDATE jobs j SET state = e.state,
               last_error = 'lease expired: worker ' || e.lease_owner || ' stopped heartbeating',
               lease_owner = NULL, lease_expires_at = NULL,
               run_at = CASE WHEN e.state = 'failed' THEN e.retry_at ELSE j.run_at END,
               finished_at = CASE WHEN e.state = 'failed' THEN NULL ELSE now() END
        FROM expired e WHERE j.id = e.id AND j.state = 'running'
        RETURNING j.id, j.queue, j.state, j.attempt, e.lease_owner AS owner, e.started_at, j.last_error
      ),
      history AS (
        INSERT INTO job_attempts (job_id, attempt, worker, started_at, finished_at, outcome, error)
        SELECT id, attempt, owner, started_at, now(), 'lease_lost', last_error FROM done
      )
      SELECT id, queue, state, owner FROM done`,
    [limit],
  );
  await workflowJobsFailed(db, finalIds(result.rows));
  await jobEndedCountsAddRows(db, result.rows);
  return result.rows;
}

/**
 * Makes due jobs claimable: `scheduled` ones whose run_at came and `failed` ones whose backoff
 * passed, then wakes the workers of their queues. Returns the number promoted.
 */
export async function jobPromoteDue(db: Queryable, limit: number): Promise<number> {
  const result = await db.query<{ n: number }>(
    `WITH due AS (
        SELECT id FROM jobs WHERE state IN ('scheduled', 'failed') AND run_at <= now()
        ORDER BY run_at LIMIT $1 FOR UPDATE SKIP LOCKED
      ),
      done AS (
        UPDATE jobs j SET state = 'available' FROM due
        WHERE j.id = due.id AND j.state IN ('scheduled', 'failed') RETURNING j.queue
      ),
      wake AS (SELECT pg_notify('tidemark_jobs', queue) FROM (SELECT DISTINCT queue FROM done) d)
      SELECT (SELECT count(*) FROM done)::int AS n, (SELECT count(*) FROM wake) AS w`,
    [limit],
  );
  return result.rows[0]?.n ?? 0;
}

/** When the next waiting job becomes due, so an idle worker can sleep exactly until then. */
export async function jobNextDueAt(db: Queryable): Promise<Date | null> {
  const result = await db.query<{ at: Date | null }>(
    `SELECT min(run_at) AS at FROM jobs WHERE state IN ('scheduled', 'failed')`,
  );
  return result.rows[0]?.at ?? null;
}

// ---------------------------------------------------------------------------------------------
// Reads, cancel, retry

export async function jobGet(db: Queryable, id: number): Promise<JobRow | undefined> {
  const result = await db.query<JobRow>(`SELECT ${JOB_COLUMNS} FROM jobs WHERE id = $1`, [id]);
  return result.rows[0];
}

export interface JobListFilter {
  queue?: string;
  state?: JobState;
  tenantId?: string;
  kind?: string;
  /** Ids below this one (for paging newest first). */
  beforeId?: number;
  limit: number;
}

/** Newest first. Filters are optional; each given one narrows the result. */
export async function jobList(db: Queryable, f: JobListFilter): Promise<JobRow[]> {
  const result = await db.query<JobRow>(
    `SELECT ${JOB_COLUMNS} FROM jobs
     WHERE ($1::text IS NULL OR queue = $1) AND ($2::text IS NULL OR state = $2)
       AND ($3::text IS NULL OR tenant_id = $3) AND ($4::text IS NULL OR kind = $4)
       AND ($5::bigint IS NULL OR id < $5)
     ORDER BY id DESC LIMIT $6`,
    [f.queue ?? null, f.state ?? null, f.tenantId ?? null, f.kind ?? null, f.beforeId ?? null, f.limit],
  );
  return result.rows;
}

/** The dead letter, newest death first (jobs_dead_idx). */
export async function jobListDead(
  db: Queryable,
  queue: string | undefined,
  limit: number,
): Promise<JobRow[]> {
  const result = await db.query<JobRow>(
    `SELECT ${JOB_COLUMNS} FROM jobs WHERE state = 'dead' AND ($1::text IS NULL OR queue = $1)
     ORDER BY finished_at DESC, id DESC LIMIT $2`,
    [queue ?? null, limit],
  );
  return result.rows;
}

export interface JobCancelResult {
  /** The state before the cancel. */
  previous: JobState;
  job: JobRow;
}

/**
 * Cancels a job. A pending one becomes `cancelled` at once. A running one gets cancel_requested_at
 * and a NOTIFY on tidemark_cancel: the worker holding it aborts the handler's signal and finishes the
 * job as cancelled (or the reaper does, if that worker is gone). A finished job is left as it is.
 */
export async function jobCancel(db: Queryable, id: number): Promise<JobCancelResult | undefined> {
  return inTransaction(db, (tx) => jobCancelTx(tx, id));
}

/**
 * Runs `fn` in the caller's transaction, or in a new one when handed the pool: a workflow node's
 * state must commit together with its job's cancel or re-run, or the node is stranded.
 */
function inTransaction<T>(db: Queryable, fn: (tx: Queryable) => Promise<T>): Promise<T> {
  return db instanceof pg.Pool ? withTransaction(db, fn) : fn(db);
}

async function jobCancelTx(db: Queryable, id: number): Promise<JobCancelResult | undefined> {
  // Lock order for a workflow node's job: a pending one is also ended by workflow transitions, which
  // lock the workflow and then its jobs, so its workflow is locked first here too; a running one is
  // finished by its worker, which locks the job and then the workflow, so it is not (its cancel
  // only marks the job and needs no workflow lock).
  const current = await db.query<{ state: JobState }>('SELECT state FROM jobs WHERE id = $1', [id]);
  const state = current.rows[0]?.state;
  if (state !== undefined && PENDING_STATES.includes(state)) await workflowJobsLock(db, [id]);
  const result = await db.query<JobRow & { previous: JobState }>(
    `WITH target AS (SELECT id, state FROM jobs WHERE id = $1 FOR UPDATE),
     done AS (
       UPDATE jobs j SET
         state = CASE WHEN t.state IN ('scheduled', 'available', 'failed') THEN 'cancelled' ELSE j.state END,
         finished_at = CASE WHEN t.state IN ('scheduled', 'available', 'failed') THEN now() ELSE j.finished_at END,
         cancel_requested_at = CASE WHEN t.state = 'running' THEN coalesce(j.cancel_requested_at, now())
                                    ELSE j.cancel_requested_at END
       FROM target t WHERE j.id = t.id
       RETURNING j.*, t.state AS previous
     ),
     -- Only a job this cancel moved: one already cancelled, or dead, was counted before.
     ${jobEndedCountsAdd('done', 1, 'state <> previous')},
     wake AS (SELECT pg_notify('tidemark_cancel', id::text) FROM done WHERE previous = 'running')
     SELECT ${JOB_COLUMNS}, previous FROM done WHERE (SELECT count(*) FROM wake) >= 0`,
    [id],
  );
  const row = result.rows[0];
  if (row === undefined) return undefined;
  const { previous, ...job } = row;
  // A workflow node's job cancelled before it ran: the node fails under its workflow's policy now
  // (a running one is finished as cancelled by its worker, through jobFailMany's hook).
  if (job.state === 'cancelled' && previous !== 'cancelled') await workflowJobsFailed(db, [id]);
  return { previous, job };
}

/**
 * Runs jobs again: `dead`, `cancelled` or `failed` (awaiting retry) ones become available now, with
 * `extraAttempts` more attempts than they have used. Other states are left alone. Returns ids re-run.
 */
export async function jobRetryMany(
  db: Queryable,
  ids: readonly number[],
  extraAttempts: number,
): Promise<number[]> {
  if (ids.length === 0) return [];
  return inTransaction(db, (tx) => jobRetryManyTx(tx, ids, extraAttempts));
}

async function jobRetryManyTx(
  db: Queryable,
  ids: readonly number[],
  extraAttempts: number,
): Promise<number[]> {
  await workflowJobsLock(db, [...ids]);
  const result = await db.query<{ id: number }>(
    `WITH target AS (
        -- Locked first, so the state each had before is known: a dead or cancelled one leaves its count.
        SELECT id, queue, state FROM jobs WHERE id = ANY ($1::bigint[]) AND state IN ('dead', 'cancelled', 'failed')
        FOR UPDATE
      ),
      done AS (
        UPDATE jobs SET state = 'available', run_at = now(), finished_at = NULL, cancel_requested_at = NULL,
               max_attempts = greatest(max_attempts, attempt + $2)
        WHERE id = ANY (ARRAY(SELECT id FROM target)) AND state IN ('dead', 'cancelled', 'failed')
        RETURNING id, queue
      ),
      ${jobEndedCountsAdd('target', -1, 'id IN (SELECT id FROM done)')},
      wake AS (SELECT pg_notify('tidemark_jobs', queue) FROM (SELECT DISTINCT queue FROM done) d)
      SELECT id FROM done WHERE (SELECT count(*) FROM wake) >= 0`,
    [ids, extraAttempts],
  );
  const retried = result.rows.map((r) => r.id);
  // Workflow nodes follow their re-run jobs (docs/workflows.md, "Re-running a node's job").
  await workflowJobsRetried(db, retried);
  return retried;
}

/** Ids in the dead letter matching a filter, oldest death first, for bulk re-runs. */
export async function jobDeadIds(db: Queryable, queue: string | undefined, limit: number): Promise<number[]> {
  const result = await db.query<{ id: number }>(
    `SELECT id FROM jobs WHERE state = 'dead' AND ($1::text IS NULL OR queue = $1)
     ORDER BY finished_at, id LIMIT $2`,
    [queue ?? null, limit],
  );
  return result.rows.map((r) => r.id);
}

export interface QueueCounts {
  queue: string;
  /** available now, plus scheduled/failed whose run_at has passed. */
  backlog: number;
  running: number;
}

/** Backlog depth and running count per queue, for the metrics the API exports. */
export async function jobCountsByQueue(db: Queryable, queues: readonly string[]): Promise<QueueCounts[]> {
  const result = await db.query<QueueCounts>(
    `SELECT q.name AS queue,
            (SELECT count(*) FROM jobs j WHERE j.queue = q.name AND j.state = 'available')::int
              + (SELECT count(*) FROM jobs j WHERE j.queue = q.name AND j.state IN ('scheduled', 'failed')
                 AND j.run_at <= now())::int AS backlog,
            (SELECT count(*) FROM jobs j WHERE j.queue = q.name AND j.state = 'running'
               AND j.lease_expires_at IS NOT NULL)::int AS running
     FROM unnest($1::text[]) AS q(name)`,
    [queues],
  );
  return result.rows;
}
