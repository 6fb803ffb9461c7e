/**
 * The occurrence ledger: one row per (schedule, fire time) the scheduler decided on, whatever its
 * fate. occurrenceMaterialise is the only way rows get in, for the leader and for trigger-now alike.
 *
 * It is a single statement, so it is one transaction with nothing in between to hang: a leader cut
 * off from the database mid-write has at most this one statement in flight, and when it finally
 * arrives its epoch condition is evaluated then, against the lease as it is then.
 *
 * The job rows for enqueued occurrences are inserted here too, with the same columns as the worker
 * layer's enqueue (src/store/jobs.ts, issue 5); the two are to be unified into one statement there.
 */
import { arrayElement, arrayLiteral } from './array-literal.ts';
import { jobEndedCountsAdd } from './job-ended-counts.ts';
import { occurrenceSliceWindows } from './occurrence-slices.ts';
import type { Queryable } from './pool.ts';
import type { SliceWindow } from './slice-windows.ts';

export type OccurrenceState = 'enqueued' | 'skipped' | 'missed';
/**
 * schedule: decided by the scheduler; trigger: trigger-now; backfill: a fire time in a past range an
 * operator asked for (stored as a scheduled occurrence, so the unique key holds against the
 * scheduler's, with the `backfill` flag: its lateness is the range's age, not scheduler lag).
 */
export type OccurrenceSource = 'schedule' | 'trigger' | 'backfill';

/** Read-only once made: occurrenceEncodeAhead may have serialised it already. */
export interface OccurrenceInput {
  readonly scheduleId: string;
  /** The schedule version the decision was made under; a row whose schedule has moved on is dropped. */
  readonly version: number;
  readonly fireAt: Date;
  readonly state: OccurrenceState;
  readonly reason: string | null;
  /** When the job may start (fire time + jitter); null unless enqueued. */
  readonly runAt: Date | null;
  /**
   * Stable per occurrence (`occurrence:<schedule>:<fire ISO>`, a backfilled one's too) or unique per
   * trigger; null unless enqueued.
   */
  readonly idempotencyKey: string | null;
  readonly source: OccurrenceSource;
  /** Overlap policy `replace`: cancel the schedule's queued jobs and ask its running ones to stop. */
  readonly cancelPrevious: boolean;
}

/** Read-only once made, as OccurrenceInput. */
export interface ScheduleAdvance {
  readonly scheduleId: string;
  readonly version: number;
  readonly nextFireAt: Date | null;
  readonly lastFireAt: Date;
}

// Each input's values as array-literal elements, in the statement's parameter order, made once per
// object: by occurrenceEncodeAhead before the fire time, or else when the statement is sent.
const encodedItems = new WeakMap<OccurrenceInput, readonly string[]>();
const encodedAdvances = new WeakMap<ScheduleAdvance, readonly string[]>();

function encodeItem(i: OccurrenceInput): readonly string[] {
  let e = encodedItems.get(i);
  if (e === undefined) {
    e = [
      arrayElement(i.scheduleId),
      arrayElement(i.version),
      arrayElement(i.fireAt),
      arrayElement(i.state),
      arrayElement(i.reason),
      arrayElement(i.runAt),
      arrayElement(i.idempotencyKey),
      arrayElement(i.source),
      arrayElement(i.cancelPrevious),
    ];
    encodedItems.set(i, e);
  }
  return e;
}

function encodeAdvance(a: ScheduleAdvance): readonly string[] {
  let e = encodedAdvances.get(a);
  if (e === undefined) {
    e = [
      arrayElement(a.scheduleId),
      arrayElement(a.version),
      arrayElement(a.nextFireAt),
      arrayElement(a.lastFireAt),
    ];
    encodedAdvances.set(a, e);
  }
  return e;
}

/** One array literal per column of the encoded rows. */
function columns(rows: readonly (readonly string[])[], width: number): string[] {
  const out: string[] = [];
  for (let c = 0; c < width; c++) out.push(arrayLiteral(rows.map((r) => r[c] ?? 'NULL')));
  return out;
}

/**
 * Serialises these inputs' values now, so that an occurrenceMaterialise of the same objects later
 * only joins strings: the leader does it when planning ahead of a fire time, taking the conversion
 * (~30–140 ms per 2,500 rows on 2 loaded cores, with pg's own) out of the time between the fire time
 * and the write.
 */
export function occurrenceEncodeAhead(
  items: readonly OccurrenceInput[],
  advances: readonly ScheduleAdvance[],
): void {
  for (const i of items) encodeItem(i);
  for (const a of advances) encodeAdvance(a);
}

/** Who may write: the lease term that must still hold when the statement runs; null writes unfenced. */
export interface Fence {
  lease: string;
  holder: string;
  epoch: number;
}

export interface MaterialiseResult {
  /** The fence held (always true when unfenced). When false nothing was written. */
  fenced: boolean;
  /** Inputs whose schedule still exists at the given version (and is not paused, for scheduled ones). */
  current: number;
  /** Occurrence rows written; current − inserted lost to the unique key (conflicts). */
  inserted: number;
  jobs: number;
  advanced: number;
  /** Ids of the jobs inserted, in no particular order. */
  jobIds: number[];
}

export async function occurrenceMaterialise(
  db: Queryable,
  fence: Fence | null,
  items: OccurrenceInput[],
  advances: ScheduleAdvance[],
): Promise<MaterialiseResult> {
  const { rows } = await db.query<{
    fenced: boolean;
    current: number;
    inserted: number;
    jobs: number;
    advanced: number;
    job_ids: (number | string)[];
  }>({
    name: 'occurrenceMaterialise',
    text: `WITH fence AS (
             -- FOR KEY SHARE: a standby's leaseAcquire changes the epoch (a key column, 0009) and so
             -- waits until this statement commits; the epoch cannot change between this check and the
             -- writes below. Our own renewals change only the expiry and pass.
             SELECT epoch FROM leases
              WHERE name = $1 AND holder = $2 AND epoch = $3 AND expires_at > clock_timestamp()
              FOR KEY SHARE
           ), allowed AS (
             SELECT epoch FROM fence
             UNION ALL
             SELECT NULL::bigint WHERE $1::text IS NULL
           ), input AS (
             SELECT i.*, s.queue, s.kind, s.tenant_id, s.payload, s.priority, s.max_attempts, s.timeout_ms,
                    s.overlap_policy, a.epoch,
                    -- A backfilled occurrence is stored as a scheduled one (one unique key for both).
                    CASE WHEN i.source = 'backfill' THEN 'schedule' ELSE i.source END AS stored_source
               FROM unnest($4::uuid[], $5::integer[], $6::timestamptz[], $7::text[], $8::text[],
                           $9::timestamptz[], $10::text[], $11::text[], $12::boolean[])
                    AS i(schedule_id, version, fire_at, state, reason, run_at, idempotency_key, source, cancel_previous)
               -- id = ANY(ARRAY(subquery)): the planner cannot see the array's size, so it reads the
               -- schedules through the primary key. Joined on the unnest, or on ANY($4) with its
               -- 1,000 elements visible, it chose a sequential scan of the whole table (EXPLAIN at
               -- 30,000 schedules: 27 ms per batch, growing with the table).
               JOIN schedules s ON s.id = ANY(ARRAY(SELECT unnest($4::uuid[])))
                               AND s.id = i.schedule_id AND s.version = i.version
                               -- Trigger-now and backfill are asked for by a person: a pause does not stop them.
                               AND (NOT s.paused OR i.source <> 'schedule')
              CROSS JOIN allowed a
           ), occ AS (
             INSERT INTO occurrences (schedule_id, fire_at, state, materialised_at, epoch, job_id, reason, source,
                                      schedule_version, backfill)
             SELECT schedule_id, fire_at, state, clock_timestamp(), epoch,
                    -- The job id is drawn here so the ledger row can point at the job inserted below;
                    -- the foreign key is checked at the end of the statement, when both exist. The
                    -- sequence by name: pg_get_serial_sequence() is evaluated per row and cost ~25 ms
                    -- per 2,500 rows (EXPLAIN ANALYZE), all of it between the fire time and the write.
                    CASE WHEN state = 'enqueued' THEN nextval('jobs_id_seq') END,
                    reason, stored_source, version, source = 'backfill'
               FROM input
             ORDER BY schedule_id, fire_at
             ON CONFLICT DO NOTHING
             RETURNING schedule_id, fire_at, source, job_id, state
           ), rolled AS (
             -- Trigger-now and backfill are the only writers that reach a minute the lateness rollup
             -- holds (a roll waits for every schedule's next fire time), and add themselves to it.
             -- FOR SHARE: a roll running meanwhile commits first and this statement sees where it
             -- ended (its rows are not in it), or the roll waits for this one and counts them itself.
             SELECT lag_since, lag_upto FROM history_rolled
              WHERE EXISTS (SELECT 1 FROM input WHERE source <> 'schedule')
              FOR SHARE
           ), rolled_add AS (
             INSERT INTO lag_minutes AS m (minute, tenant_id, scheduled, p50_s, p99_s, triggered, skipped, missed)
             SELECT date_trunc('minute', o.fire_at), t.tenant_id, 0, 0, 0, count(*) FILTER (WHERE o.state = 'enqueued'),
                    count(*) FILTER (WHERE o.state = 'skipped'), count(*) FILTER (WHERE o.state = 'missed')
               FROM occ o
               JOIN input i ON i.schedule_id = o.schedule_id AND i.fire_at = o.fire_at AND i.stored_source = o.source
              CROSS JOIN rolled r
              CROSS JOIN LATERAL (VALUES (i.tenant_id), ('')) t (tenant_id)
              WHERE i.source <> 'schedule' AND o.fire_at >= r.lag_since AND o.fire_at < r.lag_upto
              GROUP BY 1, 2
             ON CONFLICT (minute, tenant_id) DO UPDATE
               SET triggered = m.triggered + EXCLUDED.triggered, skipped = m.skipped + EXCLUDED.skipped,
                   missed = m.missed + EXCLUDED.missed
           ), job AS (
             -- The key is Tidemark's and unique by the occurrence's own (store/job-key.ts), so it is
             -- not held in job_keys: a row there per occurrence would be 43 million a day at 500/s.
             INSERT INTO jobs (id, queue, kind, tenant_id, payload, priority, state, run_at, max_attempts,
                               timeout_ms, idempotency_key, key_generated, schedule_id, after_job_id)
             SELECT o.job_id, i.queue, i.kind, i.tenant_id, i.payload, i.priority,
                    CASE WHEN i.run_at > clock_timestamp() THEN 'scheduled' ELSE 'available' END,
                    i.run_at, COALESCE(i.max_attempts, q.max_attempts, 4), COALESCE(i.timeout_ms, q.timeout_ms),
                    i.idempotency_key, true, i.schedule_id,
                    -- buffer_one: a scheduled occurrence enqueued while the schedule still has a job
                    -- queued, running or awaiting a retry was buffered (decideOverlap); it waits for
                    -- the latest such job, which the claim checks. The statement's snapshot does not
                    -- see the job being inserted here. jobs_schedule_active_idx (0010) serves the lookup.
                    -- Triggered and backfilled runs were asked for by a person and wait for nothing.
                    CASE WHEN i.overlap_policy = 'buffer_one' AND i.source = 'schedule' THEN
                      (SELECT max(p.id) FROM jobs p
                        WHERE p.schedule_id = i.schedule_id
                          AND p.state IN ('scheduled', 'available', 'running', 'failed'))
                    END
               FROM occ o
               JOIN input i ON i.schedule_id = o.schedule_id AND i.fire_at = o.fire_at AND i.stored_source = o.source
               LEFT JOIN queues q ON q.name = i.queue
              WHERE o.job_id IS NOT NULL
             RETURNING id
           ), cancelled AS (
             -- The new job is not visible to this UPDATE (same snapshot), so only earlier ones match.
             -- A job awaiting its retry ('failed') is not running, so it is cancelled outright.
             UPDATE jobs j
                SET state = CASE WHEN j.state = 'running' THEN j.state ELSE 'cancelled' END,
                    finished_at = CASE WHEN j.state = 'running' THEN j.finished_at ELSE clock_timestamp() END,
                    cancel_requested_at = COALESCE(j.cancel_requested_at, clock_timestamp())
              -- ANY(ARRAY(subquery)): the schedules are found once, then their jobs by index. As an
              -- IN (subquery), the planner walked every queued job of every schedule and probed
              -- the input for each: 2.1 s per 1,000-row statement with 20,000 jobs queued (EXPLAIN
              -- ANALYZE), even when no item asked for a cancel.
              WHERE j.schedule_id = ANY (ARRAY(SELECT i.schedule_id FROM input i JOIN occ o
                                                 ON i.schedule_id = o.schedule_id AND i.fire_at = o.fire_at
                                                WHERE i.cancel_previous))
                AND j.state IN ('scheduled', 'available', 'running', 'failed')
             RETURNING j.id, j.queue, j.state
           ), ${jobEndedCountsAdd('cancelled', 1)}, advance AS (
             UPDATE schedules s
                SET next_fire_at = a.next_fire_at,
                    last_fire_at = GREATEST(s.last_fire_at, a.last_fire_at)
               FROM unnest($13::uuid[], $14::integer[], $15::timestamptz[], $16::timestamptz[])
                    AS a(id, version, next_fire_at, last_fire_at)
              WHERE s.id = ANY(ARRAY(SELECT unnest($13::uuid[]))) AND s.id = a.id AND s.version = a.version
                AND EXISTS (SELECT 1 FROM allowed)
             RETURNING s.id
           )
           SELECT EXISTS (SELECT 1 FROM allowed) AS fenced,
                  (SELECT count(*) FROM input)::int AS current,
                  (SELECT count(*) FROM occ)::int AS inserted,
                  (SELECT count(*) FROM job)::int AS jobs,
                  (SELECT count(*) FROM cancelled)::int AS cancelled,
                  (SELECT count(*) FROM advance)::int AS advanced,
                  (SELECT coalesce(array_agg(id), '{}') FROM job) AS job_ids`,
    values: [
      fence?.lease ?? null,
      fence?.holder ?? null,
      fence?.epoch ?? null,
      // $4–$12, then $13–$16, as array literals.
      ...columns(items.map(encodeItem), 9),
      ...columns(advances.map(encodeAdvance), 4),
    ],
  });
  const row = rows[0];
  if (row === undefined) throw new Error('occurrenceMaterialise returned no row');
  return {
    fenced: row.fenced,
    current: row.current,
    inserted: row.inserted,
    jobs: row.jobs,
    advanced: row.advanced,
    jobIds: row.job_ids.map(Number),
  };
}

export interface OccurrenceRow {
  id: number;
  scheduleId: string;
  fireAt: Date;
  state: OccurrenceState;
  source: OccurrenceSource;
  materialisedAt: Date;
  /** materialisedAt − fireAt: how late the scheduler decided on it. */
  lagMs: number;
  epoch: number | null;
  jobId: number | null;
  reason: string | null;
  scheduleVersion: number | null;
}

/**
 * A schedule's ledger, newest first, one keyset page at a time: the ledger's slices a range at a time
 * (occurrenceSliceWindows), newest first, until the page is full. The range's bounds prune the other
 * slices as the statement starts, its cached generic plan too, so they are neither planned nor read.
 */
export async function occurrenceListBySchedule(
  db: Queryable,
  scheduleId: string,
  before: Date | null,
  limit: number,
): Promise<OccurrenceRow[]> {
  const rows: LedgerRow[] = [];
  for (const w of await occurrenceSliceWindows(db, before)) {
    rows.push(...(await ledgerPage(db, scheduleId, w, limit - rows.length)));
    if (rows.length === limit) break;
  }
  return rows.map(ledgerRow);
}

interface LedgerRow {
  id: number;
  schedule_id: string;
  fire_at: Date;
  state: OccurrenceState;
  source: OccurrenceSource;
  materialised_at: Date;
  lag_ms: number;
  epoch: number | null;
  job_id: number | null;
  reason: string | null;
  schedule_version: number | null;
}

/** The newest `limit` occurrences of a schedule that fired in `w`. */
async function ledgerPage(
  db: Queryable,
  scheduleId: string,
  w: SliceWindow<Date>,
  limit: number,
): Promise<LedgerRow[]> {
  const inWindow = `fire_at >= coalesce($2::timestamptz, '-infinity') AND fire_at < coalesce($3::timestamptz, 'infinity')`;
  const { rows } = await db.query<LedgerRow>({
    // Named: planned afresh for each range, a page took three times as long.
    name: 'occurrenceLedgerPage',
    // One branch per source, each the predicate of one of the two partial (schedule_id, fire_at)
    // indexes (0002): a query naming neither can use neither, and read the whole ledger instead.
    text: `SELECT id, schedule_id, fire_at, state, CASE WHEN backfill THEN 'backfill' ELSE source END AS source,
            materialised_at,
            (extract(epoch FROM materialised_at - fire_at) * 1000)::float8 AS lag_ms,
            epoch, job_id, reason, schedule_version
       FROM ((SELECT * FROM occurrences
               WHERE schedule_id = $1 AND source = 'schedule' AND ${inWindow}
               ORDER BY fire_at DESC, id DESC LIMIT $4)
             UNION ALL
             (SELECT * FROM occurrences
               WHERE schedule_id = $1 AND source = 'trigger' AND ${inWindow}
               ORDER BY fire_at DESC, id DESC LIMIT $4)) o
      ORDER BY fire_at DESC, id DESC LIMIT $4`,
    values: [scheduleId, w.from, w.to, limit],
  });
  return rows;
}

function ledgerRow(r: LedgerRow): OccurrenceRow {
  return {
    id: r.id,
    scheduleId: r.schedule_id,
    fireAt: r.fire_at,
    state: r.state,
    source: r.source,
    materialisedAt: r.materialised_at,
    lagMs: r.lag_ms,
    epoch: r.epoch,
    jobId: r.job_id,
    reason: r.reason,
    scheduleVersion: r.schedule_version,
  };
}

/**
 * Of these fire times of a schedule, how many already have their scheduled occurrence, per state:
 * what a backfill of them would leave as it is. Each fire time is one probe of the unique key
 * (occurrences_scheduled_key, 0002).
 */
export async function occurrenceCountAtFireTimes(
  db: Queryable,
  scheduleId: string,
  fireTimes: readonly Date[],
): Promise<Record<OccurrenceState, number>> {
  const counts: Record<OccurrenceState, number> = { enqueued: 0, skipped: 0, missed: 0 };
  if (fireTimes.length === 0) return counts;
  const { rows } = await db.query<{ state: OccurrenceState; n: number }>({
    name: 'occurrenceCountAtFireTimes',
    text: `SELECT state, count(*)::int AS n FROM occurrences
            WHERE schedule_id = $1 AND source = 'schedule' AND fire_at = ANY ($2::timestamptz[])
            GROUP BY state`,
    values: [scheduleId, arrayLiteral(fireTimes.map((t) => arrayElement(t)))],
  });
  for (const r of rows) counts[r.state] = r.n;
  return counts;
}
