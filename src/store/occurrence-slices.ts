/**
 * The slices of the occurrence ledger: its partitions by fire time (0037), a UTC day each unless
 * the retention calls for longer (occurrenceSliceSpanS, maintenance/retention-config.ts). The
 * maintenance role attaches each next slice ahead of the clock (occurrenceSliceEnsure) and drops a
 * slice whole once every row in it is past retention (occurrenceSliceDropDue), where deleting its
 * rows one by one wrote WAL and full-page images on the claim path's commits. Fire times no slice
 * covers go to the default partition, which retention prunes row by row.
 */
import type { Fence } from './occurrences.ts';
import {
  partitionChangeFenced,
  partitionDetach,
  partitionsDetachedDrop,
  partitionsLockForDetach,
} from './partition-change.ts';
import type { Pool, PoolClient, Queryable } from './pool.ts';
import { ROLLUP_COLUMNS, rollupSums, rollupUpsert } from './occurrence-rollup.ts';
import { SliceListKept, sliceFirstRow, sliceWindows, type SliceWindow } from './slice-windows.ts';

/**
 * Rows a step of a slice's sum adds to the rollups, ~13 ms beside 10 million jobs of history and ~18
 * ms at 30,000 every-minute schedules; a day at 500 a second is 17,280 steps. Smaller steps cost more
 * a row (~3 ms of each is fixed): 109,000 rows a second of step time at 2,500, 73,000 at 1,000.
 */
export const OCCURRENCE_SUM_STEP_ROWS = 2_500;

/**
 * Rows a step adds while the role has time to spare for the slice (its pace below the cap, as on a
 * day that keeps up): the claim path waits out the steps it meets, and beside a stream of jobs on 2
 * cores a step took ~32 ms at 2,500 rows, ~14 ms at 1,000. A day at 500 a second is then 43,200
 * steps, ~1 % of a connection over three quarters of the day.
 */
export const OCCURRENCE_SUM_STEP_ROWS_SPARED = 1_000;

/** The partition that takes fire times no slice covers. */
export const OCCURRENCE_DEFAULT_SLICE = 'occurrences_default';

export interface OccurrenceSlice {
  name: string;
  /** Its first fire time; null: no lower bound (the first slice). */
  from: Date | null;
  /** The fire time after its last. */
  to: Date;
}

/** The slices, oldest first; the default partition left out. */
export async function occurrenceSliceList(db: Queryable): Promise<OccurrenceSlice[]> {
  // The bounds are cast in the same session that printed them, whatever its DateStyle and TimeZone.
  const { rows } = await db.query<{ name: string; from: Date | null; to: Date }>(
    `SELECT name, (regexp_match(bound, 'FROM \\(''([^'']+)''\\)'))[1]::timestamptz AS from,
            (regexp_match(bound, 'TO \\(''([^'']+)''\\)'))[1]::timestamptz AS to
       FROM (SELECT c.relname AS name, pg_get_expr(c.relpartbound, c.oid) AS bound
               FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid
              WHERE i.inhparent = 'occurrences'::regclass) p
      WHERE bound <> 'DEFAULT'
      ORDER BY 3`,
  );
  return rows;
}

const slicesKept = new SliceListKept(occurrenceSliceList);

/**
 * The fire time of the first row (by id) of the oldest slice that holds one, null when none does:
 * the slices probed oldest first, one statement each on its primary key. One statement over the
 * ledger starts the primary key of every slice (its default partition rules out an ordered Append).
 */
export async function occurrenceSliceOldestFired(db: Queryable): Promise<Date | null> {
  return slicesKept.firstOf(db, (s) => sliceFirstRow(db, s.name, 'fire_at'));
}

/**
 * The fire-time ranges a newest-first read of the ledger takes in turn, below `before` (null: no
 * upper bound): the slice of the newest fire time, then the next 2, the next 4, … (sliceWindows).
 * Read across every slice at once, a page of a schedule's ledger starts each slice's index and
 * merges them (its default partition rules out an ordered Append): a page of 100 touched 168 pages
 * beside 13 slices. The first range also holds the slices ahead of the clock and, without `before`,
 * the default partition; a clock off by a slice only moves a slice to another range.
 */
export async function occurrenceSliceWindows(
  db: Queryable,
  before: Date | null,
): Promise<SliceWindow<Date>[]> {
  const top = before ?? new Date();
  const starts = (await slicesKept.get(db)).map((s) => s.from).filter((from) => from === null || from < top);
  return sliceWindows(starts, before, 1);
}

/**
 * Seconds until each of `slices` is due whole: until its last fire time is more than `retentionS`
 * before `now` (null: the database's clock); 0 or less: due.
 */
export async function occurrenceSliceDueIn(
  db: Queryable,
  slices: readonly OccurrenceSlice[],
  now: Date | null,
  retentionS: number,
): Promise<number[]> {
  const { rows } = await db.query<{ s: number }>(
    `SELECT extract(epoch FROM t + make_interval(secs => $3) - coalesce($2::timestamptz, clock_timestamp()))::float8 AS s
       FROM unnest($1::timestamptz[]) WITH ORDINALITY AS u (t, i) ORDER BY i`,
    [slices.map((s) => s.to), now, retentionS],
  );
  return rows.map((r) => r.s);
}

export type OccurrenceSliceEnsure =
  { attached: OccurrenceSlice[]; reason: null } | { attached: OccurrenceSlice[]; reason: 'fenced' | 'busy' };

/**
 * Attaches slices of `spanS` until the last one ends at least two spans after `now` (null: the
 * database's clock). A slice starts where the last one ends, or after the newest row of the default
 * partition (fire times that outran the slices stay there), or at the span `now` falls in when the
 * clock is further on (a role that was stopped for days attaches no slices for days gone). ATTACH
 * locks the ledger only against other schema changes, so the scheduler writes on; it waits at most
 * `lockTimeoutMs` for the default partition, which it checks for rows in the new range.
 */
export async function occurrenceSliceEnsure(
  pool: Pool,
  fence: Fence,
  now: Date | null,
  spanS: number,
  lockTimeoutMs = 2_000,
): Promise<OccurrenceSliceEnsure> {
  const attached: OccurrenceSlice[] = [];
  for (;;) {
    const { rows } = await pool.query<{ from: Date; to: Date; ahead: boolean }>(
      `WITH t AS (SELECT coalesce($1::timestamptz, clock_timestamp()) AS now, make_interval(secs => $2) AS span),
            s AS (
              SELECT greatest($3::timestamptz,
                              (SELECT date_trunc('second', max(fire_at)) + interval '1 second' FROM ${OCCURRENCE_DEFAULT_SLICE}),
                              date_bin(t.span, t.now, timestamptz '2000-01-01 00:00:00+00')) AS from, t.now, t.span
                FROM t)
       SELECT s.from, s.from + s.span AS to, $3::timestamptz >= s.now + 2 * s.span AS ahead FROM s`,
      [now, spanS, (await occurrenceSliceList(pool)).at(-1)?.to ?? new Date(0)],
    );
    const row = rows[0];
    if (row === undefined) throw new Error('occurrenceSliceEnsure read no row');
    if (row.ahead) return { attached, reason: null };
    const slice = { name: sliceName(row.from), from: row.from, to: row.to };
    const r = await partitionChangeFenced(pool, fence, lockTimeoutMs, (client) =>
      occurrenceSliceAttach(client, slice),
    );
    // 23514 (busy too): a fire time in the new range went to the default partition after the read.
    if (r === 'fenced' || r === 'busy') return { attached, reason: r };
    attached.push(slice);
  }
}

/** Creates `slice` and attaches it to the ledger, in the caller's transaction. */
export async function occurrenceSliceAttach(db: Queryable, slice: OccurrenceSlice): Promise<void> {
  await db.query(
    `CREATE TABLE "${slice.name}" (LIKE occurrences INCLUDING DEFAULTS INCLUDING CONSTRAINTS)
       WITH (autovacuum_vacuum_scale_factor = 0.01, autovacuum_analyze_scale_factor = 0.02,
             vacuum_index_cleanup = on)`,
  );
  await db.query(
    `ALTER TABLE occurrences ATTACH PARTITION "${slice.name}"
       FOR VALUES FROM (${slice.from === null ? 'MINVALUE' : `'${slice.from.toISOString()}'`}) TO ('${slice.to.toISOString()}')`,
  );
}

function sliceName(from: Date): string {
  return `occurrences_${from.toISOString().replace(/[-:]/g, '').replace(/\..*$/, '').toLowerCase()}`;
}

export interface OccurrenceSliceDrop {
  /** False when the fence no longer held: nothing changed. */
  fenced: boolean;
  /** Whether the slice is gone; false when it was not due, not summed to its end yet, or the ledger was busy. */
  dropped: boolean;
}

export interface OccurrenceSliceSumStep {
  /** False when the fence no longer held: nothing changed. */
  fenced: boolean;
  /** Rows this step added to the rollups; null when the slice was not due, not the oldest, or busy. */
  rows: number | null;
  /** Whether every row of the slice is in the rollups now (occurrenceSliceDropDue's turn). */
  summed: boolean;
  /** With rows: the seconds of fire time this step summed, and those of the slice left after it. */
  span?: { stepS: number; leftS: number };
}

/** The trigger a slice being summed carries (migration 0038). */
const SUMMED_TRIGGER = 'occurrences_summed';

/**
 * One step of summing a due `slice`, the oldest, into the lateness rollups: in a transaction fenced
 * by the maintenance lease, the rows that fired from where the last step stopped on, for about
 * `stepRows` rows (a span of fire time sized by the slice's row estimate; all of it when the slice
 * has none), are added to the unlogged partials (0039), per minute and per day. Each whole minute
 * the steps have passed goes from the partials into occurrence_minutes, and occurrence_summed.before
 * moves to it: from then on the per-minute readers leave those rows out of the ledger, so each
 * occurrence counts once. The days wait for the drop (dayPartialsFold). The slice is locked
 * against writes for the step (only a backfill of fire times that old writes there); a backfill of a
 * fire time the steps have passed adds itself (0039's trigger, created by the first step). Steps are
 * short and the caller paces them; one statement over a day took 2.4-3.9 s for 1.25 million rows.
 */
export async function occurrenceSliceSumStep(
  pool: Pool,
  fence: Fence,
  slice: OccurrenceSlice,
  now: Date | null,
  retentionS: number,
  stepRows = OCCURRENCE_SUM_STEP_ROWS,
  lockTimeoutMs = 200,
): Promise<OccurrenceSliceSumStep> {
  if (!(await sliceDue(pool, slice, now, retentionS))) return { fenced: true, rows: null, summed: false };
  const r = await partitionChangeFenced(pool, fence, lockTimeoutMs, async (client) => {
    // `before` is one value for every slice: a step may only move it through the oldest slice.
    if ((await occurrenceSliceList(client))[0]?.name !== slice.name) return null;
    const { rows } = await client.query<{ trigger: boolean }>(
      `SELECT EXISTS (SELECT 1 FROM pg_trigger WHERE tgrelid = $1::regclass AND tgname = $2) AS trigger`,
      [`"${slice.name}"`, SUMMED_TRIGGER],
    );
    if (rows[0]?.trigger !== true) {
      await client.query(
        `CREATE TRIGGER ${SUMMED_TRIGGER} AFTER INSERT ON "${slice.name}"
           FOR EACH ROW EXECUTE FUNCTION tidemark_occurrence_summed_insert()`,
      );
    }
    await client.query(`LOCK TABLE "${slice.name}" IN SHARE MODE`);
    const held = await partialsHeld(client, slice);
    // The span that holds about stepRows rows at the slice's mean rate (its row estimate over its
    // span; the first slice's span starts at its oldest row by id). The estimate is the planner's:
    // rows per page at the last analyze times the pages it has now, so rows added since count. One
    // that crosses a minute ends on the last minute it crosses; one inside a minute leaves that minute
    // in the partials until the step that ends it. The bounds go back as text, read by the same
    // session: '-infinity' has no Date.
    const { rows: span } = await client.query<{
      to: string;
      done: boolean;
      last: boolean;
      minute: boolean;
      bounded: boolean;
      step_s: number;
      left_s: number;
    }>(
      `SELECT b.to::text AS to, $5::timestamptz >= $2 AS done, b.to >= $2 AS last,
              b.to >= $2 OR b.to = date_trunc('minute', b.to) AS minute, b.bounded,
              greatest(0, date_part('epoch', b.to - b.start))::float8 AS step_s,
              greatest(0, date_part('epoch', $2::timestamptz - b.to))::float8 AS left_s
         FROM (SELECT e.n > $3 AS bounded, greatest($5::timestamptz, o.origin) AS start, least($2::timestamptz,
                            CASE WHEN date_trunc('minute', r.raw) > $5::timestamptz THEN date_trunc('minute', r.raw)
                                 ELSE r.raw END) AS to
                 FROM pg_class c,
                      LATERAL (SELECT CASE WHEN c.relpages > 0
                                           THEN c.reltuples / c.relpages
                                                * (pg_relation_size(c.oid) / current_setting('block_size')::float8)
                                           ELSE c.reltuples END AS n) e,
                      LATERAL (SELECT origin, date_part('epoch', $2::timestamptz - origin) AS span_s
                                 -- OFFSET 0: origin computed once; each use of it planned its own copy of
                                 -- the oldest-row read (26 InitPlans: 1.6-1.9 ms a statement, 0.6-0.9 without).
                                 FROM (SELECT coalesce($4::timestamptz,
                                                       (SELECT fire_at FROM "${slice.name}" ORDER BY id LIMIT 1),
                                                       $2::timestamptz) AS origin OFFSET 0) x) o,
                      LATERAL (SELECT greatest($5::timestamptz, o.origin) + make_interval(secs =>
                                 CASE WHEN e.n > $3 THEN $3 * o.span_s / e.n ELSE o.span_s END) AS raw) r
                WHERE c.oid = $1::regclass) b`,
      [`"${slice.name}"`, slice.to, stepRows, slice.from, held.from],
    );
    const step = span[0];
    if (step === undefined) throw new Error('the step read no span');
    if (step.done) return { rows: 0, summed: true, span: { stepS: 0, leftS: 0 } };
    const n = await sliceRollup(
      client,
      slice.name,
      { from: held.from, to: step.to },
      held.days,
      step.bounded,
    );
    await client.query(`UPDATE occurrence_partials_span SET upto = $1`, [step.to]);
    if (step.minute) {
      // Whole minutes from `before` to here: out of the partials into the rollup, out of the
      // ledger's side for the readers.
      await client.query(
        `WITH gone AS (DELETE FROM occurrence_minute_partials RETURNING *),
              minutes AS (${rollupUpsert(
                'occurrence_minutes',
                'minute, tenant_id',
                false,
                `SELECT minute, tenant_id, ${ROLLUP_COLUMNS.join(', ')}, lag_max_s FROM gone`,
              )})
         UPDATE occurrence_summed SET before = $1`,
        [step.to],
      );
    }
    return { rows: n, summed: step.last, span: { stepS: step.step_s, leftS: step.left_s } };
  });
  if (r === 'fenced') return { fenced: false, rows: null, summed: false };
  if (r === 'busy' || r === null) return { fenced: true, rows: null, summed: false };
  return { fenced: true, ...r };
}

/**
 * Drops `slice` once it is due and summed to its end (occurrenceSliceSumStep): in a transaction
 * fenced by the maintenance lease it is locked against writes, its days are added to
 * occurrence_days (dayPartialsFold), and it is detached, then dropped once the ledger is let go.
 * DETACH takes the whole ledger for itself for a moment: each try waits at most `lockTimeoutMs`
 * (the scheduler's writes queue behind the wait), and once the tries are spent
 * (partitionsLockForDetach) the drop waits for the next pass.
 */
export async function occurrenceSliceDropDue(
  pool: Pool,
  fence: Fence,
  slice: OccurrenceSlice,
  now: Date | null,
  retentionS: number,
  lockTimeoutMs = 200,
): Promise<OccurrenceSliceDrop> {
  if (!(await sliceDue(pool, slice, now, retentionS))) return { fenced: true, dropped: false };
  const r = await partitionChangeFenced(pool, fence, lockTimeoutMs, async (client) => {
    await client.query(`LOCK TABLE "${slice.name}" IN SHARE MODE`);
    const { rows } = await client.query<{ summed: boolean }>(
      `SELECT before >= $1::timestamptz AS summed FROM occurrence_summed`,
      [slice.to],
    );
    if (rows[0]?.summed !== true) return false;
    await dayPartialsFold(client, slice);
    await partitionsLockForDetach(client, 'occurrences', [slice.name], lockTimeoutMs);
    await partitionDetach(client, 'occurrences', slice.name);
    return true;
  });
  if (r === 'fenced') return { fenced: false, dropped: false };
  if (r === true) await partitionsDetachedDrop(pool);
  return { fenced: true, dropped: r === true };
}

/** Whether every fire time in `slice` is more than `retentionS` before `now` (null: the database's clock). */
async function sliceDue(
  pool: Pool,
  slice: OccurrenceSlice,
  now: Date | null,
  retentionS: number,
): Promise<boolean> {
  const { rows } = await pool.query<{ due: boolean }>(
    `SELECT $1::timestamptz <= coalesce($2::timestamptz, clock_timestamp()) - make_interval(secs => $3) AS due`,
    [slice.to, now, retentionS],
  );
  return rows[0]?.due === true;
}

/**
 * Where this step starts and whether it adds to the day partials (0039). The partials go on when
 * they hold this slice from `before` on (`from`: where they stop); otherwise (another slice's, or a
 * crash emptied them) they are cleared and start at `before`, with days only when nothing has been
 * summed past days_before (the slice's first step); else the drop reads the slice's days from its
 * rows (dayPartialsFold).
 */
async function partialsHeld(
  client: PoolClient,
  slice: OccurrenceSlice,
): Promise<{ from: string; days: boolean }> {
  const { rows } = await client.query<{ held: boolean; from: string; days: boolean; fresh: boolean }>(
    `SELECT p.upto IS NOT NULL AS held, coalesce(p.upto, m.before)::text AS from,
            coalesce(p.days_from = m.days_before, false) AS days, m.days_before = m.before AS fresh
       FROM occurrence_summed m
       LEFT JOIN occurrence_partials_span p
         ON p.slice = $1 AND p.upto >= m.before AND p.upto <= m.before + interval '1 minute'
        FOR NO KEY UPDATE OF m`,
    [slice.name],
  );
  const row = rows[0];
  if (row === undefined) throw new Error('occurrence_summed has no row');
  if (row.held) return { from: row.from, days: row.days };
  await client.query('DELETE FROM occurrence_minute_partials');
  await client.query('DELETE FROM occurrence_day_partials');
  await client.query('DELETE FROM occurrence_partials_span');
  // Unheld, `from` is `before`; fresh, days_before is the same time.
  await client.query(
    `INSERT INTO occurrence_partials_span (slice, upto, days_from) VALUES ($1, $2::timestamptz, $3::timestamptz)`,
    [slice.name, row.from, row.fresh ? row.from : null],
  );
  return { from: row.from, days: row.fresh };
}

/**
 * In the drop's transaction: the slice's days go into occurrence_days, from the partials when they
 * hold it whole, else (a crash emptied them) from its rows since days_before in one statement.
 */
async function dayPartialsFold(client: PoolClient, slice: OccurrenceSlice): Promise<void> {
  const { rows } = await client.query<{ held: boolean }>(
    `SELECT EXISTS (SELECT 1 FROM occurrence_partials_span p, occurrence_summed m
                     WHERE p.slice = $1 AND p.days_from = m.days_before AND p.upto >= $2) AS held`,
    [slice.name, slice.to],
  );
  const sums =
    rows[0]?.held === true
      ? `SELECT schedule_id, day, tenant_id, ${ROLLUP_COLUMNS.join(', ')}, lag_max_s FROM occurrence_day_partials`
      : rollupSums(
          `(${sliceRows(slice.name, 'o.fire_at >= (SELECT days_before FROM occurrence_summed)')}) o`,
          "schedule_id, date_trunc('day', fire_at, 'UTC')",
          'min(tenant_id)',
        );
  await client.query(
    `WITH days AS (${rollupUpsert('occurrence_days', 'schedule_id, day', true, sums)}) SELECT 1`,
  );
  await client.query('DELETE FROM occurrence_day_partials');
  await client.query('DELETE FROM occurrence_partials_span');
  await client.query(`UPDATE occurrence_summed SET days_before = greatest(days_before, $1)`, [slice.to]);
}

/**
 * The rows of slice `name` matching `where` (alias o) as rollupSums reads them: their tenant,
 * whether the schedule enqueued them, their lateness.
 */
function sliceRows(name: string, where: string): string {
  return `SELECT o.schedule_id, o.fire_at, o.state, coalesce(s.tenant_id, '') AS tenant_id,
                 (o.state = 'enqueued' AND o.source = 'schedule' AND NOT o.backfill) AS scheduled,
                 -- date_part in float8, not extract's numeric: a third less time here, the same
                 -- value for an interval of hours and seconds.
                 greatest(0, date_part('epoch', o.materialised_at - o.fire_at)) AS lag
            FROM "${name}" o LEFT JOIN schedules s ON s.id = o.schedule_id
           WHERE ${where}`;
}

/**
 * Adds the slice's rows that fired in [span.from, span.to) to occurrence_minute_partials and, with
 * `days`, to occurrence_day_partials; returns how many. `bounded`: the slice's row estimate sized the
 * span, so the rows are read and joined to their schedules once, held in memory for both rollups (a
 * third off the statement: 2,200 rows in 14-18 ms against 19-26). Otherwise the span may be the whole
 * slice and each rollup reads it on its own: held, 1.25 million rows went to 80 MB of temporary
 * files, whose writeback stalled the claim path's commits for up to 120 ms. Aggregations by hash, so
 * memory stays that of the groups.
 */
async function sliceRollup(
  client: PoolClient,
  name: string,
  span: { from: string; to: string },
  days: boolean,
  bounded: boolean,
): Promise<number> {
  const { rows } = await client.query<{ n: number | null }>(
    `WITH o AS ${bounded ? '' : 'NOT '}MATERIALIZED (
       ${sliceRows(name, 'o.fire_at >= $1::timestamptz AND o.fire_at < $2::timestamptz')}
     ), minute_sums AS (
       ${rollupSums('o', "date_trunc('minute', fire_at), tenant_id")}
     ), minutes AS (
       ${rollupUpsert('occurrence_minute_partials', 'minute, tenant_id', false, 'SELECT * FROM minute_sums')}
     )${
       days
         ? `, days AS (
       ${rollupUpsert('occurrence_day_partials', 'schedule_id, day', true, rollupSums('o', "schedule_id, date_trunc('day', fire_at, 'UTC')", 'min(tenant_id)'))}
     )`
         : ''
     }
     -- Every state is counted in one of the four: the rows summed, without another read of them.
     SELECT (SELECT sum(scheduled + triggered + skipped + missed) FROM minute_sums)::float8 AS n`,
    [span.from, span.to],
  );
  return rows[0]?.n ?? 0;
}
