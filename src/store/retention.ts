/**
 * Retention: the statements that delete history in bounded batches. Every one is fenced by the
 * maintenance lease the way the scheduler's writes are (occurrenceMaterialise): it locks the lease
 * row FOR KEY SHARE with the holder's epoch, so it deletes nothing once another replica holds the
 * lease, and a takeover waits until the batch in flight has committed. Two replicas therefore never
 * prune at once.
 *
 * Which rows go is decided in SQL from a policy (RetentionPolicy, as jsonb): a row's retention is its
 * queue's override, else its tenant's, else the default, in seconds; a negative value keeps forever.
 * "Now" is the caller's clock when given (tests), else the database's clock_timestamp().
 *
 * Each statement reads a bounded page of an index (the primary key for jobs and occurrences,
 * (finished_at, id) for workflows, (workflow_id, key) for nodes) from a cursor the caller carries through a pass, and
 * deletes the eligible rows of that page by primary key (`= ANY (ARRAY(…))`, so the planner never
 * turns it into a join over the table).
 */
import { ID_MAX } from './id-bounds.ts';
import type { Fence } from './occurrences.ts';
import { notSummed, rollupAdd } from './occurrence-rollup.ts';
import type { Queryable } from './pool.ts';

/** Seconds per retention key; negative: kept forever. `d` default, `q` per queue, `t` per tenant. */
export interface RetentionPolicy {
  d: RetentionSeconds;
  q: Record<string, Partial<RetentionSeconds>>;
  t: Record<string, Partial<RetentionSeconds>>;
}

export interface RetentionSeconds {
  succeeded: number;
  cancelled: number;
  dead: number;
  occurrences: number;
}

/** A row's retention in seconds, for a `key` expression and the row's queue and tenant expressions. */
function retentionOf(key: string, queue: string, tenant: string): string {
  return `coalesce((t.p -> 'q' -> ${queue} ->> ${key})::float8, (t.p -> 't' -> ${tenant} ->> ${key})::float8,
                    (t.p -> 'd' ->> ${key})::float8)`;
}

/** The lease term ($1–$3) still held, locked so a takeover waits for the statement to commit. */
export const FENCE = `fence AS (
    SELECT epoch FROM leases
     WHERE name = $1 AND holder = $2 AND epoch = $3 AND expires_at > clock_timestamp()
     FOR KEY SHARE
  )`;

/** The fence and "now" every statement starts with: $4 now (null: the database's clock), $5 the policy. */
const PROLOGUE = `${FENCE}, t AS (
    SELECT coalesce($4::timestamptz, clock_timestamp()) AS now, $5::jsonb AS p
  )`;

function fenceValues(fence: Fence, now: Date | null, policy: RetentionPolicy): unknown[] {
  return [fence.lease, fence.holder, fence.epoch, now, JSON.stringify(policy)];
}

/**
 * Which jobs a pruning walk reads: every job by the primary key (`id`), or only the dead or the
 * cancelled ones, each through its own partial index (0021). Dead and cancelled jobs are kept longer
 * than succeeded ones (30 days against 7 by default), so once a walk by id has passed them they stay
 * behind it as a thin layer, 1 % of a month of jobs; their own walks reach them without reading
 * everything else, and the walk by id can start after them (Maintenance keeps where).
 */
export type JobPruneWalk = 'id' | 'dead' | 'cancelled';

const WALK_WHERE: Record<JobPruneWalk, string> = {
  id: 'true',
  dead: `state = 'dead'`,
  cancelled: `state = 'cancelled'`,
};

export interface JobPruneResult {
  fenced: boolean;
  scanned: number;
  deleted: number;
  /** job_attempts rows that went with the deleted jobs (a success is on the job row itself, 0019). */
  attempts: number;
  /** job_effects rows (ctx.once keys) that went with them (0029). */
  effects: number;
  /** The last id read, or the end of the range read: the next batch starts after it. */
  lastId: number;
  /** Ids past this batch may remain: it read a full batch, or its range ended before the last slice. */
  more: boolean;
  /**
   * The first id read that stays and is neither dead nor cancelled (not yet due, or not finished):
   * null when there was none. A walk by id must come back to it; what comes before it is left to
   * the dead and cancelled walks.
   */
  firstKept: number | null;
  /** Every row read was created after the horizon, so no later row can be due either. */
  young: boolean;
}

/**
 * Reads the next `scan` jobs of a walk (by id after `afterId`) and deletes those finished
 * (succeeded, cancelled, dead) longer ago than their retention; their job_attempts and job_effects
 * rows go with them, deleted and counted here (the jobs_delete trigger leaves them to this
 * statement, 0034; it still deletes the jobs' keys). `horizonS` is the shortest retention that
 * applies to the walk's jobs: a job created less than that long ago cannot be due (it finished after
 * it was created), so a page of only such jobs ends the walk.
 *
 * `below` bounds the batch to ids under it (null: none), for the executor to leave out every slice
 * of succeeded jobs beyond the range at its start: the delete finds its ids by `= ANY` in every
 * slice it keeps, ~2,500 buffers of index read for each slice that holds none of them. Maintenance
 * passes the end of the slice the walk is in.
 */
export async function jobPruneBatch(
  db: Queryable,
  fence: Fence,
  now: Date | null,
  policy: RetentionPolicy,
  walk: JobPruneWalk,
  afterId: number,
  scan: number,
  horizonS: number,
  below: number | null = null,
): Promise<JobPruneResult> {
  const r = retentionOf('j.state', 'j.queue', 'j.tenant_id');
  const due = `${r} >= 0 AND j.finished_at < t.now - make_interval(secs => ${r})`;
  const { rows } = await db.query<{
    fenced: boolean;
    scanned: number;
    deleted: number;
    attempts: number;
    effects: number;
    last_id: number | null;
    first_kept: number | null;
    young: boolean | null;
  }>({
    name: `jobPruneBatch:${walk}`,
    text: `WITH ${PROLOGUE}, scan AS (
             SELECT id, created_at, state FROM jobs
              WHERE ${WALK_WHERE[walk]} AND id > $6 AND id < $9 AND EXISTS (SELECT 1 FROM fence)
              ORDER BY id LIMIT $7
           ),
           -- Succeeded and ended jobs in a delete each, by the state the scan read, so each looks
           -- its ids up only in its own partitions: one delete of every id read probed jobs_ended
           -- for the succeeded ones too, 2,000 of a batch's ~13,000 buffers. The jobs_delete
           -- trigger still fires once, with the rows of both.
           del_succeeded AS (
             DELETE FROM jobs j USING t
              WHERE j.state = 'succeeded' AND j.id = ANY (ARRAY(SELECT id FROM scan WHERE state = 'succeeded'))
                AND j.id > $6 AND j.id < $9 AND ${due}
             RETURNING j.id
           ), del_ended AS (
             DELETE FROM jobs j USING t
              WHERE j.state IN ('cancelled', 'dead')
                AND j.id = ANY (ARRAY(SELECT id FROM scan WHERE state IN ('cancelled', 'dead')))
                AND j.id > $6 AND j.id < $9 AND ${due}
             RETURNING j.id
           ), del AS (
             SELECT id FROM del_succeeded UNION ALL SELECT id FROM del_ended
           ), att AS (
             DELETE FROM job_attempts a WHERE a.job_id = ANY (ARRAY(SELECT id FROM del)) RETURNING 1
           ), eff AS (
             DELETE FROM job_effects e WHERE e.job_id = ANY (ARRAY(SELECT id FROM del)) RETURNING 1
           )
           SELECT EXISTS (SELECT 1 FROM fence) AS fenced,
                  (SELECT count(*) FROM scan)::int AS scanned,
                  (SELECT count(*) FROM del)::int AS deleted,
                  (SELECT count(*) FROM att)::int AS attempts,
                  (SELECT count(*) FROM eff)::int AS effects,
                  (SELECT max(id) FROM scan) AS last_id,
                  (SELECT min(id) FROM scan WHERE state NOT IN ('dead', 'cancelled')
                      AND id <> ALL (ARRAY(SELECT id FROM del))) AS first_kept,
                  (SELECT min(created_at) FROM scan) >= (SELECT now FROM t) - make_interval(secs => $8) AS young
            -- The jobs' attempts and effects are this statement's to delete, not the trigger's (0034).
            WHERE (SELECT set_config('tidemark.pruned_children', statement_timestamp()::text, true)) IS NOT NULL`,
    values: [...fenceValues(fence, now, policy), afterId, scan, horizonS, below ?? ID_MAX],
  });
  const row = rows[0];
  if (row === undefined) throw new Error('jobPruneBatch returned no row');
  const full = row.scanned === scan;
  return {
    fenced: row.fenced,
    scanned: row.scanned,
    deleted: row.deleted,
    attempts: row.attempts,
    effects: row.effects,
    lastId: full || below === null ? (row.last_id ?? afterId) : below - 1,
    more: full || below !== null,
    firstKept: row.first_kept,
    // Nothing read: the end of the jobs, unless the range ended before the last slice.
    young: row.young ?? below === null,
  };
}

export interface OccurrencePruneResult {
  fenced: boolean;
  scanned: number;
  deleted: number;
  lastId: number;
  /** Every row read fired after the horizon: no later row can be due either. */
  young: boolean;
}

/**
 * Reads the next `scan` occurrences by id after `afterId` and deletes those that fired longer ago
 * than their retention (by their schedule's queue and tenant; a deleted schedule's rows take the
 * default). `horizonS` is the shortest occurrence retention: ids follow fire times (rows are written
 * at their fire time), so a page of only younger rows ends the pass. The slices before `from` are
 * left to go whole (store/occurrence-slices.ts): the walk reads the slices' rows from `from` on and
 * the default partition's rows of any fire time, and never a slice's rows already summed (0038). The deleted rows are added to occurrence_minutes
 * and occurrence_days in the same statement, so the aggregate holds each row exactly once whatever
 * happens to the process.
 */
export async function occurrencePruneBatch(
  db: Queryable,
  fence: Fence,
  now: Date | null,
  policy: RetentionPolicy,
  afterId: number,
  scan: number,
  horizonS: number,
  from: Date | null,
): Promise<OccurrencePruneResult> {
  const r = retentionOf(`'occurrences'`, 's.queue', 's.tenant_id');
  const { rows } = await db.query<{
    fenced: boolean;
    scanned: number;
    deleted: number;
    last_id: number | null;
    young: boolean | null;
  }>({
    name: 'occurrencePruneBatch',
    text: `WITH ${PROLOGUE}, scan AS (
             SELECT o.id, o.fire_at, coalesce(s.tenant_id, '') AS tenant_id,
                    ${r} >= 0 AND o.fire_at < t.now - make_interval(secs => ${r}) AS due
               FROM ((SELECT id, fire_at, schedule_id FROM occurrences_default
                       WHERE id > $6 AND fire_at < $9 ORDER BY id LIMIT $7)
                     UNION ALL
                     -- Not read at all when every slice from \`from\` on fired after the horizon.
                     (SELECT id, fire_at, schedule_id FROM occurrences l
                       WHERE id > $6 AND fire_at >= $9 AND ${notSummed('l', 'partials')}
                         AND $9 < (SELECT now FROM t) - make_interval(secs => $8)
                       ORDER BY id LIMIT $7)) o
              CROSS JOIN t
               LEFT JOIN schedules s ON s.id = o.schedule_id
              WHERE EXISTS (SELECT 1 FROM fence)
              ORDER BY o.id LIMIT $7
           ), del AS (
             DELETE FROM occurrences o
              WHERE o.id = ANY (ARRAY(SELECT id FROM scan WHERE due))
                -- The fire times bound the slices the delete visits (pruned as it starts).
                AND o.fire_at >= (SELECT min(fire_at) FROM scan WHERE due)
                AND o.fire_at <= (SELECT max(fire_at) FROM scan WHERE due)
             RETURNING o.id, o.schedule_id, o.fire_at, o.state, o.source, o.backfill,
                       greatest(0, extract(epoch FROM o.materialised_at - o.fire_at))::float8 AS lag
           ), gone AS (
             SELECT d.*, sc.tenant_id,
                    (d.state = 'enqueued' AND d.source = 'schedule' AND NOT d.backfill) AS scheduled
               FROM del d JOIN scan sc ON sc.id = d.id
           ), minutes AS (
             ${rollupAdd('occurrence_minutes', 'minute, tenant_id', "date_trunc('minute', fire_at), tenant_id")}
           ), days AS (
             ${rollupAdd('occurrence_days', 'schedule_id, day', "schedule_id, date_trunc('day', fire_at, 'UTC')", 'min(tenant_id)')}
           )
           SELECT EXISTS (SELECT 1 FROM fence) AS fenced,
                  (SELECT count(*) FROM scan)::int AS scanned,
                  (SELECT count(*) FROM del)::int AS deleted,
                  (SELECT max(id) FROM scan) AS last_id,
                  (SELECT min(fire_at) FROM scan) >= (SELECT now FROM t) - make_interval(secs => $8) AS young`,
    values: [...fenceValues(fence, now, policy), afterId, scan, horizonS, from ?? '-infinity'],
  });
  const row = rows[0];
  if (row === undefined) throw new Error('occurrencePruneBatch returned no row');
  return {
    fenced: row.fenced,
    scanned: row.scanned,
    deleted: row.deleted,
    lastId: row.last_id ?? afterId,
    young: row.young ?? true,
  };
}

/** Where a finished-workflow page ends: (finished_at as text, id). */
export interface WorkflowCursor {
  finishedAt: string;
  id: string;
}

export interface WorkflowMarkResult {
  fenced: boolean;
  scanned: number;
  marked: number;
  last: WorkflowCursor | null;
}

/**
 * Marks for pruning (pruned_at) the finished workflows, among the next `scan` by (finished_at, id)
 * that finished before the horizon, whose retention has passed: succeeded ones by the `succeeded`
 * key, failed by `dead`, cancelled by `cancelled`, per tenant. A running workflow is never marked:
 * the UPDATE re-checks the state under the row's lock, the lock a resume takes first.
 */
export async function workflowPruneMark(
  db: Queryable,
  fence: Fence,
  now: Date | null,
  policy: RetentionPolicy,
  after: WorkflowCursor | null,
  scan: number,
  horizonS: number,
): Promise<WorkflowMarkResult> {
  const key = `CASE w.state WHEN 'failed' THEN 'dead' ELSE w.state END`;
  const r = retentionOf(key, 'NULL::text', 'w.tenant_id');
  const { rows } = await db.query<{
    fenced: boolean;
    scanned: number;
    marked: number;
    last_finished_at: string | null;
    last_id: string | null;
  }>({
    name: 'workflowPruneMark',
    text: `WITH ${PROLOGUE}, scan AS (
             SELECT w.id, w.finished_at FROM workflows w CROSS JOIN t
              WHERE w.state <> 'running' AND w.pruned_at IS NULL
                AND w.finished_at < t.now - make_interval(secs => $9)
                AND (w.finished_at, w.id) > ($6::timestamptz, $7::text)
                AND EXISTS (SELECT 1 FROM fence)
              ORDER BY w.finished_at, w.id LIMIT $8
           ), marked AS (
             UPDATE workflows w SET pruned_at = t.now FROM t
              WHERE w.id = ANY (ARRAY(SELECT id FROM scan))
                AND w.state <> 'running' AND w.pruned_at IS NULL
                AND ${r} >= 0 AND w.finished_at < t.now - make_interval(secs => ${r})
             RETURNING w.id
           ), last AS (
             SELECT finished_at::text AS finished_at, id FROM scan ORDER BY finished_at DESC, id DESC LIMIT 1
           )
           SELECT EXISTS (SELECT 1 FROM fence) AS fenced,
                  (SELECT count(*) FROM scan)::int AS scanned,
                  (SELECT count(*) FROM marked)::int AS marked,
                  (SELECT finished_at FROM last) AS last_finished_at, (SELECT id FROM last) AS last_id`,
    values: [
      ...fenceValues(fence, now, policy),
      after?.finishedAt ?? '-infinity',
      after?.id ?? '',
      scan,
      horizonS,
    ],
  });
  const row = rows[0];
  if (row === undefined) throw new Error('workflowPruneMark returned no row');
  return {
    fenced: row.fenced,
    scanned: row.scanned,
    marked: row.marked,
    last:
      row.last_finished_at === null || row.last_id === null
        ? null
        : { finishedAt: row.last_finished_at, id: row.last_id },
  };
}

/** Workflows marked for pruning and not yet gone (including those a previous holder left half-done). */
export async function workflowPrunedList(db: Queryable, limit: number): Promise<string[]> {
  const { rows } = await db.query<{ id: string }>({
    name: 'workflowPrunedList',
    text: 'SELECT id FROM workflows WHERE pruned_at IS NOT NULL ORDER BY id LIMIT $1',
    values: [limit],
  });
  return rows.map((r) => r.id);
}

export interface NodePruneResult {
  fenced: boolean;
  deleted: number;
  /** The last node key deleted: the next batch starts after it; null when none was left. */
  lastKey: string | null;
}

/** Deletes the next `limit` nodes (by key, after `afterKey`) of a workflow marked for pruning. */
export async function workflowNodePruneBatch(
  db: Queryable,
  fence: Fence,
  workflowId: string,
  afterKey: string | null,
  limit: number,
): Promise<NodePruneResult> {
  const { rows } = await db.query<{ fenced: boolean; deleted: number; last_key: string | null }>({
    name: 'workflowNodePruneBatch',
    text: `WITH ${FENCE}, del AS (
             DELETE FROM workflow_nodes n
              WHERE n.id = ANY (ARRAY(
                      SELECT id FROM workflow_nodes
                       WHERE workflow_id = $4 AND key > $5
                         AND EXISTS (SELECT 1 FROM fence)
                         AND EXISTS (SELECT 1 FROM workflows w WHERE w.id = $4 AND w.pruned_at IS NOT NULL)
                       ORDER BY key LIMIT $6))
             RETURNING n.key
           )
           SELECT EXISTS (SELECT 1 FROM fence) AS fenced, (SELECT count(*) FROM del)::int AS deleted,
                  (SELECT max(key) FROM del) AS last_key`,
    values: [fence.lease, fence.holder, fence.epoch, workflowId, afterKey ?? '', limit],
  });
  const row = rows[0];
  if (row === undefined) throw new Error('workflowNodePruneBatch returned no row');
  return { fenced: row.fenced, deleted: row.deleted, lastKey: row.last_key };
}

/**
 * Deletes a marked workflow's own row once none of its nodes is left (its signals go by their
 * foreign key's cascade). Returns whether the row went.
 */
export async function workflowPrunedDelete(
  db: Queryable,
  fence: Fence,
  workflowId: string,
): Promise<{ fenced: boolean; deleted: boolean }> {
  const { rows } = await db.query<{ fenced: boolean; deleted: boolean }>({
    name: 'workflowPrunedDelete',
    text: `WITH ${FENCE}, del AS (
             DELETE FROM workflows w
              WHERE w.id = $4 AND w.pruned_at IS NOT NULL AND EXISTS (SELECT 1 FROM fence)
                AND NOT EXISTS (SELECT 1 FROM workflow_nodes n WHERE n.workflow_id = $4)
             RETURNING 1
           )
           SELECT EXISTS (SELECT 1 FROM fence) AS fenced, EXISTS (SELECT 1 FROM del) AS deleted`,
    values: [fence.lease, fence.holder, fence.epoch, workflowId],
  });
  const row = rows[0];
  if (row === undefined) throw new Error('workflowPrunedDelete returned no row');
  return row;
}

/** Adds to the running totals /metrics reports (retentionCountList); after the batch, not in it. */
export async function retentionCountAdd(db: Queryable, table: string, rows: number): Promise<void> {
  await db.query({
    name: 'retentionCountAdd',
    text: 'UPDATE retention_counts SET rows = rows + $2 WHERE table_name = $1',
    values: [table, rows],
  });
}

export async function retentionCountList(db: Queryable): Promise<{ table: string; rows: number }[]> {
  const { rows } = await db.query<{ table: string; rows: number }>({
    name: 'retentionCountList',
    text: 'SELECT table_name AS table, rows FROM retention_counts ORDER BY table_name',
  });
  return rows;
}

/**
 * Deletes up to `limit` worker registry rows that stopped, or were lost (no heartbeat for three of
 * their intervals), longer than `retentionS` ago. The registry is about the size of the fleet, so
 * one statement a pass keeps it there.
 */
export async function workerPruneBatch(
  db: Queryable,
  fence: Fence,
  now: Date | null,
  retentionS: number,
  limit: number,
): Promise<{ fenced: boolean; deleted: number }> {
  const { rows } = await db.query<{ fenced: boolean; deleted: number }>({
    name: 'workerPruneBatch',
    text: `WITH ${FENCE}, t AS (
             SELECT coalesce($4::timestamptz, clock_timestamp()) - make_interval(secs => $5) AS cutoff
           ), del AS (
             DELETE FROM workers w
              WHERE w.id = ANY (ARRAY(
                      SELECT id FROM workers, t
                       WHERE EXISTS (SELECT 1 FROM fence)
                         AND coalesce(stopped_at, heartbeat_at + make_interval(secs => heartbeat_ms * 3 / 1000.0)) < t.cutoff
                       LIMIT $6))
             RETURNING 1
           )
           SELECT EXISTS (SELECT 1 FROM fence) AS fenced, (SELECT count(*) FROM del)::int AS deleted`,
    values: [fence.lease, fence.holder, fence.epoch, now, retentionS, limit],
  });
  const row = rows[0];
  if (row === undefined) throw new Error('workerPruneBatch returned no row');
  return row;
}

/** The tables pruned by age alone, each with the column their age is read from. */
const AGED = { occurrence_minutes: 'minute', occurrence_days: 'day', queue_changes: 'at' } as const;
export type AgedTable = keyof typeof AGED;

/**
 * Deletes up to `limit` rows of `table` older than `retentionS` (by `now`, else the database's
 * clock): the lateness rollups, which outlive the occurrences they sum, and the queues' audit trail.
 */
export async function agedPruneBatch(
  db: Queryable,
  fence: Fence,
  now: Date | null,
  table: AgedTable,
  retentionS: number,
  limit: number,
): Promise<{ fenced: boolean; deleted: number }> {
  const { rows } = await db.query<{ fenced: boolean; deleted: number }>({
    name: `agedPruneBatch:${table}`,
    text: `WITH ${FENCE}, t AS (
             SELECT coalesce($4::timestamptz, clock_timestamp()) - make_interval(secs => $5) AS cutoff
           ), del AS (
             DELETE FROM ${table}
              WHERE ctid = ANY (ARRAY(
                      SELECT a.ctid FROM ${table} a, t
                       WHERE EXISTS (SELECT 1 FROM fence) AND a.${AGED[table]} < t.cutoff
                       LIMIT $6))
             RETURNING 1
           )
           SELECT EXISTS (SELECT 1 FROM fence) AS fenced, (SELECT count(*) FROM del)::int AS deleted`,
    values: [fence.lease, fence.holder, fence.epoch, now, retentionS, limit],
  });
  const row = rows[0];
  if (row === undefined) throw new Error(`agedPruneBatch(${table}) returned no row`);
  return row;
}
