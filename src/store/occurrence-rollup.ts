/**
 * Lateness over time, read from what the ledger holds now and from what retention rolled up before
 * deleting (occurrence_minutes, occurrence_days; 0021). Each occurrence is counted in exactly one of
 * the two (the pruning statement moves it; a slice summed in steps is left out of the ledger's side
 * as it goes), so the sums are exact across the retention boundary.
 */
import { liveFrom } from './history-live-from.ts';
import type { Queryable } from './pool.ts';

export interface LatenessBucket {
  /** Start of the minute (per-minute reads) or of the UTC day (per-schedule reads). */
  at: Date;
  /** Enqueued by the schedule: the occurrences that carry a lateness. */
  scheduled: number;
  /** Enqueued on request: trigger-now and backfill (neither carries a scheduler's lateness). */
  triggered: number;
  skipped: number;
  missed: number;
  /** Scheduled ones decided more than 2 s after their fire time. */
  late: number;
  /** Mean and worst lateness of the scheduled ones (0 when there were none). */
  lagMeanS: number;
  lagMaxS: number;
}

interface BucketRow {
  at: Date;
  scheduled: number;
  triggered: number;
  skipped: number;
  missed: number;
  late: number;
  lag_sum_s: number;
  lag_max_s: number;
}

function bucket(r: BucketRow): LatenessBucket {
  return {
    at: r.at,
    scheduled: r.scheduled,
    triggered: r.triggered,
    skipped: r.skipped,
    missed: r.missed,
    late: r.late,
    lagMeanS: r.scheduled > 0 ? r.lag_sum_s / r.scheduled : 0,
    lagMaxS: r.lag_max_s,
  };
}

/**
 * The ledger rows `alias` that are not in a rollup yet: a slice summed in steps keeps its rows until
 * it is dropped, those that fired before occurrence_summed.before already counted in
 * occurrence_minutes (0038), before days_before in occurrence_days (0039: the steps' day sums wait
 * for the drop). `partials`: nor in the unlogged partials of a step that ended inside a minute (what
 * the row walk may take). The default partition is never summed in steps.
 */
export function notSummed(alias: string, rollup: 'minutes' | 'days' | 'partials'): string {
  const from = {
    minutes: 'SELECT before FROM occurrence_summed',
    days: 'SELECT days_before FROM occurrence_summed',
    partials: `SELECT greatest(m.before, p.upto) FROM occurrence_summed m
                 LEFT JOIN occurrence_partials_span p ON true`,
  }[rollup];
  return `(${alias}.fire_at >= (${from}) OR ${alias}.tableoid = 'occurrences_default'::regclass)`;
}

/** The live rows' aggregate columns, in the rollup tables' order. */
const LIVE_COLUMNS = `count(*) FILTER (WHERE o.state = 'enqueued' AND o.source = 'schedule' AND NOT o.backfill) AS scheduled,
  count(*) FILTER (WHERE o.state = 'enqueued' AND (o.source = 'trigger' OR o.backfill)) AS triggered,
  count(*) FILTER (WHERE o.state = 'skipped') AS skipped,
  count(*) FILTER (WHERE o.state = 'missed') AS missed,
  count(*) FILTER (WHERE o.state = 'enqueued' AND o.source = 'schedule' AND NOT o.backfill
                   AND o.materialised_at - o.fire_at > interval '2 seconds') AS late,
  coalesce(sum(greatest(0, extract(epoch FROM o.materialised_at - o.fire_at)))
           FILTER (WHERE o.state = 'enqueued' AND o.source = 'schedule' AND NOT o.backfill), 0)::float8 AS lag_sum_s,
  coalesce(max(greatest(0, extract(epoch FROM o.materialised_at - o.fire_at)))
           FILTER (WHERE o.state = 'enqueued' AND o.source = 'schedule' AND NOT o.backfill), 0)::float8 AS lag_max_s`;

const SUMS = `sum(scheduled)::float8 AS scheduled, sum(triggered)::float8 AS triggered,
  sum(skipped)::float8 AS skipped, sum(missed)::float8 AS missed, sum(late)::float8 AS late,
  sum(lag_sum_s)::float8 AS lag_sum_s, max(lag_max_s)::float8 AS lag_max_s`;

export const ROLLUP_COLUMNS = ['scheduled', 'triggered', 'skipped', 'missed', 'late', 'lag_sum_s'];

/**
 * The rollup columns of the occurrences in `from` (with the columns of `gone`: state, scheduled,
 * lag) grouped by the two `keyExpressions`; `extra` (the day table's tenant) follows the key.
 */
export function rollupSums(from: string, keyExpressions: string, extra?: string): string {
  return `SELECT ${keyExpressions}${extra === undefined ? '' : `, ${extra} AS tenant_id`},
                 count(*) FILTER (WHERE scheduled) AS scheduled,
                 count(*) FILTER (WHERE state = 'enqueued' AND NOT scheduled) AS triggered,
                 count(*) FILTER (WHERE state = 'skipped') AS skipped,
                 count(*) FILTER (WHERE state = 'missed') AS missed,
                 count(*) FILTER (WHERE scheduled AND lag > 2) AS late,
                 coalesce(sum(lag) FILTER (WHERE scheduled), 0) AS lag_sum_s,
                 coalesce(max(lag) FILTER (WHERE scheduled), 0) AS lag_max_s
            FROM ${from} GROUP BY 1, 2`;
}

/** Adds the rows of `sums` (rollupSums' columns; `tenant` when it has the tenant) to a rollup table. */
export function rollupUpsert(table: string, keyColumns: string, tenant: boolean, sums: string): string {
  const add = ROLLUP_COLUMNS.map((c) => `${c} = r.${c} + EXCLUDED.${c}`).join(', ');
  return `INSERT INTO ${table} AS r (${keyColumns}${tenant ? ', tenant_id' : ''}, ${ROLLUP_COLUMNS.join(', ')}, lag_max_s)
          ${sums}
          ON CONFLICT (${keyColumns}) DO UPDATE SET ${add}, lag_max_s = greatest(r.lag_max_s, EXCLUDED.lag_max_s)
          RETURNING 1`;
}

/**
 * Adds the occurrences a statement takes out of the ledger (`gone`) to a rollup table grouped by
 * `key`: the counts and lateness sums read back below. `extra` (the day table's tenant) follows
 * the key.
 */
export function rollupAdd(table: string, keyColumns: string, keyExpressions: string, extra?: string): string {
  return rollupUpsert(table, keyColumns, extra !== undefined, rollupSums('gone', keyExpressions, extra));
}

/**
 * Lateness per minute of fire time in [from, to), all tenants (undefined) or one, at most `limit`
 * minutes, oldest first: the minutes the maintenance role has rolled up from lag_minutes
 * (history-rollup.ts), the rest from retention's rollup and the ledger's rows, each by its primary
 * key or (fire_at, id) range. A minute is in one of the three, never two, as in historyLagPerMinute.
 */
export async function occurrenceLatenessPerMinute(
  db: Queryable,
  range: { from: Date; to: Date; tenantId?: string; limit: number },
): Promise<LatenessBucket[]> {
  const tenant = range.tenantId !== undefined;
  const { rows } = await db.query<BucketRow>({
    name: tenant ? 'occurrenceLatenessPerMinuteOf' : 'occurrenceLatenessPerMinute',
    // As in historyLagPerMinute: the times through `w` (InitPlans) keep one generic plan for every
    // call, where a plan for each would be planned over every slice of the ledger; a tenant's read is
    // planned for its tenant and names the times as they are, so its plan holds only their slices.
    text: `WITH r AS (${liveFrom('lag')}),
                w AS (SELECT date_trunc('minute', $1::timestamptz) AS since, $2::timestamptz AS until)
           SELECT at, ${SUMS} FROM (
             SELECT minute AS at, scheduled, triggered, skipped, missed, late, lag_sum_s, lag_max_s
               FROM lag_minutes, r
              WHERE r.rolled AND minute >= (SELECT since FROM w) AND minute < (SELECT least(until, r.upto) FROM w, r)
                AND tenant_id = ${tenant ? '$3' : "''"}
             UNION ALL
             SELECT minute AS at, scheduled, triggered, skipped, missed, late, lag_sum_s, lag_max_s
               FROM occurrence_minutes
              WHERE minute >= date_trunc('minute', (SELECT live_from FROM r)) AND minute < (SELECT until FROM w)
                ${tenant ? 'AND tenant_id = $3' : ''}
             UNION ALL
             SELECT date_trunc('minute', o.fire_at), ${LIVE_COLUMNS}
               FROM occurrences o
              WHERE o.fire_at >= (SELECT live_from FROM r) AND o.fire_at < (SELECT until FROM w)
                AND ${notSummed('o', 'minutes')}
                ${
                  tenant
                    ? // A tenant's read tests each row against its schedules, hashed once: the OR (never true
                      // here) keeps the IN a subplan, where as a join it looked up each row's schedule.
                      `AND o.fire_at >= $1 AND o.fire_at < $2
                       AND ($3::text IS NULL OR o.schedule_id IN (SELECT s.id FROM schedules s WHERE s.tenant_id = $3))`
                    : ''
                }
              GROUP BY 1
           ) b
           GROUP BY at ORDER BY at LIMIT $${tenant ? 4 : 3}`,
    values: tenant
      ? [range.from, range.to, range.tenantId, range.limit]
      : [range.from, range.to, range.limit],
  });
  return rows.map(bucket);
}

/**
 * One schedule's occurrences per UTC day of fire time in [from, to), newest first: what its history
 * says once the rows themselves are gone.
 */
export async function occurrenceLatenessBySchedule(
  db: Queryable,
  scheduleId: string,
  range: { from: Date; to: Date; limit: number },
): Promise<LatenessBucket[]> {
  const { rows } = await db.query<BucketRow>({
    name: 'occurrenceLatenessBySchedule',
    // The times through `w` (InitPlans), as in occurrenceLatenessPerMinute: one generic plan for
    // every call, where planning each call over every slice of the ledger took half its time.
    text: `WITH w AS (SELECT $2::timestamptz AS since, $3::timestamptz AS until)
           SELECT at, ${SUMS} FROM (
             SELECT day AS at, scheduled, triggered, skipped, missed, late, lag_sum_s, lag_max_s
               FROM occurrence_days
              WHERE schedule_id = $1 AND day >= date_trunc('day', $2::timestamptz, 'UTC') AND day < $3
             UNION ALL
             SELECT date_trunc('day', o.fire_at, 'UTC'), ${LIVE_COLUMNS}
               -- One branch per source: each is the predicate of one of the two partial
               -- (schedule_id, fire_at) indexes (0002), which a query naming neither could not use.
               FROM (SELECT * FROM occurrences l
                      WHERE schedule_id = $1 AND source = 'schedule'
                        AND fire_at >= (SELECT since FROM w) AND fire_at < (SELECT until FROM w)
                        AND ${notSummed('l', 'days')}
                     UNION ALL
                     SELECT * FROM occurrences l
                      WHERE schedule_id = $1 AND source = 'trigger'
                        AND fire_at >= (SELECT since FROM w) AND fire_at < (SELECT until FROM w)
                        AND ${notSummed('l', 'days')}) o
              GROUP BY 1
           ) b
           GROUP BY at ORDER BY at DESC LIMIT $4`,
    values: [scheduleId, range.from, range.to, range.limit],
  });
  return rows.map(bucket);
}
