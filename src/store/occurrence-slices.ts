/**
 * The slices of the occurrence ledger: its partitions by fire time (0037), a UTC day each. The
 * maintenance role attaches each next slice ahead of the clock (occurrenceSliceEnsure) and drops a
 * slice whole once every row in it is past retention (occurrenceSliceDropDue), where deleting its
 * rows one by one wrote WAL and full-page images on the claim path's commits. Fire times no slice
 * covers go to the default partition, which retention prunes row by row.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Fence } from './occurrences.ts';
import { partitionChangeFenced } from './partition-change.ts';
import type { Pool, PoolClient, Queryable } from './pool.ts';
import { rollupSums, rollupUpsert } from './occurrence-rollup.ts';

/** Seconds per slice: a day, ~43 million rows at the source document's 500 a second. */
export const OCCURRENCE_SLICE_S = 86_400;

/** The partition that takes fire times no slice covers. */
const OCCURRENCE_DEFAULT_SLICE = 'occurrences_default';

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
  spanS: number = OCCURRENCE_SLICE_S,
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
  /** The rows the slice held, summed and dropped; null when it was not due or the ledger was busy. */
  rows: number | null;
}

/** Attempts at the ledger's lock before the drop gives up until the next pass. */
const DETACH_ATTEMPTS = 5;

/**
 * Drops `slice` whole when every fire time in it is more than `retentionS` before `now` (null: the
 * database's clock): in one transaction, fenced by the maintenance lease, its rows' lateness is
 * added to occurrence_minutes and occurrence_days, then it is detached and dropped, so a reader sees
 * each occurrence in the ledger or in the rollups, never both or neither. The slice is locked
 * against writes first (only a backfill of fire times that old writes there), so no row joins it
 * after it is summed. DETACH takes the whole ledger for itself for a moment: each try waits at most
 * `lockTimeoutMs` (the scheduler's writes queue behind the wait), and after DETACH_ATTEMPTS the drop
 * is `busy` and the next pass sums the slice again.
 */
export async function occurrenceSliceDropDue(
  pool: Pool,
  fence: Fence,
  slice: OccurrenceSlice,
  now: Date | null,
  retentionS: number,
  lockTimeoutMs = 200,
): Promise<OccurrenceSliceDrop> {
  const { rows } = await pool.query<{ due: boolean }>(
    `SELECT $1::timestamptz <= coalesce($2::timestamptz, clock_timestamp()) - make_interval(secs => $3) AS due`,
    [slice.to, now, retentionS],
  );
  if (rows[0]?.due !== true) return { fenced: true, rows: null };
  const r = await partitionChangeFenced(pool, fence, lockTimeoutMs, async (client) => {
    await client.query(`LOCK TABLE "${slice.name}" IN SHARE MODE`);
    const n = await sliceRollup(client, slice.name);
    await lockLedger(client);
    await client.query(`ALTER TABLE occurrences DETACH PARTITION "${slice.name}"`);
    await client.query(`DROP TABLE "${slice.name}"`);
    return n;
  });
  if (r === 'fenced') return { fenced: false, rows: null };
  return { fenced: true, rows: r === 'busy' ? null : r };
}

/**
 * Adds every row of the slice to the lateness rollups; returns how many rows it holds. Each rollup
 * reads the slice on its own: a CTE both read would be written out whole first (80 MB of temporary
 * files for 1.25 million rows, whose writeback stalled the claim path's commits for up to 120 ms).
 * One statement of two aggregations by hash, so its memory stays that of the groups.
 */
async function sliceRollup(client: PoolClient, name: string): Promise<number> {
  const { rows } = await client.query<{ n: number | null }>(
    `WITH o AS NOT MATERIALIZED (
       SELECT o.schedule_id, o.fire_at, o.state, coalesce(s.tenant_id, '') AS tenant_id,
              (o.state = 'enqueued' AND o.source = 'schedule' AND NOT o.backfill) AS scheduled,
              -- date_part in float8, not extract's numeric: a third less time here, the same
              -- value for an interval of hours and seconds.
              greatest(0, date_part('epoch', o.materialised_at - o.fire_at)) AS lag
         FROM "${name}" o LEFT JOIN schedules s ON s.id = o.schedule_id
     ), minutes AS (
       ${rollupUpsert('occurrence_minutes', 'minute, tenant_id', false, rollupSums('o', "date_trunc('minute', fire_at), tenant_id"))}
     ), day_sums AS (
       ${rollupSums('o', "schedule_id, date_trunc('day', fire_at, 'UTC')", 'min(tenant_id)')}
     ), days AS (
       ${rollupUpsert('occurrence_days', 'schedule_id, day', true, 'SELECT * FROM day_sums')}
     )
     -- Every state is counted in one of the four: the slice's rows, without a third read of it.
     SELECT (SELECT sum(scheduled + triggered + skipped + missed) FROM day_sums)::float8 AS n`,
  );
  return rows[0]?.n ?? 0;
}

/**
 * Takes the ledger for the DETACH, trying again after a lock timeout: a savepoint keeps the sums
 * made so far in the transaction.
 */
async function lockLedger(client: PoolClient): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    await client.query('SAVEPOINT ledger');
    try {
      await client.query('LOCK TABLE occurrences IN ACCESS EXCLUSIVE MODE');
      return;
    } catch (error) {
      if ((error as { code?: unknown }).code !== '55P03' || attempt >= DETACH_ATTEMPTS) throw error;
      await client.query('ROLLBACK TO SAVEPOINT ledger');
      await sleep(50 * attempt);
    }
  }
}
