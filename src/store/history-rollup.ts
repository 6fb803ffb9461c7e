/**
 * The per-minute rollups behind GET /v1/history (migration 0040): history_minutes (jobs succeeded,
 * attempts failed, the backlog at each minute's end, by queue and tenant) and lag_minutes (scheduled
 * occurrences and their exact lateness p50/p99, by tenant and for all tenants). The maintenance role
 * rolls each minute up once, when it is settled; store/history.ts reads the rolled minutes here and
 * the rest from the rows.
 *
 * A roll holds history_rolled's row FOR UPDATE from reading where the last one ended to moving it,
 * so two replicas that both believe they hold the maintenance lease roll each minute once.
 */
import { backlogEvents } from './history.ts';
import { notSummed } from './occurrence-rollup.ts';
import { withTransaction, type Pool, type Queryable } from './pool.ts';

/**
 * A minute's jobs are rolled up this long after it ends. A job's finish time is its completing
 * transaction's start (now()), and those transactions take milliseconds (the longest, a workflow
 * node's release, ~70 ms): one that commits after its minute was rolled would be left out.
 */
const JOBS_SETTLE_S = 60;

/** Minutes one roll statement covers at most: at 500 jobs a second ~0.3 million rows to read. */
const ROLL_MINUTES = 10;

export interface Rolled {
  /** Minutes starting in [from, to) were rolled up; none when from equals to. */
  from: Date;
  to: Date;
}

/**
 * Which minutes a roll takes: `forward`, the next settled ones after the last roll; `back`, the ones
 * before the first, down to history_rolled.back_to, so a database that held history before
 * migration 0040 has its charts rolled up within a pass or two instead of hours later. Neither
 * reaches further back than REACH.
 */
export type RollDirection = 'forward' | 'back';

/**
 * Rolls up the next minutes of jobs `direction` takes, at most ROLL_MINUTES: settled once
 * JOBS_SETTLE_S have passed since they ended, by the database's clock.
 */
export async function historyRollJobs(pool: Pool, direction: RollDirection): Promise<Rolled> {
  return withTransaction(pool, async (tx) => {
    const { from, to } = await next(
      tx,
      'jobs',
      direction,
      `date_trunc('minute', now() - interval '${JOBS_SETTLE_S} seconds')`,
    );
    if (to > from) {
      await tx.query({
        name: 'historyRollJobs',
        text: `INSERT INTO history_minutes (minute, queue, tenant_id, succeeded, failed, waiting)
               SELECT minute, queue, tenant_id, sum(succeeded), sum(failed), sum(waiting) FROM (
                 SELECT date_trunc('minute', finished_at) AS minute, queue, tenant_id,
                        count(*) AS succeeded, 0 AS failed, 0 AS waiting
                   FROM jobs WHERE finished_at >= $1 AND finished_at < $2 AND state = 'succeeded'
                  GROUP BY 1, 2, 3
                 UNION ALL
                 SELECT date_trunc('minute', a.finished_at), j.queue, j.tenant_id, 0, count(*), 0
                   FROM job_attempts a JOIN jobs j ON j.id = a.job_id
                  WHERE a.finished_at >= $1 AND a.finished_at < $2
                    AND a.outcome IN ('failed', 'timed_out', 'lease_lost')
                  GROUP BY 1, 2, 3
                 UNION ALL
                 SELECT minute, queue, tenant_id, 0, 0, waiting FROM (${backlogAtMinuteEnds}) b
               ) m
               GROUP BY 1, 2, 3
               HAVING sum(succeeded) > 0 OR sum(failed) > 0 OR sum(waiting) <> 0`,
        values: [from, to],
      });
    }
    await moved(tx, 'jobs', direction, from, to);
    return { from, to };
  });
}

/** lag_minutes' columns beside the scheduled occurrences' percentiles: GET /v1/lateness's (0041). */
const LATENESS_COLUMNS = 'triggered, skipped, missed, late, lag_sum_s, lag_max_s';

/**
 * Rolls up the next minutes of fire time `direction` takes, at most ROLL_MINUTES: settled once the
 * jobs' are and every schedule not paused has materialised its occurrences past them (its next fire time
 * is later; the scheduler advances it in the statement that writes the occurrence). A scheduler
 * behind holds the lateness rollup back, so its late occurrences are counted where they fired. Only
 * trigger-now and backfill write into a minute rolled up; they add themselves (occurrenceMaterialise).
 */
export async function historyRollLag(pool: Pool, direction: RollDirection): Promise<Rolled> {
  return withTransaction(pool, async (tx) => {
    const { from, to } = await next(
      tx,
      'lag',
      direction,
      `least(date_trunc('minute', now() - interval '${JOBS_SETTLE_S} seconds'),
             date_trunc('minute', (SELECT min(next_fire_at) FROM schedules
                                    WHERE NOT paused AND next_fire_at IS NOT NULL)))`,
    );
    if (to > from) {
      await tx.query({
        name: 'historyRollLag',
        text: `INSERT INTO lag_minutes (minute, tenant_id, scheduled, p50_s, p99_s, ${LATENESS_COLUMNS})
               SELECT date_trunc('minute', o.fire_at),
                      CASE WHEN grouping(s.tenant_id) = 1 THEN '' ELSE s.tenant_id END,
                      count(*) FILTER (WHERE l.scheduled),
                      coalesce(percentile_cont(0.5) WITHIN GROUP (ORDER BY l.s) FILTER (WHERE l.scheduled), 0),
                      coalesce(percentile_cont(0.99) WITHIN GROUP (ORDER BY l.s) FILTER (WHERE l.scheduled), 0),
                      count(*) FILTER (WHERE o.state = 'enqueued' AND NOT l.scheduled),
                      count(*) FILTER (WHERE o.state = 'skipped'),
                      count(*) FILTER (WHERE o.state = 'missed'),
                      count(*) FILTER (WHERE l.scheduled AND o.materialised_at - o.fire_at > interval '2 seconds'),
                      coalesce(sum(l.s) FILTER (WHERE l.scheduled), 0),
                      coalesce(max(l.s) FILTER (WHERE l.scheduled), 0)
                 FROM occurrences o
                 LEFT JOIN schedules s ON s.id = o.schedule_id
                CROSS JOIN LATERAL (
                  SELECT greatest(0, extract(epoch FROM o.materialised_at - o.fire_at))::float8 AS s,
                         o.state = 'enqueued' AND o.source = 'schedule' AND NOT o.backfill AS scheduled) l
                WHERE o.fire_at >= $1 AND o.fire_at < $2 AND ${notSummed('o', 'minutes')}
                GROUP BY GROUPING SETS ((date_trunc('minute', o.fire_at), s.tenant_id), (date_trunc('minute', o.fire_at)))
               -- An occurrence whose schedule is gone counts for all tenants only, as a live read does.
               HAVING grouping(s.tenant_id) = 1 OR s.tenant_id IS NOT NULL`,
        values: [from, to],
      });
    }
    await moved(tx, 'lag', direction, from, to);
    return { from, to };
  });
}

/**
 * Deletes the rolled minutes older than `keepMs` by the database's clock (at most an hour of them
 * per call, each statement kept short), moving both `since`s past them: a window reaching before
 * them is read from the rows again. Returns whether older minutes are left for another call.
 */
export async function historyRollupPrune(pool: Pool, keepMs: number): Promise<boolean> {
  return withTransaction(pool, async (tx) => {
    const { rows } = await tx.query<{ since: Date; before: Date }>(
      `SELECT least(jobs_since, lag_since) AS since, now() - $1 * interval '1 millisecond' AS before
         FROM history_rolled FOR UPDATE`,
      [keepMs],
    );
    const r = rows[0];
    if (r === undefined || r.since >= r.before) return false;
    const cut = new Date(Math.min(r.before.getTime(), r.since.getTime() + 3_600_000));
    await tx.query(`DELETE FROM history_minutes WHERE minute < $1`, [cut]);
    await tx.query(`DELETE FROM lag_minutes WHERE minute < $1`, [cut]);
    await tx.query(
      `UPDATE history_rolled SET jobs_since = greatest(jobs_since, least($1, jobs_upto)),
                                 lag_since = greatest(lag_since, least($1, lag_upto))`,
      [cut],
    );
    return cut < r.before;
  });
}

/**
 * How far back from now a roll of `kind` reaches, either way: minutes older are left to the rows.
 * The backlog at a past minute's end takes every job finished since it (a job waiting then may have
 * finished any time after), so a roll of jobs reads all of them: at 500 jobs a second a statement
 * reading back three hours read 5.4 million (~5 s). Lateness reads only its own minutes.
 */
const REACH = { jobs: '3 hours', lag: '1 day' } as const;

/**
 * The minutes of `kind` a roll in `direction` takes, with history_rolled's row locked: forward from
 * `upto` (or from REACH ago, when the last roll is older) to `settled`, back from `since` to
 * `back_to` or REACH ago; ROLL_MINUTES at most.
 */
async function next(
  tx: Queryable,
  kind: 'jobs' | 'lag',
  direction: RollDirection,
  settled: string,
): Promise<Rolled> {
  const span = `interval '${ROLL_MINUTES} minutes'`;
  const reach = `date_trunc('minute', now() - interval '${REACH[kind]}')`;
  const { rows } = await tx.query<{ from: Date; to: Date }>(
    direction === 'forward'
      ? `SELECT f.from, greatest(f.from, least(f.from + ${span}, ${settled})) AS to
           FROM history_rolled, LATERAL (SELECT greatest(${kind}_upto, ${reach}) AS from) f FOR UPDATE OF history_rolled`
      : `SELECT least(${kind}_since, greatest(${kind}_since - ${span}, back_to, ${reach})) AS from,
                ${kind}_since AS to
           FROM history_rolled FOR UPDATE`,
  );
  const r = rows[0];
  if (r === undefined) throw new Error('history_rolled has no row: the database was not migrated');
  return r;
}

/**
 * Records a roll's minutes as rolled: `upto` moves forward to `to` (and `since` with it when the
 * roll started past `upto`, the minutes between left to the rows), or `since` back to `from`.
 */
async function moved(
  tx: Queryable,
  kind: 'jobs' | 'lag',
  direction: RollDirection,
  from: Date,
  to: Date,
): Promise<void> {
  if (to <= from) return;
  if (direction === 'forward') {
    await tx.query(
      `UPDATE history_rolled SET ${kind}_upto = $2,
              ${kind}_since = CASE WHEN ${kind}_upto < $1 THEN $1 ELSE ${kind}_since END`,
      [from, to],
    );
  } else await tx.query(`UPDATE history_rolled SET ${kind}_since = $1`, [from]);
}

/**
 * The backlog at the end of each minute starting in [$1, $2), by queue and tenant: as
 * historyBacklogPerMinute counts it (a job waits from when it is both created and due until it
 * starts), over the jobs that can have waited then (the open ones, those finished since $1).
 */
const backlogAtMinuteEnds = `
  WITH ${backlogEvents('queue, tenant_id,', 'true', '$1')}, steps AS (
    SELECT queue, tenant_id, greatest(date_trunc('minute', t), $1::timestamptz) AS m, sum(d) AS d
      FROM events WHERE t < $2 GROUP BY 1, 2, 3
  )
  SELECT g.m AS minute, p.queue, p.tenant_id,
         sum(coalesce(s.d, 0)) OVER (PARTITION BY p.queue, p.tenant_id ORDER BY g.m)::int AS waiting
    FROM (SELECT DISTINCT queue, tenant_id FROM steps) p
   CROSS JOIN generate_series($1::timestamptz, $2::timestamptz - interval '1 minute', interval '1 minute') g(m)
    LEFT JOIN steps s ON s.queue = p.queue AND s.tenant_id = p.tenant_id AND s.m = g.m`;
