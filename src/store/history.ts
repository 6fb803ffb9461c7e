/**
 * Minute-by-minute history for the dashboard's charts, read from what the database keeps, so a
 * reload or a second operator sees the same hours: schedule lateness from the occurrence ledger and
 * its rollups (0021), jobs finished and attempts failed by finish time, and the backlog (jobs due
 * and not yet started) rebuilt from the jobs' own times. Minutes the maintenance role has rolled up
 * (history-rollup.ts) come from history_minutes and lag_minutes instead, each read as one statement
 * so a roll that commits meanwhile is seen whole or not at all.
 */
import { liveFrom } from './history-live-from.ts';
import { ID_MIN } from './id-bounds.ts';
import { notSummed } from './occurrence-rollup.ts';
import type { Queryable } from './pool.ts';

export interface HistoryRange {
  from: Date;
  to: Date;
  /** One tenant's rows only; undefined for every tenant. */
  tenantId?: string;
}

export interface LagMinute {
  at: Date;
  /** Scheduled occurrences fired in this minute (trigger-now ones carry no lateness). */
  count: number;
  p50S: number;
  p99S: number;
  /**
   * False where retention has already rolled the minute up: the rollup keeps the mean and the
   * worst, which then stand in for p50 and p99.
   */
  exact: boolean;
}

/**
 * Lateness percentiles per minute of fire time: lag_minutes' exact ones for the minutes rolled up,
 * else computed over the ledger's rows where they are still there (a BRIN range read,
 * occurrences_fire_brin), and retention's rollup's mean and max for minutes it has pruned. A minute
 * is in one of the three, never two (a roll covers its minutes whole; the prune moves a minute; a
 * slice summed in steps leaves the ledger's side as it goes).
 */
export async function historyLagPerMinute(db: Queryable, range: HistoryRange): Promise<LagMinute[]> {
  const tenant = range.tenantId !== undefined;
  const ofTenant = tenant
    ? `AND o.fire_at >= $1 AND o.fire_at < $2
       AND o.schedule_id IN (SELECT s.id FROM schedules s WHERE s.tenant_id = $3)`
    : '';
  const { rows } = await db.query<{ at: Date; count: number; p50: number; p99: number; exact: boolean }>({
    name: tenant ? 'historyLagPerMinuteOf' : 'historyLagPerMinute',
    // The times are read through `w` (InitPlans), so no plan depends on them and the statement keeps
    // one generic plan: planned for each call over 8 days of the ledger's slices, it took ~0.5 ms
    // more than beside one day. A tenant's read is planned for its tenant (one holding 1 % of the
    // schedules reads their ids by index, one holding nearly all reads the table: list-plans.test),
    // so it also names the times as they are, and that plan holds only the slices they cover.
    text: `WITH r AS (${liveFrom('lag')}),
                w AS (SELECT date_trunc('minute', $1::timestamptz) AS since, $2::timestamptz AS until)
           SELECT minute AS at, scheduled AS count, p50_s AS p50, p99_s AS p99, true AS exact
             FROM lag_minutes, r
            WHERE r.rolled AND minute >= (SELECT since FROM w) AND minute < (SELECT least(until, r.upto) FROM w, r)
              AND tenant_id = ${tenant ? '$3' : "''"} AND scheduled > 0
           UNION ALL
           SELECT date_trunc('minute', o.fire_at), count(*)::int,
                  percentile_cont(0.5) WITHIN GROUP (ORDER BY l.s)::float8,
                  percentile_cont(0.99) WITHIN GROUP (ORDER BY l.s)::float8, true
             FROM occurrences o
            CROSS JOIN LATERAL (SELECT greatest(0, extract(epoch FROM o.materialised_at - o.fire_at)) AS s) l
            WHERE o.fire_at >= (SELECT live_from FROM r) AND o.fire_at < (SELECT until FROM w)
              AND o.state = 'enqueued' AND o.source = 'schedule' AND NOT o.backfill AND ${notSummed('o', 'minutes')}
              ${ofTenant}
            GROUP BY 1
           UNION ALL
           SELECT minute, sum(scheduled)::int, (sum(lag_sum_s) / sum(scheduled))::float8, max(lag_max_s)::float8, false
             FROM occurrence_minutes
            WHERE minute >= date_trunc('minute', (SELECT live_from FROM r)) AND minute < (SELECT until FROM w)
              AND scheduled > 0 ${tenant ? 'AND tenant_id = $3' : ''}
            GROUP BY minute
            ORDER BY 1`,
    values: tenant ? [range.from, range.to, range.tenantId] : [range.from, range.to],
  });
  return rows.map((r) => ({ at: r.at, count: r.count, p50S: r.p50, p99S: r.p99, exact: r.exact }));
}

export interface ThroughputMinute {
  at: Date;
  /** Jobs that finished successfully in this minute. */
  succeeded: number;
  /** Attempts that ended in failure (an error, a timeout or a lost lease) in this minute. */
  failed: number;
}

/**
 * Jobs succeeded and attempts failed per minute of finish time (jobs_finished_idx,
 * job_attempts_finished_brin). A success lives on the job row (0019); a failure is an attempt row.
 * Jobs and attempts that retention has deleted count only in minutes rolled up before they went.
 */
export async function historyThroughputPerMinute(
  db: Queryable,
  range: HistoryRange & { queue?: string },
): Promise<ThroughputMinute[]> {
  const filtered = range.tenantId !== undefined || range.queue !== undefined;
  const filter = (t = ''): string =>
    `((SELECT tenant FROM w) IS NULL OR ${t}tenant_id = (SELECT tenant FROM w))
     AND ((SELECT queue FROM w) IS NULL OR ${t}queue = (SELECT queue FROM w))`;
  // A failed attempt's tenant and queue are its job's: looked up only when asked for, and one job
  // at a time (a scalar subquery): as a semi-join, the planner's guess of 6,000 failed attempts in
  // the window chose a hash of every job. Planned into every call, the lookup kept the generic plan
  // out.
  const attemptOfJob = filtered ? `AND (SELECT ${filter('j.')} FROM jobs j WHERE j.id = a.job_id)` : '';
  const { rows } = await db.query<{ at: Date; succeeded: number; failed: number }>({
    name: filtered ? 'historyThroughputPerMinuteOf' : 'historyThroughputPerMinute',
    // The parameters are read through `w` (InitPlans), so no plan depends on their values: the
    // statement keeps one generic plan, where planning one for each call over a week of slices of
    // jobs took 2.3-3.2 ms.
    text: `WITH r AS (${liveFrom('jobs')}),
                w AS (SELECT date_trunc('minute', $1::timestamptz) AS since, $2::timestamptz AS until,
                             $3::text AS tenant, $4::text AS queue)
           SELECT at, sum(succeeded)::int AS succeeded, sum(failed)::int AS failed FROM (
             SELECT minute AS at, succeeded, failed
               FROM history_minutes, r
              WHERE r.rolled AND minute >= (SELECT since FROM w) AND minute < (SELECT least(until, r.upto) FROM w, r)
                AND ${filter()}
             UNION ALL
             SELECT date_trunc('minute', finished_at) AS at, count(*) AS succeeded, 0 AS failed FROM (
               ${succeededSince('finished_at', filter(), '(SELECT live_from FROM r)', '(SELECT until FROM w)')}
             ) f
              GROUP BY 1
             UNION ALL
             SELECT date_trunc('minute', a.finished_at), 0, count(*)
               FROM job_attempts a
              WHERE a.finished_at >= (SELECT live_from FROM r) AND a.finished_at < (SELECT until FROM w)
                AND a.outcome IN ('failed', 'timed_out', 'lease_lost') ${attemptOfJob}
              GROUP BY 1
           ) m GROUP BY at HAVING sum(succeeded) > 0 OR sum(failed) > 0 ORDER BY at`,
    values: [range.from, range.to, range.tenantId ?? null, range.queue ?? null],
  });
  return rows;
}

/**
 * The succeeded jobs matching `where` that finished at or after `from` (and before `to`), as rows
 * of `columns`, each slice on its finished_at index. The slices read are those after the past ones
 * (job_slices_past, 0044) and from the oldest past one that a job finished into since a minute
 * before `from` (a past slice notes a finish a minute late at most): one bound on ids, which prunes
 * the slices below it as the statement runs. The default partition's ids below that bound are read
 * apart: ids the slices did not take when they ran out.
 */
export function succeededSince(columns: string, where: string, from: string, to?: string): string {
  // Both ends, so that the planner estimates the range of finished_at at 0.5 % and reads its index:
  // a lone lower bound is a third of the rows, as the bound on ids is, and the backlog's generic
  // plan read the newest slices whole by their primary key instead (11,673 pages a read beside 10
  // million jobs).
  const when = `finished_at >= ${from} AND finished_at < ${to ?? "'infinity'"} AND ${where}`;
  const lowest = `(SELECT least(coalesce(max(to_id), '${ID_MIN}'::bigint),
                               min(from_id) FILTER (WHERE finished_at >= ${from} - interval '1 minute'))
                     FROM job_slices_past)`;
  return `SELECT ${columns} FROM jobs WHERE state = 'succeeded' AND ${when} AND id >= ${lowest}
            UNION ALL
            SELECT ${columns} FROM jobs_done_default WHERE ${when} AND id < ${lowest}`;
}

export interface BacklogMinute {
  /** The end of the minute (the window's end for the last one): the backlog is counted then. */
  at: Date;
  /** Jobs due (run_at passed) and not started at that instant. */
  waiting: number;
}

/**
 * The backlog at the end of each minute, rebuilt from the jobs' times: a job waits from when it is
 * both created and due until it starts (or is cancelled unstarted). The jobs that can have waited
 * inside the window are the open ones and those finished since it began, each read through an index
 * (the open states' partial indexes, jobs_finished_idx); each adds +1 when it starts waiting and -1
 * when it stops, summed minute by minute. A retried job counts from its latest due time only (its
 * row keeps the latest attempt's times). Waiting at instant A is the sum of the steps before A.
 */
export async function historyBacklogPerMinute(
  db: Queryable,
  range: HistoryRange & { queue?: string },
): Promise<BacklogMinute[]> {
  const filter = '($3::text IS NULL OR tenant_id = $3) AND ($4::text IS NULL OR queue = $4)';
  const { rows } = await db.query<{ at: Date; waiting: number }>({
    name: 'historyBacklogPerMinute',
    text: `WITH r AS (${liveFrom('jobs')}), ${backlogEvents('', filter, '(SELECT live_from FROM r)')}, start AS (
             SELECT date_trunc('minute', live_from) AS at FROM r
           ), per_minute AS (
             SELECT date_trunc('minute', t) AS m, sum(d) AS d FROM events, start
              WHERE t >= start.at AND t < $2 GROUP BY 1
           ), rolled_minutes AS (
             -- A range of the rollup's primary key, its ends InitPlans: the generic plan of a join on
             -- each minute hashed the whole rollup, 156 ms at 530,000 rows (two days of 200 queues).
             SELECT minute, sum(waiting) AS waiting FROM history_minutes
              WHERE minute >= (SELECT date_trunc('minute', $1::timestamptz))
                AND minute < (SELECT least(r.upto, $2) FROM r)
                AND ($3::text IS NULL OR tenant_id = $3) AND ($4::text IS NULL OR queue = $4)
              GROUP BY minute
           ), rolled AS (
             SELECT least(g.m + interval '1 minute', $2) AS at, coalesce(h.waiting, 0)::int AS waiting
               FROM r
              CROSS JOIN LATERAL generate_series(date_trunc('minute', $1::timestamptz),
                                                 least(r.upto, $2) - interval '1 microsecond', interval '1 minute') g(m)
               LEFT JOIN rolled_minutes h ON h.minute = g.m
              WHERE r.rolled
           )
           SELECT at, waiting FROM rolled
           UNION ALL
           SELECT least(g.m + interval '1 minute', $2) AS at,
                  ((SELECT coalesce(sum(d), 0) FROM events, start WHERE t < start.at)
                   + sum(coalesce(p.d, 0)) OVER (ORDER BY g.m))::int AS waiting
             FROM start
            CROSS JOIN LATERAL generate_series(start.at, $2::timestamptz - interval '1 microsecond', interval '1 minute') g(m)
             LEFT JOIN per_minute p ON p.m = g.m
            ORDER BY at`,
    values: [range.from, range.to, range.tenantId ?? null, range.queue ?? null],
  });
  return rows;
}

/**
 * The CTEs `candidates, spans, events` of the backlog's steps, as historyBacklogPerMinute describes
 * them, over the jobs matching `where` that can have waited since `finishedSince` (the open ones and
 * those finished since): each job adds +1 at `t` when it starts waiting and -1 when it stops.
 * `keys` are columns carried through (with a trailing comma), for a count per queue and tenant
 * (history-rollup.ts). The branches' states are disjoint, one per open state's partial index
 * (0003, 0016): an IN list of the four matched none of them and read the whole table.
 */
export function backlogEvents(keys: string, where: string, finishedSince: string): string {
  const columns = `${keys} created_at, run_at, started_at, finished_at`;
  return `candidates AS (
             SELECT ${columns} FROM jobs WHERE state = 'available' AND ${where}
             UNION ALL
             SELECT ${columns} FROM jobs WHERE state IN ('scheduled', 'failed') AND ${where}
             UNION ALL
             SELECT ${columns} FROM jobs WHERE state = 'running' AND lease_expires_at IS NOT NULL AND ${where}
             UNION ALL
             SELECT ${columns} FROM jobs
              WHERE state IN ('dead', 'cancelled') AND finished_at >= ${finishedSince} AND ${where}
             UNION ALL
             ${succeededSince(columns, where, finishedSince)}
           ), spans AS (
             SELECT ${keys} greatest(created_at, run_at) AS due,
                    CASE WHEN started_at >= greatest(created_at, run_at) THEN started_at
                         WHEN finished_at >= greatest(created_at, run_at) THEN finished_at END AS gone
               FROM candidates
           ), events AS (
             SELECT ${keys} due AS t, 1 AS d FROM spans WHERE gone IS NULL OR gone > due
             UNION ALL
             SELECT ${keys} gone, -1 FROM spans WHERE gone > due
           )`;
}
